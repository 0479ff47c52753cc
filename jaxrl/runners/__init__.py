"""Runners: the fused on-device training loop (``scan.py``), the host loop (``host.py``),
the programs of games (``games/``: self-play, independent agents) and those beyond one
fused program (``distributed/``: actor threads, devices, jobs of several processes), with
one ``Runner`` interface and one ``ChunkLayout`` (``base.py``); ``make`` picks the one an
env needs."""

from __future__ import annotations

from typing import Any

from jaxrl.envs.gymnasium import HostEnv
from jaxrl.runners.base import ChunkLayout, LearnerCheckpoint, RunConfig, Runner, RunnerState
from jaxrl.runners.games.self_play import make_self_play_runner
from jaxrl.runners.host import HostRunnerState, make_host_runner
from jaxrl.runners.scan import make_evaluate, make_runner, make_train
from jaxrl.types import Agent


def make(agent: Agent, env: Any, config: RunConfig, eval_env: Any = None) -> Runner:
    """The runner for ``env``: the Python loop of ``runners/host.py`` for an env stepped on
    the host (``envs.gymnasium.HostEnv``), the self-play program of ``runners/games/self_play.py``
    for a turn-based game of several players, else the fused program of ``runners/scan.py``
    (for a simultaneous-move game, with the players' mean return logged: ``envs.marl``)."""
    if isinstance(env, HostEnv):
        factory = make_host_runner
    elif env.spec.num_players > 1 and not env.spec.turn_based:  # simultaneous moves (MPE)
        from jaxrl.envs.marl import team_view

        return make_runner(agent, team_view(env), config, team_view(eval_env or env))
    elif env.spec.num_players > 1:
        factory = make_self_play_runner
    else:
        factory = make_runner
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
    "make_self_play_runner",
    "make_train",
]
