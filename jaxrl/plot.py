"""``python -m jaxrl.plot RUN_DIR... [--out curves.png]``: learning curves and a table.

Examples::

    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x8_*                     # one 8-seed run
    python -m jaxrl.plot runs/dqn_CartPole-v1_s* --metric eval_return     # runs of one seed each
    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x4_sweep_* --out lr.png   # a sweep
    python -m jaxrl.plot runs/a runs/b --x time --smooth ema:0.9 --names DQN,PPO --cmap tab10

Reads each run's ``config.yaml`` and ``metrics.jsonl``. A *curve* is one seed of one
configuration: a single run, or one member of a ``--seeds``/``--sweep`` run (its rows carry
``seed`` and the swept values). Curves whose configurations are equal up to the seed form
one line: the mean over seeds of ``--metric`` (default ``episode_return``) against env
steps, with a 95% percentile-bootstrap confidence band over seeds. Lines are labelled with
the options that differ between them (e.g. ``agent.lr=0.001``).

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
* ``--cmap NAME``: a matplotlib colour map for the lines (default: matplotlib's cycle); a
  listed map (``tab10``) gives line ``i`` its ``i``-th colour, any other map evenly spaced
  colours.

An unknown axis, smoothing spec, colour map or a wrong number of names is one line on
stderr and exit code 2, with no image written.

The table gives each line's final performance: for each seed the metric's last value, then
over seeds the interquartile mean (IQM: the mean of the middle 50%, as
``scipy.stats.trim_mean(x, 0.25)``) with a 95% bootstrap confidence interval, as Agarwal et
al. 2021 (rliable) recommend, and the mean.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from jaxrl.types import ConfigError

BOOTSTRAP_SAMPLES = 2000
X_AXES = {"step": "environment steps", "time": "wall time (s)", "episodes": "episodes"}


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: sort, drop ``int(0.25 n)`` values at each end,
    average the rest (``scipy.stats.trim_mean(x, 0.25)``)."""
    x = np.sort(np.asarray(x, np.float64), axis=axis)
    n = x.shape[axis]
    cut = int(0.25 * n)
    return np.take(x, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


def bootstrap_ci(
    values: np.ndarray, statistic=np.mean, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile-bootstrap interval of ``statistic`` over seeds.

    ``values``: ``[seeds, ...]``. Resamples the seeds with replacement ``samples`` times
    (``numpy.random.default_rng(seed)``), applies ``statistic(resample, axis=0)`` and returns
    the 2.5th and 97.5th percentiles, each of shape ``values.shape[1:]``.
    """
    values = np.asarray(values, np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, values.shape[0], size=(samples, values.shape[0]))
    stats = np.stack([statistic(values[i], axis=0) for i in idx])
    return np.percentile(stats, 2.5, axis=0), np.percentile(stats, 97.5, axis=0)


def _flatten(cfg: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for section in ("agent", "env", "run"):
        for key, value in (cfg.get(section) or {}).items():
            out[f"{section}.{key}"] = tuple(value) if isinstance(value, list) else value
    return out


def load_curves(
    run_dirs: Sequence[str | Path], metric: str, x: str = "step"
) -> list[dict[str, Any]]:
    """One dict per curve: ``options`` (config without the seed, plus swept values),
    ``seed``, ``run``, ``order`` (index of its run directory in ``run_dirs``), ``step``
    ``[T]`` (the ``x`` axis: ``step``, ``time`` or the running sum of ``episodes``) and
    ``value`` ``[T]`` (NaN where the metric is missing)."""
    check_x(x)
    curves: dict[tuple, dict[str, Any]] = {}
    for order, run_dir in enumerate(map(Path, run_dirs)):
        metrics, config = run_dir / "metrics.jsonl", run_dir / "config.yaml"
        if not metrics.is_file() or not config.is_file():
            raise ConfigError(f"'{run_dir}' is not a run directory (no metrics.jsonl/config.yaml)")
        options = _flatten(yaml.safe_load(config.read_text()) or {})
        default_seed = options.pop("run.seed", 0)
        for line in metrics.read_text().splitlines():
            row = json.loads(line)
            if metric not in row:
                raise ConfigError(
                    f"'{run_dir}' has no metric '{metric}'; it has: "
                    f"{', '.join(k for k in row if k not in ('time', 'sps'))}"
                )
            swept = {k: v for k, v in row.items() if k.startswith("agent.")}
            seed = row.get("seed", default_seed)
            key = (str(run_dir), seed, tuple(sorted(swept.items())))
            curve = curves.setdefault(
                key,
                {
                    "options": {**options, **swept},
                    "seed": seed,
                    "run": str(run_dir),
                    "order": order,
                    "step": [],
                    "value": [],
                },
            )
            if x not in row:
                raise ConfigError(f"'{run_dir}' has no '{x}' column for --x {x}")
            curve["step"].append(row[x])
            value = row[metric]
            curve["value"].append(math.nan if value is None else float(value))
    out = [
        {**c, "step": np.asarray(c["step"], np.float64), "value": np.asarray(c["value"])}
        for c in curves.values()
    ]
    if x == "episodes":
        out = [{**c, "step": np.cumsum(c["step"])} for c in out]
    return out


def check_x(x: str) -> str:
    """ConfigError unless ``x`` is a valid ``--x`` axis."""
    if x not in X_AXES:
        raise ConfigError(f"unknown --x '{x}'; valid: {', '.join(X_AXES)}")
    return x


def parse_smooth(spec: str | None) -> tuple[str, float] | None:
    """``--smooth``: ``"ema:A"`` (0 <= A < 1) -> ("ema", A), ``"window:K"`` (integer K >= 1)
    -> ("window", K), ``None`` or ``"none"`` -> None; ConfigError for anything else."""
    if spec is None or spec == "none":
        return None
    kind, _, value = spec.partition(":")
    valid = "valid: ema:A (0 <= A < 1), window:K (integer K >= 1), none"
    try:
        if kind == "ema" and 0.0 <= float(value) < 1.0:
            return ("ema", float(value))
        if kind == "window" and value.isdigit() and int(value) >= 1:
            return ("window", int(value))
    except ValueError:
        pass
    raise ConfigError(f"unknown --smooth '{spec}'; {valid}")


def smooth(values: np.ndarray, how: tuple[str, float] | None) -> np.ndarray:
    """``values`` ``[T]`` float64 smoothed over its finite entries (NaN stay NaN, and are
    skipped): an exponential moving average ``s_t = a s_{t-1} + (1 - a) x_t`` with
    ``s_0 = x_0``, or the trailing mean of the last ``k`` finite values."""
    values = np.asarray(values, np.float64)
    if how is None:
        return values
    out = values.copy()
    finite = np.flatnonzero(np.isfinite(values))
    x = values[finite]
    if how[0] == "ema":
        a, s = how[1], np.empty_like(x)
        for i, v in enumerate(x):
            s[i] = v if i == 0 else a * s[i - 1] + (1.0 - a) * v
    else:
        k = int(how[1])
        c = np.concatenate([[0.0], np.cumsum(x)])
        counts = np.arange(1, x.size + 1)
        s = (c[counts] - c[np.maximum(counts - k, 0)]) / np.minimum(counts, k)
    out[finite] = s
    return out


def common_grid(curves: list[dict[str, Any]], points: int | None = None) -> np.ndarray:
    """The x grid the ``curves`` are interpolated onto: from the latest first to the
    earliest last x where each has a finite value; ``points`` evenly spaced, or (None) every
    x any curve logged in that range. Empty when the ranges do not overlap."""
    xs = [c["step"][np.isfinite(c["value"])] for c in curves]
    if any(x.size == 0 for x in xs):
        return np.zeros(0)
    low, high = max(float(x.min()) for x in xs), min(float(x.max()) for x in xs)
    if low > high:
        return np.zeros(0)
    if points is not None:
        return np.linspace(low, high, points) if points > 1 else np.asarray([high])
    every = np.unique(np.concatenate(xs))
    return every[(every >= low) & (every <= high)]


def interpolate(curve: dict[str, Any], grid: np.ndarray) -> np.ndarray:
    """``curve``'s finite values linearly interpolated at ``grid`` (``numpy.interp``)."""
    keep = np.isfinite(curve["value"])
    x, v = curve["step"][keep], curve["value"][keep]
    order = np.argsort(x, kind="stable")
    return np.interp(grid, x[order], v[order])


def group_curves(
    curves: list[dict[str, Any]],
    smoothing: tuple[str, float] | None = None,
    points: int | None = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Lines: curves with equal options, labelled by the options that differ between lines
    (or by ``names``, in the order of each line's first run directory), each curve
    ``smooth``-ed and interpolated onto the line's ``common_grid``: ``step`` ``[G]``,
    ``values`` ``[seeds, G]``, ``final`` ``[seeds]`` (each curve's last finite raw value)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for curve in curves:
        key = tuple(sorted((k, repr(v)) for k, v in curve["options"].items()))  # a torso
        groups.setdefault(key, []).append(curve)  # spec is a dict: compared by its repr
    keys = sorted({k for c in curves for k in c["options"]})
    varying = [k for k in keys if len({repr(c["options"].get(k)) for c in curves}) > 1]
    varying = [k for k in varying if k != "run.steps"] or varying
    lines = []
    for members in groups.values():
        options = members[0]["options"]
        label = ", ".join(f"{k}={options.get(k)}" for k in varying)
        if not label:
            label = f"{options.get('agent.name')} on {options.get('env.name')}"
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
                "seeds": sorted(c["seed"] for c in members),
                "step": grid,
                "values": values,
                "final": finals,
                "order": min(c["order"] for c in members),
            }
        )
    if names is None:
        return sorted(lines, key=lambda line: line["label"])
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


def final_table(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per line: seeds, IQM of the final values with its 95% bootstrap CI, and the mean."""
    table = []
    for line in lines:
        finals = line["final"][np.isfinite(line["final"])]
        row = {"label": line["label"], "seeds": len(line["seeds"])}
        if finals.size:
            low, high = bootstrap_ci(finals, iqm)
            row.update(
                iqm=float(iqm(finals)), low=float(low), high=float(high), mean=float(finals.mean())
            )
        else:
            row.update(iqm=math.nan, low=math.nan, high=math.nan, mean=math.nan)
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


def plot(
    lines: list[dict[str, Any]],
    metric: str,
    out: str | Path,
    center: str = "mean",
    x: str = "step",
    cmap: str | None = None,
) -> None:
    """Each line's ``center`` over runs (``"mean"`` or ``"iqm"``) against the ``x`` axis
    (``X_AXES``), with the 95% percentile-bootstrap band of that statistic over runs, into
    ``out``; line colours from ``cmap`` (``line_colors``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = line_colors(cmap, len(lines))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for line, color in zip(lines, colors, strict=True):
        values = line["values"]
        keep = np.isfinite(values).all(axis=0)
        steps, values = line["step"][keep], values[:, keep]
        if not steps.size:
            continue
        statistic = iqm if center == "iqm" else np.mean
        middle = statistic(values, axis=0)
        label = f"{line['label']} ({values.shape[0]} runs)"
        (drawn,) = ax.plot(steps, middle, label=label, color=color)
        if values.shape[0] > 1:
            low, high = bootstrap_ci(values, statistic)
            ax.fill_between(steps, low, high, color=drawn.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(X_AXES[x])
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{'IQM' if center == 'iqm' else 'mean'} over runs (seeds), 95% bootstrap CI")
    fig.tight_layout()
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

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):
            raise ConfigError(message)

    try:
        parser = Parser(prog="python -m jaxrl.plot", description="Plot learning curves.")
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
        plot(lines, args.metric, args.out, x=args.x, cmap=args.cmap)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fmt = lambda x: "-" if math.isnan(x) else f"{x:.1f}"
    width = max(len(r["label"]) for r in final_table(lines))
    print(f"final {args.metric}: IQM over runs [95% bootstrap CI], mean")
    for row in final_table(lines):
        print(
            f"  {row['label']:<{width}}  {row['seeds']} runs  IQM {fmt(row['iqm'])} "
            f"[{fmt(row['low'])}, {fmt(row['high'])}]  mean {fmt(row['mean'])}"
        )
    print(f"curves: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
