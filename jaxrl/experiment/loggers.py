"""The loggers of ``--log`` (TensorBoard, W&B), by the conventions their users rely on.

* **Grouped tags** (``tag``): ``train/`` (training episodes: ``train/episode_return``,
  and the agent's metrics that are not losses: ``train/epsilon``), ``eval/`` (the periodic
  evaluation ``eval/return``, the final one ``eval/final_return``), ``loss/`` (every metric
  whose name holds ``loss``: ``loss/q_loss``) and ``perf/`` (``perf/sps``, ``perf/time``);
  a key that holds ``/`` already (a callback's ``custom/x``) is sent as it is.
  ``metrics.jsonl`` and ``metrics.csv`` keep the plain keys.
* **Hyperparameters as hyperparameters**: the run's config with a member's seed and swept
  values (``member_config``) as W&B's config (nested, as ``config.yaml``) and, flattened
  to ``agent.lr``, ``run.seed``, ... (``flat_hparams``), as a session of TensorBoard's
  hparams plugin whose metrics are ``HPARAM_METRICS``.
* **One run per member**: a run with members (``--seeds``, ``--sweep``) logs each member
  as a run of its own: TensorBoard event files in ``RUN/MEMBER/`` (``member_name``:
  ``seed1``, ``seed1_lr=0.001``) and one W&B run per member, all grouped under the run
  directory's name (W&B's ``group``). A single run logs into ``RUN`` itself.
* **Videos** (``--run.video_every``): one greedy episode of member 0 under ``eval/video``:
  TensorBoard's video (an animated GIF, as ``add_video`` writes it) and a ``wandb.Video``
  of the MP4 file written in ``RUN/videos``.
* **The end**: each member's final evaluation (``eval/final_return``, a scalar at the last
  step and in W&B's run summary) and the numbers of ``summary.yaml`` as ``summary/...``
  (TensorBoard: in ``RUN``'s own event file; W&B: in every member's run summary).

A resumed run appends to the same TensorBoard runs (a purge step hides the events past
its checkpoint) and continues the same W&B runs (ids from the run directory's name).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

TRAIN_KEYS = ("episode_return", "episode_length", "episodes")
PERF_KEYS = ("time", "sps")
#: the scalars the TensorBoard hparams session compares runs by
HPARAM_METRICS = ("eval/final_return", "eval/return", "train/episode_return")
VIDEO_TAG = "eval/video"  # the periodic videos of ``--run.video_every``


def tag(key: str) -> str:
    """The grouped tag of a metrics row's ``key`` (module docstring)."""
    if "/" in key:
        return key
    if key in PERF_KEYS:
        return f"perf/{key}"
    if key.startswith("eval_"):
        return f"eval/{key.removeprefix('eval_')}"
    if "loss" in key:
        return f"loss/{key}"
    return f"train/{key}"


def scalars(row: Mapping[str, Any], member: Mapping[str, Any]) -> dict[str, float]:
    """``{tag: value}`` of a row's numbers, without ``step`` and the member's own columns
    (``seed``, ``agent.lr``: hyperparameters, not metrics) and NaN or None."""
    out = {}
    for key, value in row.items():
        if key == "step" or key in member or isinstance(value, bool):
            continue
        if isinstance(value, int | float) and np.isfinite(value):
            out[tag(key)] = value
    return out


def member_name(member: Mapping[str, Any]) -> str:
    """A member's run name: ``seed1``, or ``seed1_lr=0.001`` for a point of a sweep."""
    swept = (f"{k.removeprefix('agent.')}={v:g}" for k, v in member.items() if k != "seed")
    return "_".join([f"seed{member.get('seed', 0)}", *swept])


def member_config(config: Mapping[str, Any], member: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (``config.yaml``'s dict) as the member ran it: its ``run.seed`` and its
    swept ``agent.NAME`` values in place of the run's."""
    out = copy.deepcopy(dict(config))
    if "seed" in member and isinstance(out.get("run"), dict):
        out["run"]["seed"] = member["seed"]
    for key, value in member.items():
        if key.startswith("agent.") and isinstance(out.get("agent"), dict):
            out["agent"][key.removeprefix("agent.")] = value
    return out


def flat_hparams(config: Mapping[str, Any]) -> dict[str, bool | int | float | str]:
    """``config`` flattened to ``{"agent.lr": 0.001, "env.name": "CartPole-v1", ...}``;
    lists become their string (``"[64, 64]"``) and None entries are left out (the hparams
    plugin takes numbers, strings and booleans only)."""
    out: dict[str, bool | int | float | str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
        elif isinstance(value, bool | int | float | str):
            out[prefix[:-1]] = value
        elif value is not None:
            out[prefix[:-1]] = str(value)

    walk("", config)
    return out


def summary_scalars(summary: Mapping[str, Any]) -> dict[str, float]:
    """``{summary/KEY: value}`` of ``summary.yaml``'s numbers (booleans as 0/1; the CI's
    bounds as ``summary/final_iqm_ci_lower`` and ``_upper``; lists per member and NaN left
    out)."""
    out = {}
    for key, value in summary.items():
        if key == "final_iqm_ci" and value is not None:
            out["summary/final_iqm_ci_lower"], out["summary/final_iqm_ci_upper"] = map(float, value)
        elif isinstance(value, bool | int | float) and np.isfinite(float(value)):
            out[f"summary/{key}"] = float(value)
    return out


class TensorBoard:
    """One TensorBoard run (an event file directory) of a run or of one member."""

    def __init__(self, log_dir: Path, purge_step: int | None):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(str(log_dir), purge_step=purge_step)

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)

    def hparams(self, hparams: Mapping[str, Any], end: bool = False) -> None:
        """The hparams plugin's experiment and session start (``end``: session end)."""
        from tensorboardX.summary import hparams as hparams_summaries

        experiment, start, finish = hparams_summaries(dict(hparams), dict.fromkeys(HPARAM_METRICS))
        for summary in (finish,) if end else (experiment, start):
            self.writer.file_writer.add_summary(summary)

    def histograms(self, values: Mapping[str, np.ndarray], step: int) -> None:
        for key, value in values.items():
            self.writer.add_histogram(key, value, step)

    def video(self, key: str, frames: Sequence[np.ndarray], fps: int, step: int) -> None:
        """``frames`` (``uint8 [H, W, 3]``) as TensorBoard's video: an animated GIF in an
        image summary, as ``add_video`` writes it (encoded with imageio, not moviepy)."""
        import imageio.v3 as iio
        from tensorboardX.proto.summary_pb2 import Summary

        gif = iio.imwrite(
            "<bytes>", np.stack(frames), extension=".gif", duration=1000 / fps, loop=0
        )
        height, width, channels = frames[0].shape
        image = Summary.Image(
            height=height, width=width, colorspace=channels, encoded_image_string=gif
        )
        summary = Summary(value=[Summary.Value(tag=key, image=image)])
        self.writer.file_writer.add_summary(summary, step)

    def close(self) -> None:
        self.writer.close()


class Wandb:
    """One W&B run (of a run, or of one member grouped under ``group``), under
    ``RUN/wandb``; ``WANDB_PROJECT`` (default ``jaxrl``), ``WANDB_ENTITY`` and
    ``WANDB_MODE`` from the environment."""

    def __init__(self, run_dir: Path, name: str, config: Mapping[str, Any], group: str | None):
        import wandb

        self.run = wandb.init(
            dir=str(run_dir),
            project=os.environ.get("WANDB_PROJECT", "jaxrl"),
            entity=os.environ.get("WANDB_ENTITY"),
            mode=cast(Any, os.environ.get("WANDB_MODE", "online")),  # wandb checks it
            name=name,
            id=wandb_id(name),
            group=group,
            resume="allow",
            config=dict(config),
            reinit="create_new",  # a member's run beside the others in this process
        )

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        self.run.log(dict(values), step=step)

    def summary(self, values: Mapping[str, float]) -> None:
        self.run.summary.update(dict(values))

    def video(self, key: str, path: Path, step: int) -> None:
        """The video file at ``path`` as a W&B video (``wandb.Video``) under ``key``."""
        import wandb

        self.run.log({key: wandb.Video(str(path), format=path.suffix[1:])}, step=step)

    def close(self) -> None:
        self.run.finish()


def wandb_id(name: str) -> str:
    """A W&B run id from a run's name (W&B ids may not hold ``/\\#?%:``)."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[-128:]


class Loggers:
    """The loggers of one run: per member (one for a single run) a TensorBoard run and a
    W&B run as ``names`` asks, and for a run with members ``RUN``'s own TensorBoard run
    for the summary.

    Args:
      run_dir: the run directory.
      names: the loggers (``logging.LOGGERS``) to write to; unavailable ones are the
        caller's business (``logging.check_loggers``).
      members: ``{"seed": s, "agent.NAME": v}`` per member; ``batched``: the run has them.
      config: the run's config (``config.yaml``'s dict).
      purge_step: a resume's first step (TensorBoard hides older events from there on);
        None for a new run, which also starts the hparams sessions.
    """

    def __init__(
        self,
        run_dir: Path,
        names: Sequence[str],
        members: Sequence[Mapping[str, Any]],
        batched: bool,
        config: Mapping[str, Any],
        purge_step: int | None = None,
    ):
        self.members = [dict(m) for m in members] if batched else [{}]
        self.tensorboard: list[TensorBoard] = []
        self.wandb: list[Wandb] = []
        self.experiment: TensorBoard | None = None
        configs = [member_config(config, m) for m in self.members]
        if "tensorboard" in names:
            dirs = [run_dir / member_name(m) for m in self.members] if batched else [run_dir]
            self.tensorboard = [TensorBoard(d, purge_step) for d in dirs]
            if batched:
                self.experiment = TensorBoard(run_dir, purge_step)
            if purge_step is None:
                for board, member_cfg in zip(self.tensorboard, configs, strict=True):
                    board.hparams(flat_hparams(member_cfg))
        if "wandb" in names:
            if batched:
                self.wandb = [
                    Wandb(run_dir, f"{run_dir.name}/{member_name(m)}", c, run_dir.name)
                    for m, c in zip(self.members, configs, strict=True)
                ]
            else:
                self.wandb = [Wandb(run_dir, run_dir.name, config, None)]

    def write(self, row: Mapping[str, Any], member: int = 0) -> None:
        """A metrics row of member ``member`` (0 for a single run), at its ``step``."""
        values = scalars(row, self.members[member])
        for loggers in (self.tensorboard, self.wandb):
            if loggers:
                loggers[member].scalars(values, int(row["step"]))

    def histograms(self, values: Mapping[str, np.ndarray], step: int) -> None:
        """Histograms of a single run (TensorBoard)."""
        if self.tensorboard:
            self.tensorboard[0].histograms(values, step)

    @property
    def takes_histograms(self) -> bool:
        return bool(self.tensorboard)

    def video(self, path: Path, frames: Sequence[np.ndarray], fps: int, step: int) -> None:
        """A video of member 0 at ``step`` (``eval/video``): ``frames`` to TensorBoard,
        the file at ``path`` (the same frames) to W&B."""
        if self.tensorboard:
            self.tensorboard[0].video(VIDEO_TAG, frames, fps, step)
        if self.wandb:
            self.wandb[0].video(VIDEO_TAG, path, step)

    def finish(self, step: int, finals: Sequence[float], summary: Mapping[str, Any]) -> None:
        """The end of a completed run: each member's final evaluation return ``finals``
        at ``step``, the summary's numbers, and the hparams sessions' end."""
        totals = summary_scalars(summary)
        for b, final in enumerate(finals):
            values = {"eval/final_return": float(final)}
            if self.tensorboard:
                self.tensorboard[b].scalars(values, step)
                self.tensorboard[b].hparams({}, end=True)
            if self.wandb:
                self.wandb[b].scalars(values, step)
                self.wandb[b].summary({**values, **totals})
        boards = [self.experiment] if self.experiment is not None else self.tensorboard[:1]
        for board in boards:
            board.scalars(totals, step)

    def close(self) -> None:
        boards = [self.experiment] if self.experiment is not None else []
        loggers: list[TensorBoard | Wandb] = [*self.tensorboard, *boards, *self.wandb]
        for logger in loggers:
            logger.close()
