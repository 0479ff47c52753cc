"""Learning curves read from run directories for ``jaxrl.plot``: one curve per seed of a
configuration (``load_curves``), smoothed (``smooth``) and interpolated onto a common x
grid (``common_grid``, ``interpolate``) before seeds are aggregated."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from jaxrl.types import ConfigError

X_AXES = {"step": "environment steps", "time": "wall time (s)", "episodes": "episodes"}


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
    ``swept`` (the swept options' names), ``seed``, ``run``, ``order`` (index of its run
    directory in ``run_dirs``), ``step`` ``[T]`` (the ``x`` axis: ``step``, ``time`` or
    the running sum of ``episodes``) and ``value`` ``[T]`` (NaN where the metric is
    missing)."""
    check_x(x)
    curves: dict[tuple, dict[str, Any]] = {}
    for order, run_dir in enumerate(map(Path, run_dirs)):
        metrics, config = run_dir / "metrics.jsonl", run_dir / "config.yaml"
        if not metrics.is_file() or not config.is_file():
            raise ConfigError(f"'{run_dir}' is not a run directory (no metrics.jsonl/config.yaml)")
        options = _flatten(yaml.safe_load(config.read_text()) or {})
        default_seed = options.pop("run.seed", 0)
        lines = metrics.read_text().splitlines()
        if not lines:
            raise ConfigError(
                f"'{run_dir}' has no metric rows yet (its metrics.jsonl is empty: no chunk "
                "has ended); plot it after its first chunk"
            )
        for line in lines:
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
                    "swept": sorted(swept),
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
