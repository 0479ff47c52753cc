"""``python -m jaxrl.plot RUN_DIR... [--out curves.png]``: learning curves and a table.

Examples::

    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x8_*                     # one 8-seed run
    python -m jaxrl.plot runs/dqn_CartPole-v1_s* --metric eval_return     # runs of one seed each
    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x4_sweep_* --out lr.png   # a sweep
    python -m jaxrl.plot runs/a runs/b --x time --smooth ema:0.9 --names DQN,PPO --cmap tab10
    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x8_* --stat mean          # the mean instead

Reads each run's ``config.yaml`` and ``metrics.jsonl``. A *curve* is one seed of one
configuration: a single run, or one member of a ``--seeds``/``--sweep`` run (its rows carry
``seed`` and the swept values). Curves whose configurations are equal up to the seed form
one line: the interquartile mean (IQM) over seeds of ``--metric`` (default
``episode_return``) against env steps, with its 95% stratified-bootstrap band
(``jaxrl.stats.curve_interval``); ``--stat mean`` draws the mean instead. A line of one
run has no band and says so in its legend ("1 run, no interval"). Lines are labelled with
as few of the options that differ between them as tell them apart (e.g. ``lr=3e-4``; the
table below the image names every option that differs).

Options (after RLHive's ``plot_results(x_key, smoothing_fn, run_names, cmap_name,
num_sampled_points)``):

* ``--x step|time|episodes``: the horizontal axis: env steps, wall seconds of the run
  (its ``time`` column), or episodes finished (the running sum of its ``episodes`` column).
* ``--smooth ema:A`` (``s_t = A s_{t-1} + (1 - A) x_t``, ``s_0 = x_0``, ``0 <= A < 1``) or
  ``--smooth window:K`` (the mean of the last ``K`` values, fewer at the start), applied to
  each curve's finite values before curves are aggregated; ``none`` (the default) keeps them.
* ``--points N``: each curve is linearly interpolated (``numpy.interp`` over its finite
  values) onto one grid before the seeds are aggregated: ``N`` evenly spaced points from
  the latest first x to the earliest last x of the line's curves, or by default every x any
  of them logged in that range (runs logged at the same steps keep their values exactly).
* ``--names A,B,...``: line labels, one per line, lines taken in the order their first run
  directory is given (default: the differing options).
* ``--stat iqm|mean``: the statistic over seeds drawn and tabled (default ``iqm``).
* ``--cmap NAME``: a matplotlib colour map for the lines (default: matplotlib's cycle); a
  listed map (``tab10``) gives line ``i`` its ``i``-th colour, any other map evenly spaced
  colours.

An unknown axis, smoothing spec, colour map or a wrong number of names is one line on
stderr and exit code 2, with no image written.

The table gives each line's final performance: for each seed the metric's last value, then
over seeds the statistic drawn (the IQM: the mean of the middle 50%, as
``scipy.stats.trim_mean(x, 0.25)``) with its 95% stratified-bootstrap confidence interval,
as Agarwal et al. 2021 (rliable) recommend; "1 run, no interval" for a line of one seed.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl import stats
from jaxrl.curves import (
    X_AXES,
    check_x,
    common_grid,
    interpolate,
    load_curves,
    parse_smooth,
    smooth,
)
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser

__all__ = [
    *("check_x", "load_curves", "parse_smooth", "smooth"),  # jaxrl.curves'
    *("draw", "final_table", "group_curves", "line_colors", "main", "plot", "short_labels"),
]

STATISTICS = {"iqm": "IQM", "mean": "mean"}  # --stat: what is drawn and tabled over seeds
NAMES_FIRST = ("agent.name", "env.name")  # the options a label tries first
ONE_RUN = "1 run, no interval"


def over_runs(stat: str, values: np.ndarray) -> np.ndarray:
    """``stat`` (``STATISTICS``) of ``values`` ``[..., runs, steps]`` over runs."""
    return stats.iqm(values, axis=-2) if stat == "iqm" else values.mean(axis=-2)


def short_value(value: Any) -> str:
    """An option's value as a legend shows it: ``3e-4``, ``0.001``, ``[64, 64]``, ``dqn``."""
    if isinstance(value, float) and value and not 1e-3 <= abs(value) < 1e5:
        mantissa, _, exponent = f"{value:.3e}".partition("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(list(value) if isinstance(value, tuple) else value)


def differing_options(options: Sequence[dict[str, Any]], swept: Collection[str] = ()) -> list[str]:
    """The options whose values differ between the ``options`` of lines (``run.steps``
    only when nothing else does): names first, then ``swept``, then those every line has,
    then the rest (an agent's own options go with its name)."""
    keys = sorted({k for o in options for k in o})
    varying = [k for k in keys if len({repr(o.get(k)) for o in options}) > 1]
    varying = [k for k in varying if k != "run.steps"] or varying
    partial = lambda k: any(k not in o for o in options)
    return sorted(varying, key=lambda k: (k not in NAMES_FIRST, k not in swept, partial(k), k))


def short_labels(options: Sequence[dict[str, Any]], swept: Collection[str] = ()) -> list[str]:
    """One legend label per line: the fewest of its ``differing_options`` (taken in their
    order, each kept only if it tells apart lines the ones before it did not) as
    ``name=value``, the section dropped where the name is unique (``lr=3e-4``); an agent
    or env name as its value alone (``dqn``)."""
    varying = differing_options(options, swept)
    shown: list[str] = []
    for key in varying:
        told = {tuple(repr(o.get(k)) for k in shown) for o in options}
        if len(told) == len(options):
            break
        split = {tuple(repr(o.get(k)) for k in (*shown, key)) for o in options}
        if len(split) > len(told):
            shown.append(key)
    short = [k.partition(".")[2] for k in shown]
    names = [s if short.count(s) == 1 else k for k, s in zip(shown, short, strict=True)]
    labels = []
    for o in options:
        parts = [
            short_value(o.get(k)) if k in NAMES_FIRST else f"{name}={short_value(o.get(k))}"
            for k, name in zip(shown, names, strict=True)
            if k in o  # an option a line lacks is left out of its label
        ]
        labels.append(", ".join(parts) or f"{o.get('agent.name')} on {o.get('env.name')}")
    return labels


def group_curves(
    curves: list[dict[str, Any]],
    smoothing: tuple[str, float] | None = None,
    points: int | None = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Lines: curves with equal options, labelled by ``short_labels`` and in the order of
    the values of the options that differ (or by ``names``, in the order of each line's
    first run directory), each curve ``smooth``-ed and
    interpolated onto the line's ``common_grid``: ``step`` ``[G]``, ``values`` ``[seeds,
    G]``, ``final`` ``[seeds]`` (each curve's last finite raw value), ``options``."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for curve in curves:
        key = tuple(sorted((k, repr(v)) for k, v in curve["options"].items()))  # a torso
        groups.setdefault(key, []).append(curve)  # spec is a dict: compared by its repr
    swept = {k for c in curves for k in c["swept"]}
    labels = short_labels([members[0]["options"] for members in groups.values()], swept)
    lines = []
    for members, label in zip(groups.values(), labels, strict=True):
        runs_of: dict[Any, str] = {}
        for c in members:
            if c["seed"] in runs_of:
                raise ConfigError(
                    f"seed {c['seed']} of {label} is in two runs ('{runs_of[c['seed']]}' and "
                    f"'{c['run']}'); give one of them (a seed is counted once)"
                )
            runs_of[c["seed"]] = c["run"]
        smoothed = [{**c, "value": smooth(c["value"], smoothing)} for c in members]
        grid = common_grid(smoothed, points)
        values = np.stack([interpolate(c, grid) for c in smoothed])
        finals = np.asarray([_last_finite(c["value"]) for c in members])
        lines.append(
            {
                "label": label,
                "options": members[0]["options"],
                "seeds": sorted(c["seed"] for c in members),
                "step": grid,
                "values": values,
                "final": finals,
                "order": min(c["order"] for c in members),
            }
        )
    if names is None:
        differing = differing_options([line["options"] for line in lines], swept)
        by_value = lambda v: (0, v, "") if isinstance(v, int | float) else (1, 0, repr(v))
        return sorted(lines, key=lambda li: [by_value(li["options"].get(k)) for k in differing])
    if len(names) != len(lines):
        raise ConfigError(
            f"--names gives {len(names)} names for {len(lines)} lines; give one per line: "
            + "; ".join(line["label"] for line in sorted(lines, key=lambda li: li["order"]))
        )
    lines = sorted(lines, key=lambda line: (line["order"], line["label"]))
    return [{**line, "label": name} for line, name in zip(lines, names, strict=True)]


def _last_finite(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else math.nan


def final_table(lines: list[dict[str, Any]], stat: str = "iqm") -> list[dict[str, Any]]:
    """Per line: seeds, and ``stat`` (``STATISTICS``) of the final values with its 95%
    stratified-bootstrap CI (``jaxrl.stats.interval_estimate``; NaN with one seed)."""
    table = []
    for line in lines:
        finals = line["final"][np.isfinite(line["final"])]
        row = {"label": line["label"], "seeds": len(line["seeds"]), "value": math.nan}
        row.update(low=math.nan, high=math.nan)
        if finals.size:
            statistic = lambda x: over_runs(stat, x)[..., 0]  # [reps, runs, 1] -> [reps]
            estimate = stats.interval_estimate(finals, statistic)
            row["value"] = float(estimate.point)
            if finals.size > 1:
                row.update(low=float(estimate.lower), high=float(estimate.upper))
        table.append(row)
    return table


def line_colors(cmap: str | None, n: int) -> list[Any]:
    """``n`` colours from the matplotlib colour map ``cmap`` (None: matplotlib's cycle);
    ConfigError for an unknown map."""
    if cmap is None:
        return [None] * n
    import matplotlib

    if cmap not in matplotlib.colormaps:
        from jaxrl.suggest import did_you_mean

        hint = did_you_mean(cmap, list(matplotlib.colormaps))
        raise ConfigError(
            f"unknown --cmap '{cmap}'{hint}; valid: any matplotlib colour map, e.g. "
            "tab10, viridis, plasma, Set1"
        )
    colormap = matplotlib.colormaps[cmap]
    if isinstance(colormap, matplotlib.colors.ListedColormap) and colormap.N < 256:
        return [colormap(i % colormap.N) for i in range(n)]
    return [colormap(i / max(n - 1, 1)) for i in range(n)]


def draw(
    lines: list[dict[str, Any]],
    metric: str,
    stat: str = "iqm",
    x: str = "step",
    cmap: str | None = None,
) -> Any:
    """A matplotlib figure: each line's ``stat`` over runs (``STATISTICS``) against the
    ``x`` axis (``X_AXES``), with the 95% stratified-bootstrap band of that statistic
    (``jaxrl.stats.curve_interval``) where the line has more than one run; colours from
    ``cmap`` (``line_colors``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = line_colors(cmap, len(lines))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    bands = False
    for line, color in zip(lines, colors, strict=True):
        values = line["values"]
        keep = np.isfinite(values).all(axis=0)
        steps, values = line["step"][keep], values[:, keep]
        if not steps.size:
            continue
        runs = values.shape[0]
        label = f"{line['label']} ({runs} runs)" if runs > 1 else f"{line['label']} ({ONE_RUN})"
        band = stats.curve_interval(values, lambda v: over_runs(stat, v))
        (drawn,) = ax.plot(steps, band.point, label=label, color=color)
        if runs > 1:
            ax.fill_between(
                steps, band.lower, band.upper, color=drawn.get_color(), alpha=0.2, linewidth=0
            )
            bands = True
    ax.set_xlabel(X_AXES[x])
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    what = f"{STATISTICS[stat]} over runs (seeds), 95% stratified-bootstrap CI"
    ax.set_title(what if bands else ONE_RUN if len(lines) == 1 else f"{ONE_RUN} per line")
    fig.tight_layout()
    return fig


def plot(
    lines: list[dict[str, Any]],
    metric: str,
    out: str | Path,
    center: str = "iqm",
    x: str = "step",
    cmap: str | None = None,
) -> None:
    """``draw`` (``center``: the statistic over runs, ``"iqm"`` or ``"mean"``) into ``out``."""
    import matplotlib.pyplot as plt

    fig = draw(lines, metric, center, x, cmap)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def check_out(out: str) -> None:
    """ConfigError unless ``out`` is an image file matplotlib writes, in an existing
    directory (checked before any run is read)."""
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(out)
    if not path.parent.is_dir():
        raise ConfigError(f"--out '{out}': directory '{path.parent}' does not exist")
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in formats:
        raise ConfigError(
            f"--out '{out}': unknown image type '{path.suffix}'; valid: "
            + ", ".join(f".{f}" for f in sorted(formats))
        )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)

    try:
        parser = ArgumentParser(prog="python -m jaxrl.plot", description="Plot learning curves.")
        parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
        parser.add_argument("--out", default="curves.png", help="image file (curves.png)")
        parser.add_argument("--metric", default="episode_return", help="(episode_return)")
        parser.add_argument("--x", default="step", help="step, time or episodes (step)")
        parser.add_argument("--smooth", help="ema:A (0 <= A < 1) or window:K (none)")
        parser.add_argument(
            "--points", type=int, help="interpolate onto N evenly spaced x (default: every x)"
        )
        parser.add_argument("--names", help="line labels, comma-separated, one per line")
        parser.add_argument("--cmap", help="matplotlib colour map, e.g. tab10, viridis")
        parser.add_argument(
            "--stat", default="iqm", choices=list(STATISTICS), help="over seeds (iqm)"
        )
        args = parser.parse_args(argv)
        check_out(args.out)
        check_x(args.x)
        smoothing = parse_smooth(args.smooth)
        if args.points is not None and args.points < 1:
            raise ConfigError(f"--points must be >= 1, got {args.points}")
        line_colors(args.cmap, 1)
        names = None if args.names is None else [n.strip() for n in args.names.split(",")]
        curves = load_curves(args.run_dirs, args.metric, args.x)
        lines = group_curves(curves, smoothing, args.points, names)
        plot(lines, args.metric, args.out, args.stat, args.x, args.cmap)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_table(lines, args.metric, args.stat)
    print(f"curves: {args.out}")
    return 0


def print_table(lines: list[dict[str, Any]], metric: str, stat: str) -> None:
    """The ``final_table`` on stdout, and every option that differs between the lines."""
    fmt = lambda x: "-" if math.isnan(x) else f"{x:.1f}"
    table = final_table(lines, stat)
    width = max(len(r["label"]) for r in table)
    print(f"final {metric}: {STATISTICS[stat]} over runs [95% stratified-bootstrap CI]")
    for row in table:
        value = f"{STATISTICS[stat]} {fmt(row['value'])}"
        if row["seeds"] == 1:
            print(f"  {row['label']:<{width}}  {value}  ({ONE_RUN})")
        else:
            interval = f"[{fmt(row['low'])}, {fmt(row['high'])}]"
            print(f"  {row['label']:<{width}}  {row['seeds']} runs  {value} {interval}")
    differing = differing_options([line["options"] for line in lines])
    if len(lines) > 1 and differing:
        print(f"options that differ between the lines: {', '.join(differing)}")


if __name__ == "__main__":
    sys.exit(main())
