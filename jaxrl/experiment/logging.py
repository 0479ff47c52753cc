"""Metric rows: aggregation of per-iteration metrics, and writers for a run directory.

A run directory always gets ``metrics.jsonl`` and ``metrics.csv`` (one row per logging
interval; resume and ``jaxrl.plot`` read them). ``MetricsWriter`` also sends each row to
the loggers named in ``launch.yaml``'s ``loggers`` (``--log``), a composite of any of:

* ``tensorboard``: TensorBoard event files in the run directory (``tensorboardX``; the
  default, skipped where it is not installed unless ``--log`` names it);
* ``wandb``: a Weights & Biases run (``pip install 'jaxrl[wandb]'``) under
  ``RUN_DIR/wandb``, with the run's config, named and identified by the run directory (a
  resumed run continues the same W&B run; W&B ignores rows at steps it already has).
  ``WANDB_PROJECT`` (default ``jaxrl``), ``WANDB_ENTITY`` and ``WANDB_MODE`` (``offline``
  to log without a network, then ``wandb sync``) are read from the environment.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

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


class _TensorBoard:
    def __init__(self, run_dir: Path, purge_step: int | None):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(str(run_dir), purge_step=purge_step)

    def write(self, row: Mapping[str, Any], tag_prefix: str) -> None:
        for key, value in row.items():
            if key != "step" and isinstance(value, int | float):
                self.writer.add_scalar(tag_prefix + key, value, row["step"])

    def histograms(self, values: Mapping[str, np.ndarray], step: int) -> None:
        for key, value in values.items():
            self.writer.add_histogram(key, value, step)

    def close(self) -> None:
        self.writer.close()


class _Wandb:
    def __init__(self, run_dir: Path, config: Mapping[str, Any] | None):
        import wandb

        self.run = wandb.init(
            dir=str(run_dir),
            project=os.environ.get("WANDB_PROJECT", "jaxrl"),
            entity=os.environ.get("WANDB_ENTITY"),
            mode=cast(Any, os.environ.get("WANDB_MODE", "online")),  # wandb checks it
            name=run_dir.name,
            id=_wandb_id(run_dir.name),
            resume="allow",
            config=dict(config or {}),
        )

    def write(self, row: Mapping[str, Any], tag_prefix: str) -> None:
        values = {
            tag_prefix + k: v for k, v in row.items() if k != "step" and isinstance(v, int | float)
        }
        self.run.log(values, step=int(row["step"]))

    def close(self) -> None:
        self.run.finish()


def _wandb_id(name: str) -> str:
    """A W&B run id from a run directory's name (W&B ids may not hold ``/\\#?%:``)."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[-128:]


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
    ):
        """``keep_rows``: resume an existing run: keep its first ``keep_rows`` rows (drop
        any written after its last checkpoint) and append. ``purge_step``: TensorBoard
        hides the old run's events from that step on. ``loggers``: names from
        ``LOGGERS``; ``config``: the run's config, for W&B."""
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
        self._loggers: list[Any] = []
        if "tensorboard" in loggers and importlib.util.find_spec("tensorboardX") is not None:
            self._loggers.append(_TensorBoard(self.run_dir, purge_step))
        if "wandb" in loggers:
            self._loggers.append(_Wandb(self.run_dir, config))

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
        for logger in self._loggers:
            logger.write(row, tag_prefix)

    def histograms(self, values: Mapping[str, np.ndarray], step: int) -> None:
        """Histograms ``{tag: flat array}`` at ``step`` to the loggers that take them
        (TensorBoard; ``jaxrl.experiment.histograms``)."""
        for logger in self._loggers:
            if hasattr(logger, "histograms"):
                logger.histograms(values, step)

    @property
    def takes_histograms(self) -> bool:
        """Whether any logger writes histograms."""
        return any(hasattr(logger, "histograms") for logger in self._loggers)

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._jsonl.close()
        self._csv_file.close()
        for logger in self._loggers:
            logger.close()
