"""Runners: the fused on-device training loop (``scan.py``), the host loop (``host.py``),
the programs of games (``games/``: self-play, independent agents) and those beyond one
fused program (``distributed/``: actor threads, devices, jobs of several processes), with
one ``Runner`` interface and one ``ChunkLayout`` (``base.py``). Which one a run uses is
chosen by the mode tables of ``jaxrl.experiment.modes``."""

from __future__ import annotations

from jaxrl.runners.base import ChunkLayout, LearnerCheckpoint, RunConfig, Runner, RunnerState
from jaxrl.runners.games.self_play import make_self_play_runner
from jaxrl.runners.host import HostRunnerState, make_host_runner
from jaxrl.runners.scan import make_evaluate, make_runner, make_train

__all__ = [
    "ChunkLayout",
    "HostRunnerState",
    "LearnerCheckpoint",
    "RunConfig",
    "Runner",
    "RunnerState",
    "make_evaluate",
    "make_host_runner",
    "make_runner",
    "make_self_play_runner",
    "make_train",
]
