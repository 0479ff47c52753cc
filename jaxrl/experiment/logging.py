"""Metric rows: aggregation of per-iteration metrics, and writers for a run directory.

A run directory always gets ``metrics.jsonl`` and ``metrics.csv`` (one row per logging
interval, plain keys; resume, ``jaxrl.plot`` and other tools read them). ``MetricsWriter``
also sends each row to the loggers named in ``launch.yaml``'s ``loggers`` (``--log``;
``experiment.loggers``: grouped tags, hyperparameters, one run per member), any of:

* ``tensorboard``: TensorBoard event files in the run directory, one subdirectory per
  member of a run with members (``tensorboardX``; the default, skipped where it is not
  installed unless ``--log`` names it);
* ``wandb``: a Weights & Biases run (``pip install 'jaxrl[wandb]'``) under
  ``RUN_DIR/wandb``, with the run's config, named and identified by the run directory (a
  resumed run continues the same W&B run; W&B ignores rows at steps it already has); one
  per member, grouped, for a run with members. ``WANDB_PROJECT`` (default ``jaxrl``),
  ``WANDB_ENTITY`` and ``WANDB_MODE`` (``offline`` to log without a network, then
  ``wandb sync``) are read from the environment.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.experiment.loggers import Loggers
from jaxrl.types import ConfigError

LOGGERS = ("tensorboard", "wandb")
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


def check_loggers(names: Sequence[str], given: bool = False) -> list[str]:
    """``names`` as a list; ConfigError for an unknown logger or W&B not installed, and
    where ``given`` (named by ``--log``, not the default) for TensorBoard not installed."""
    names = list(names)
    for name in names:
        if name not in LOGGERS:
            raise ConfigError(f"unknown logger '{name}' in --log; valid: {', '.join(LOGGERS)}")
    if "wandb" in names and importlib.util.find_spec("wandb") is None:
        raise ConfigError("--log wandb needs wandb: pip install 'jaxrl[wandb]'")
    if given and "tensorboard" in names and importlib.util.find_spec("tensorboardX") is None:
        raise ConfigError(
            "--log tensorboard needs tensorboardX: pip install tensorboardX (or --log '' for "
            "metrics.jsonl and metrics.csv alone)"
        )
    return names


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsWriter:
    """Appends rows to ``metrics.jsonl``, ``metrics.csv`` and the ``loggers``.

    The CSV header is fixed by the first row: standard columns first, then the agent's
    metrics in the order they appear. NaN is written as an empty CSV cell and JSON null.
    """

    def __init__(
        self,
        run_dir: Path,
        keep_rows: int | None = None,
        purge_step: int | None = None,
        loggers: Sequence[str] = ("tensorboard",),
        config: Mapping[str, Any] | None = None,
        members: Sequence[Mapping[str, Any]] = (),
        batched: bool = False,
    ):
        """``keep_rows``: resume an existing run: keep its first ``keep_rows`` rows (drop
        any written after its last checkpoint) and append. ``purge_step``: TensorBoard
        hides the old run's events from that step on. ``loggers``: names from
        ``LOGGERS``; ``config``: the run's config (hyperparameters); ``members`` and
        ``batched``: the run's members (``Launch.members``), each logged as a run of
        its own where ``batched``."""
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
        names = [n for n in loggers if n != "tensorboard" or _has("tensorboardX")]
        self.loggers = Loggers(
            self.run_dir, names, members or [{}], batched, config or {}, purge_step
        )

    def write(self, row: Mapping[str, Any], member: int = 0) -> None:
        """A row to the files and, as member ``member``'s (0 for a single run), to the
        loggers."""
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
        self.loggers.write(row, member)

    def histograms(self, values: Mapping[str, np.ndarray], step: int) -> None:
        """Histograms ``{tag: flat array}`` at ``step`` to the loggers that take them
        (TensorBoard; ``jaxrl.experiment.histograms``)."""
        self.loggers.histograms(values, step)

    @property
    def takes_histograms(self) -> bool:
        """Whether any logger writes histograms."""
        return self.loggers.takes_histograms

    def video(self, path: Path, frames: Sequence[np.ndarray], fps: int, step: int) -> None:
        """A video written at ``path`` (its ``frames``) to the loggers, as ``eval/video``."""
        self.loggers.video(path, frames, fps, step)

    def finish(self, step: int, finals: Sequence[float], summary: Mapping[str, Any]) -> None:
        """The loggers get each member's final evaluation return and the summary
        (``summary.yaml``'s dict); the files are complete already."""
        self.loggers.finish(step, finals, summary)

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._jsonl.close()
        self._csv_file.close()
        self.loggers.close()


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
