"""``Launch``: how a config is run (seeds, sweep, checkpoints, loggers, devices, actor
threads, callbacks, warm start), saved as ``launch.yaml`` beside ``config.yaml``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from jaxrl.experiment import callbacks, sweep, warmstart
from jaxrl.experiment.logging import check_loggers
from jaxrl.types import ConfigError

LAUNCH_FILE = "launch.yaml"


@dataclasses.dataclass(frozen=True)
class Launch:
    """How a config is run, saved as ``launch.yaml`` beside ``config.yaml``.

    Attributes:
      seeds: number of seeds ``run.seed, run.seed + 1, ...`` trained as one program.
      sweep: swept continuous hyperparameters ``{name: [values]}`` (``agent.name``).
      zip_sweep: the swept lists are zipped, point ``i`` taking the ``i``-th value of each
        (``jaxrl tune``: one point per trial), instead of crossed into their grid.
      checkpoint_every: env steps between checkpoints (0: only at the end of the run).
      keep: checkpoints kept (the newest).
      loggers: where metric rows go besides ``metrics.jsonl``/``metrics.csv``
        (``jaxrl.experiment.logging.LOGGERS``: tensorboard, wandb).
      devices: local devices one run's envs are split over (``"all"``: every one;
        ``jaxrl.runners.distributed.devices``); 1 runs on the default device.
      watchdog: seconds one chunk may run before the run is ended as wedged, with its
        threads' stacks written (``guards.Watchdog``); 0 turns it off. The default, an
        hour, is far above any chunk of a built-in preset (seconds on a CPU).
      actor_threads: 0 runs the fused program; K >= 1 runs Sebulba's K actor threads and
        a learner on one host (``runners/distributed/sebulba.py``; JAX-native envs, one seed).
      actor_processes: 0 runs no actor processes; P >= 1: this process is the learner or
        one of P actor processes of a job of P + 1 (``experiment/actors.py``; Ape-X, IMPALA).
      queue_size: rollouts the actors may queue ahead of the learner (Sebulba, actor
        processes).
      sync_actors: actors act with exactly the parameters of their rollout's index: no
        policy lag, repeatable bit for bit (Sebulba, actor processes).
      callbacks: hooks the driver runs between chunks (``--callback``), each a spec
        ``NAME[:key=value,...]`` or ``MODULE:ATTR`` (``jaxrl.experiment.callbacks``).
      init_from: ``RUN[:STEP]`` whose checkpoint the run started from (``--init-from``;
        recorded as ``ABSOLUTE_RUN:STEP``; ``experiment.warmstart``), None for a fresh start.
      init_parts: what was taken from it (``warmstart.PARTS``; default ``params``).
      imports: the modules of ``--import`` (user torsos, envs, agents); recorded, never
        imported from here (``jaxrl.trust``): ``evaluate`` and ``export`` name them.
    """

    seeds: int = 1
    sweep: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    zip_sweep: bool = False
    checkpoint_every: int = 0
    keep: int = 3
    loggers: list[str] = dataclasses.field(default_factory=lambda: ["tensorboard"])
    devices: int | str = 1
    watchdog: float = 3600.0
    actor_threads: int = 0
    actor_processes: int = 0
    queue_size: int = 2
    sync_actors: bool = False
    callbacks: list[str] = dataclasses.field(default_factory=list)
    init_from: str | None = None
    init_parts: list[str] = dataclasses.field(default_factory=list)
    imports: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "loggers", check_loggers(self.loggers))
        object.__setattr__(self, "callbacks", callbacks.check(self.callbacks))
        if self.init_from is None and self.init_parts:
            raise ConfigError("--init-parts chooses what --init-from takes; give --init-from")
        if self.init_from is not None:
            parts = warmstart.check_parts(self.init_parts or ["params"])
            object.__setattr__(self, "init_parts", parts)
        devices = self.devices
        if devices != "all" and (isinstance(devices, bool) or not isinstance(devices, int)):
            raise ConfigError(f"--devices must be a positive integer or 'all', got {devices!r}")
        for flag, value, least in (
            ("--seeds", self.seeds, 1),
            ("--checkpoint-every", self.checkpoint_every, 0),
            ("--keep", self.keep, 1),
            ("--devices", 1 if self.devices == "all" else self.devices, 1),
            ("--actor-threads", self.actor_threads, 0),
            ("--actor-processes", self.actor_processes, 0),
            ("--queue-size", self.queue_size, 1),
        ):
            if value < least:
                raise ConfigError(f"{flag} must be >= {least}, got {value}")
        if self.zip_sweep and len({len(v) for v in self.sweep.values()}) > 1:
            raise ConfigError("a zipped sweep needs as many values of every swept name")
        if not self.watchdog >= 0 or self.watchdog == float("inf"):
            raise ConfigError(f"--watchdog must be >= 0 seconds (0: off), got {self.watchdog}")

    @property
    def batched(self) -> bool:
        return self.seeds > 1 or bool(self.sweep)

    def points(self) -> list[dict[str, float]]:
        """The sweep's points: its grid (``sweep.grid``), or its zipped lists."""
        return sweep.zipped(self.sweep) if self.zip_sweep else sweep.grid(self.sweep)

    def members(self, seed: int) -> list[dict[str, Any]]:
        """``{"seed": s, "agent.NAME": value, ...}`` per member: every point of the sweep
        (``points``) times the seeds ``seed, seed + 1, ...``; one for a single run."""
        return [
            {"seed": seed + i, **{f"agent.{k}": v for k, v in point.items()}}
            for point in self.points()
            for i in range(self.seeds)
        ]


def read_launch(run_dir: str | Path) -> Launch:
    path = Path(run_dir) / LAUNCH_FILE
    if not path.is_file():
        return Launch()
    data = yaml.safe_load(path.read_text()) or {}
    try:
        return Launch(**data)
    except TypeError as e:
        raise ConfigError(f"'{path}' is not a valid launch file: {e}") from None
