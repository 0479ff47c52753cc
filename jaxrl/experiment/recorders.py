"""The driver's own callbacks: what a run records between chunks, written to the callback
protocol (``experiment.callbacks``) and run by the driver in one list with a user's.

* ``MetricsLog``: a chunk's metric rows to ``metrics.jsonl``, ``metrics.csv`` and the
  loggers of ``--log`` (``logging.MetricsWriter``: TensorBoard, W&B), then, when the chunk
  evaluated, the evaluation histograms (TensorBoard only; ``experiment.histograms``);
  counts the rows written (``Position.rows``, which a checkpoint records).
* ``Checkpointer``: a checkpoint at the first chunk end past every ``checkpoint_every``
  env steps (none periodic for 0) and one at the end of the run unless that step is saved
  already; sets ``event.checkpoint_step`` to each step it saves.
* ``Progress``: the console's progress line (``report.ProgressBar``).

Their place in the list is the ordering contract of ``experiment.callbacks``:
``on_start`` and ``on_end`` run these first, ``on_chunk`` runs them after the user's
callbacks, in the order above. So the rows a user's callback extends are the rows written,
a checkpoint counts only rows already on disk (a crash between the two leaves rows a
resume drops, never a checkpoint that claims rows that are missing), and a user's
``on_end`` sees the final checkpoint. None of them ever asks for a stop. They hold no
file open of their own: the driver opens and closes the writers they are handed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax

from jaxrl.experiment import report
from jaxrl.experiment.checkpoint import CheckpointWriter
from jaxrl.experiment.logging import MetricsWriter


class MetricsLog:
    """``on_chunk`` writes ``event.rows`` (row ``b`` as member ``b``'s, which the loggers
    log as a run of its own) and the evaluation histograms of the chunk's state when it
    evaluated.

    Args:
      writer: the run's ``MetricsWriter``.
      position: the driver's ``Position``; ``rows`` grows by each row written.
      batched: whether the run has members (``--seeds``/``--sweep``).
      histograms: ``(agent_state, key) -> {name: values}`` (``make_collector``) or None.
    """

    def __init__(
        self,
        writer: MetricsWriter,
        position: Any,
        batched: bool,
        histograms: Callable[..., dict[str, Any]] | None = None,
    ):
        self.writer, self.position, self.batched = writer, position, batched
        self.histograms = histograms

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        for b, row in enumerate(rows):
            self.writer.write(row, member=b if self.batched else 0)
        self.position.rows += len(rows)

    def on_chunk(self, event: Any) -> None:
        self.write_rows(event.rows)
        if self.histograms is not None and not math.isnan(report.mean_eval(event.rows)):
            key = jax.random.PRNGKey(event.chunk)  # eval/q_values or eval/action_probs, ...
            values = self.histograms(event.state.agent_state, key)
            self.writer.histograms({f"eval/{k}": v for k, v in values.items()}, event.step)


class Checkpointer:
    """Periodic and final checkpoints of the runner state.

    Args:
      saver: the run's ``CheckpointWriter``.
      every: env steps between checkpoints (``launch.checkpoint_every``; 0: at the end only).
      to_save: ``Runner.save``: the runner state as a checkpoint holds it.
      meta: ``() -> dict``, the driver's position as the checkpoint's meta records it.
      steps: ``() -> int``, env steps done (the driver's position).
      saved_step: the step of the checkpoint the run resumed from (None for a new run).
    """

    def __init__(
        self,
        saver: CheckpointWriter,
        every: int,
        to_save: Callable[[Any], Any],
        meta: Callable[[], dict[str, Any]],
        steps: Callable[[], int],
        saved_step: int | None = None,
    ):
        self.saver, self.every, self.to_save = saver, every, to_save
        self.meta, self.steps, self.saved_step = meta, steps, saved_step
        self.prev = steps()

    def save(self, event: Any) -> None:
        step = self.steps()
        self.saver.save(step, self.to_save(event.state), self.meta())
        self.saved_step = event.checkpoint_step = step

    def on_start(self, event: Any) -> None:
        event.checkpoint_step = self.saved_step
        self.prev = self.steps()

    def on_chunk(self, event: Any) -> None:
        step, prev = self.steps(), self.prev
        self.prev = step
        if self.every and step // self.every > prev // self.every:
            self.save(event)

    def on_end(self, event: Any) -> None:
        if self.saved_step != self.steps():
            self.save(event)


class Progress:
    """``on_chunk`` moves the progress line: steps, env steps/s over members, the mean
    training return and evaluation of the rows."""

    def __init__(self, bar: report.ProgressBar):
        self.bar = bar

    def on_chunk(self, event: Any) -> None:
        rows = event.rows
        sps = rows[0]["sps"] * len(rows)
        self.bar.update(event.step, sps, report.mean_return(rows), report.mean_eval(rows))
