"""The driver's own callbacks: what a run records between chunks, written to the callback
protocol (``experiment.callbacks``) and run by the driver in one list with a user's.

* ``MetricsLog``: a chunk's metric rows to ``metrics.jsonl``, ``metrics.csv`` and the
  loggers of ``--log`` (``logging.MetricsWriter``: TensorBoard, W&B), then, when the chunk
  evaluated, the evaluation histograms (TensorBoard only; ``experiment.histograms``);
  counts the rows written (``Position.rows``, which a checkpoint records).
* ``VideoLog`` (``--run.video_every``): one greedy episode of member 0 at the first chunk
  end past every ``video_every`` env steps, written to ``RUN/videos/step_STEP.mp4`` and
  sent to the loggers (``eval/video``); its key is the chunk's number, not the run's keys.
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
from pathlib import Path
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


class VideoLog:
    """``on_chunk`` records a video at the first chunk end past every ``every`` env steps.

    Args:
      writer: the run's ``MetricsWriter`` (its loggers get each video).
      run_dir: the run directory (videos go to ``run_dir/videos``).
      every: ``run.video_every``, env steps between videos (> 0).
      make: ``() -> (episode(agent_state, key) -> frames, fps)`` (``video.make_episode``),
        called at the first video (it compiles the episode's programs).
      policy: ``agent_state -> agent state of the policy filmed`` (member 0's).
      steps: ``() -> int``, env steps done (the driver's position).
    """

    def __init__(
        self,
        writer: MetricsWriter,
        run_dir: Path,
        every: int,
        make: Callable[[], tuple[Callable[..., list[Any]], int]],
        policy: Callable[[Any], Any],
        steps: Callable[[], int],
    ):
        self.writer, self.run_dir, self.every = writer, run_dir, every
        self.make, self.policy, self.steps = make, policy, steps
        self.episode: tuple[Callable[..., list[Any]], int] | None = None
        self.prev = steps()

    def on_start(self, event: Any) -> None:
        self.prev = self.steps()

    def on_chunk(self, event: Any) -> None:
        step, prev = self.steps(), self.prev
        self.prev = step
        if step // self.every <= prev // self.every:
            return
        from jaxrl.experiment import video

        if self.episode is None:
            self.episode = self.make()
        episode, fps = self.episode
        frames = episode(self.policy(event.state.agent_state), jax.random.PRNGKey(event.chunk))
        path = self.run_dir / "videos" / f"step_{step:09d}.mp4"
        path.parent.mkdir(exist_ok=True)
        video.write(path, frames, fps, "--run.video_every")
        self.writer.video(path, frames, fps, step)


def video_log(
    setup: Any, writer: MetricsWriter, run_dir: Path, steps: Callable[[], int]
) -> VideoLog:
    """The ``VideoLog`` of ``setup``'s ``run.video_every``: member 0's greedy episodes."""
    from jaxrl.experiment import video
    from jaxrl.types import take_member

    batched = setup.launch.batched
    return VideoLog(
        writer,
        run_dir,
        setup.run_config.video_every,
        lambda: video.make_episode(setup.agent, setup.config),
        lambda agent_state: take_member(agent_state, 0) if batched else agent_state,
        steps,
    )


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
