"""``python -m jaxrl.plot RUN_DIR... [--out curves.png]``: learning curves and a table.

Examples::

    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x8_*                     # one 8-seed run
    python -m jaxrl.plot runs/dqn_CartPole-v1_s* --metric eval_return     # runs of one seed each
    python -m jaxrl.plot runs/dqn_CartPole-v1_s0x4_sweep_* --out lr.png   # a sweep

Reads each run's ``config.yaml`` and ``metrics.jsonl``. A *curve* is one seed of one
configuration: a single run, or one member of a ``--seeds``/``--sweep`` run (its rows carry
``seed`` and the swept values). Curves whose configurations are equal up to the seed form
one line: the mean over seeds of ``--metric`` (default ``episode_return``) against env
steps, with a 95% percentile-bootstrap confidence band over seeds. Lines are labelled with
the options that differ between them (e.g. ``agent.lr=0.001``).

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


def load_curves(run_dirs: Sequence[str | Path], metric: str) -> list[dict[str, Any]]:
    """One dict per curve: ``options`` (config without the seed, plus swept values),
    ``seed``, ``step`` ``[T]`` and ``value`` ``[T]`` (NaN where the metric is missing)."""
    curves: dict[tuple, dict[str, Any]] = {}
    for run_dir in map(Path, run_dirs):
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
                    "step": [],
                    "value": [],
                },
            )
            curve["step"].append(row["step"])
            value = row[metric]
            curve["value"].append(math.nan if value is None else float(value))
    return [
        {**c, "step": np.asarray(c["step"]), "value": np.asarray(c["value"])}
        for c in curves.values()
    ]


def group_curves(curves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines: curves with equal options, labelled by the options that differ between lines."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for curve in curves:
        groups.setdefault(tuple(sorted(curve["options"].items(), key=str)), []).append(curve)
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
        steps = sorted(set.intersection(*(set(c["step"].tolist()) for c in members)))
        values = np.stack(
            [
                np.asarray(
                    [dict(zip(c["step"].tolist(), c["value"], strict=True))[s] for s in steps]
                )
                for c in members
            ]
        )
        finals = np.asarray([_last_finite(c["value"]) for c in members])
        lines.append(
            {
                "label": label,
                "seeds": sorted(c["seed"] for c in members),
                "step": np.asarray(steps),
                "values": values,
                "final": finals,
            }
        )
    return sorted(lines, key=lambda line: line["label"])


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


def plot(lines: list[dict[str, Any]], metric: str, out: str | Path, center: str = "mean") -> None:
    """Each line's ``center`` over runs (``"mean"`` or ``"iqm"``) against env steps, with
    the 95% percentile-bootstrap band of that statistic over runs, into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for line in lines:
        values = line["values"]
        keep = np.isfinite(values).all(axis=0)
        steps, values = line["step"][keep], values[:, keep]
        if not steps.size:
            continue
        statistic = iqm if center == "iqm" else np.mean
        middle = statistic(values, axis=0)
        (drawn,) = ax.plot(steps, middle, label=f"{line['label']} ({values.shape[0]} runs)")
        if values.shape[0] > 1:
            low, high = bootstrap_ci(values, statistic)
            ax.fill_between(steps, low, high, color=drawn.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("environment steps")
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
        args = parser.parse_args(argv)
        check_out(args.out)
        lines = group_curves(load_curves(args.run_dirs, args.metric))
        plot(lines, args.metric, args.out)
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
