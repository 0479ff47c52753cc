"""Part 1 of issue 13, the pixel and MuJoCo envs: every agent runs a few hundred env
steps on one of MinAtar Breakout, Atari Pong and MuJoCo HalfCheetah (Brax), shrunk and
checked as in ``test_agent_env_matrix.py`` (a separate file, so that the second
pytest-xdist worker takes these compiles).

Grouping: compiling one of these programs costs several seconds (a CNN torso; Brax's
physics), so each agent runs on one of them, not all: the first that fits its action
space, starting from the agent's own position in the rotation MinAtar, Atari, MuJoCo, so
that every one of the three is run by several agents. The Atari games share shapes
(84 x 84 x 4 frames, the same ale-py XLA env), so Pong stands for them; the MuJoCo envs
share Brax's physics, so HalfCheetah stands for them.
"""

from __future__ import annotations

import pytest

from jaxrl import agents, envs
from tests.experiment.test_agent_env_matrix import fits, run_pair


def _first(group: str, prefer: str | None = None) -> str:
    names = [n for n in envs.available() if envs.group(n) == group]
    return prefer if prefer in names else names[0]


ROTATION = [_first("minatar"), _first("atari", "ALE/Pong-v5"), _first("mujoco")]
AGENTS = list(agents.available())


def env_for(index: int, agent: str) -> str:
    """The first env of ``ROTATION``, from position ``index``, that ``agent`` fits."""
    for k in range(len(ROTATION)):
        env = ROTATION[(index + k) % len(ROTATION)]
        if fits(agent, env):
            return env
    raise AssertionError(f"agent '{agent}' fits none of {ROTATION}")


@pytest.mark.parametrize("index, agent", list(enumerate(AGENTS)), ids=AGENTS)
def test_every_agent_runs_on_a_pixel_or_mujoco_env(index, agent, tmp_path):
    run_pair(agent, env_for(index, agent), tmp_path)


def test_each_pixel_and_mujoco_env_is_run_by_some_agent():
    assert {env_for(i, a) for i, a in enumerate(AGENTS)} == set(ROTATION)
