"""Runners: the fused on-device training loop (scan.py) and the host loop (host.py), with
one ``Runner`` interface and one ``ChunkLayout``; ``make`` picks the one an env needs."""

from __future__ import annotations

from typing import Any

from jaxrl.envs.gymnasium import HostEnv
from jaxrl.runners.host import HostRunnerState, make_host_runner
from jaxrl.runners.scan import (
    ChunkLayout,
    LearnerCheckpoint,
    RunConfig,
    Runner,
    RunnerState,
    make_evaluate,
    make_runner,
    make_train,
)
from jaxrl.types import Agent


def make(agent: Agent, env: Any, config: RunConfig, eval_env: Any = None) -> Runner:
    """The runner for ``env``: the Python loop of ``runners/host.py`` for an env stepped on
    the host (``envs.gymnasium.HostEnv``), else the fused program of ``runners/scan.py``."""
    factory = make_host_runner if isinstance(env, HostEnv) else make_runner
    return factory(agent, env, config, eval_env)


__all__ = [
    "ChunkLayout",
    "HostRunnerState",
    "LearnerCheckpoint",
    "RunConfig",
    "Runner",
    "RunnerState",
    "make",
    "make_evaluate",
    "make_host_runner",
    "make_runner",
    "make_train",
]
