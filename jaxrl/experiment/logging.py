"""Metric rows: aggregation of per-iteration metrics, and writers for a run directory.

A run directory gets ``metrics.jsonl`` and ``metrics.csv`` (one row per logging interval)
and, where ``tensorboardX`` is installed, TensorBoard event files.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

EPISODE_KEYS = ("episodes", "episode_return_sum", "episode_length_sum")
FIRST_COLUMNS = ("step", "time", "sps", "episode_return", "episode_length", "eval_return")


def aggregate(metrics: Mapping[str, np.ndarray]) -> dict[str, float]:
    """One row from the per-iteration metrics ``{name: [iterations]}`` of an interval.

    ``step`` is the last iteration's env-step count; ``episode_return`` and
    ``episode_length`` are means over the episodes finished in the interval (NaN if none);
    ``eval_return`` is the interval's evaluation (NaN if none ran); every other metric is
    the mean over iterations where it was computed (NaN if never).
    """
    episodes = float(np.sum(metrics["episodes"]))
    mean = lambda key: float(np.sum(metrics[key])) / episodes if episodes else math.nan
    row = {
        "step": int(np.asarray(metrics["step"])[-1]),
        "episode_return": mean("episode_return_sum"),
        "episode_length": mean("episode_length_sum"),
        "episodes": int(episodes),
    }
    for key, values in metrics.items():
        if key in EPISODE_KEYS or key == "step":
            continue
        values = np.asarray(values, np.float64)
        finite = values[~np.isnan(values)]
        row[key] = float(finite.mean()) if finite.size else math.nan
    return row


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsWriter:
    """Appends rows to ``metrics.jsonl``, ``metrics.csv`` and TensorBoard (if available).

    The CSV header is fixed by the first row: standard columns first, then the agent's
    metrics in the order they appear. NaN is written as an empty CSV cell and JSON null.
    """

    def __init__(self, run_dir: Path, keep_rows: int | None = None, purge_step: int | None = None):
        """``keep_rows``: resume an existing run: keep its first ``keep_rows`` rows (drop
        any written after its last checkpoint) and append. ``purge_step``: TensorBoard
        hides the old run's events from that step on."""
        self.run_dir = Path(run_dir)
        self._csv: csv.DictWriter | None = None
        mode = "w"
        if keep_rows is not None:
            mode = "a"
            jsonl, csv_path = self.run_dir / "metrics.jsonl", self.run_dir / "metrics.csv"
            lines = jsonl.read_text().splitlines(keepends=True) if jsonl.exists() else []
            jsonl.write_text("".join(lines[:keep_rows]))
            lines = csv_path.read_text().splitlines(keepends=True) if csv_path.exists() else []
            csv_path.write_text("".join(lines[: keep_rows + 1] if keep_rows else []))
        self._jsonl = open(self.run_dir / "metrics.jsonl", mode)
        self._csv_file = open(self.run_dir / "metrics.csv", mode, newline="")
        if keep_rows:
            columns = next(csv.reader([lines[0]]))
            self._csv = csv.DictWriter(self._csv_file, columns, extrasaction="ignore")
        self._tb = None
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            pass
        else:
            self._tb = SummaryWriter(str(self.run_dir), purge_step=purge_step)

    def write(self, row: Mapping[str, Any], tag_prefix: str = "") -> None:
        row = {k: _jsonable(v) for k, v in row.items()}
        self._jsonl.write(json.dumps(row) + "\n")
        self._jsonl.flush()
        if self._csv is None:
            columns = [c for c in FIRST_COLUMNS if c in row]
            columns += [c for c in row if c not in columns]
            self._csv = csv.DictWriter(self._csv_file, columns, extrasaction="ignore")
            self._csv.writeheader()
        self._csv.writerow({k: "" if v is None else v for k, v in row.items()})
        self._csv_file.flush()
        if self._tb is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, int | float):
                    self._tb.add_scalar(tag_prefix + key, value, row["step"])

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._jsonl.close()
        self._csv_file.close()
        if self._tb is not None:
            self._tb.close()
