"""Part 1 of issue 13, the pixel and MuJoCo envs: MinAtar Breakout, Atari Pong and MuJoCo
HalfCheetah (MJX), each agent on one of them, shrunk as in ``test_agent_env_matrix.py``
(a separate file, so that the second pytest-xdist worker takes these compiles).

Grouping: compiling one of these programs costs tens of CPU seconds (a CNN torso over
84 x 84 x 4 frames; Brax's physics), so each agent is given one of the three, the first
that fits its action space starting from the agent's own position in the rotation
MinAtar, Atari, MuJoCo; the first agent given MinAtar or Atari **runs** it a few hundred env
steps (``run_pair``: finished, finite metrics, an update happened), the others (and
every MuJoCo pair: minutes of compile for the physics) have
their runner's init **traced** with ``jax.eval_shape`` (networks, buffers and env
state for these observations, without compiling). The classic-control pairs run
every agent (``test_agent_env_matrix.py``); the Atari games share shapes and the ale-py
env, so Pong stands for them; the MuJoCo envs share MJX's physics. An agent that fits
none of the three (tabular Q-learning, the agents of several players) is refused on each
with one line.
"""

from __future__ import annotations

import functools

import jax
import pytest

from jaxrl import agents, envs
from jaxrl.experiment.setup import Launch, build_setup
from tests.experiment.test_agent_env_matrix import fits, run_pair, shrunk


def _first(group: str, prefer: str | None = None) -> str:
    names = [n for n in envs.available() if envs.group(n) == group]
    return prefer if prefer in names else names[0]


ROTATION = [_first("minatar"), _first("atari", "ALE/Pong-v5"), _first("mujoco", "HalfCheetah-mjx")]
# MuJoCo's physics costs minutes of compile on a 2-core CPU: its pairs are traced only.
TRACED_ONLY = {ROTATION[2]}


@functools.cache
def fitting_agents() -> list[str]:
    """The agents that fit one of ``ROTATION`` (not tabular Q-learning's one-hot states,
    nor the agents of several players); found when a test runs, not at collection
    (making the three envs takes seconds in each pytest-xdist worker)."""
    return [a for a in agents.available() if any(fits(a, env) for env in ROTATION)]


def env_for(index: int, agent: str) -> str:
    """The first env of ``ROTATION``, from position ``index``, that ``agent`` fits."""
    for k in range(len(ROTATION)):
        env = ROTATION[(index + k) % len(ROTATION)]
        if fits(agent, env):
            return env
    raise AssertionError(f"agent '{agent}' fits none of {ROTATION}")


@pytest.mark.parametrize("agent", agents.available())
def test_every_agent_runs_or_traces_on_a_pixel_or_mujoco_env(agent, tmp_path):
    if agent not in fitting_agents():
        # Refused on each env with one line naming why (``fits`` raises on another error).
        assert not any(fits(agent, env) for env in ROTATION)
        return
    index = fitting_agents().index(agent)
    env = env_for(index, agent)
    first = all(env_for(i, a) != env for i, a in enumerate(fitting_agents()[:index]))
    if first and env not in TRACED_ONLY:
        run_pair(agent, env, tmp_path)  # the first agent given this env runs it
        return
    # The others build their agent, env and runner and trace the runner's init (networks,
    # buffers, env state) with ``jax.eval_shape``; tracing a whole chunk of every pair cost
    # 10-20 s each, and each agent's chunk already runs on classic control.
    setup = build_setup(shrunk(agent, env), Launch(loggers=[]))
    state = jax.eval_shape(setup.runner.init, jax.random.PRNGKey(0))
    assert jax.tree.leaves(state.agent_state), agent


def test_each_pixel_and_mujoco_env_is_given_to_some_agent():
    assert {env_for(i, a) for i, a in enumerate(fitting_agents())} == set(ROTATION)
