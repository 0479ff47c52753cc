"""FrozenLake-v1 (envs/gridworld.py) against Gymnasium's: the transition model of every
(state, action) with and without slipping, and fixed action sequences on the
non-slippery lake step for step (observations, rewards, terminations, truncation)."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.gridworld import MAPS, move_table


def model(map_name: str, slippery: bool) -> dict:
    """``(s, a) -> {s': probability}`` and per-state (reward, terminal) of ours, from the
    move table and the slip rule (each of a-1, a, a+1 with 1/3)."""
    desc = MAPS[map_name]
    moves = move_table(desc)
    tiles = "".join(desc)
    out = {}
    for s in range(len(tiles)):
        for a in range(4):
            probs: dict[int, float] = {}
            slips = (-1, 0, 1) if slippery else (0,)
            for k in slips:
                t = int(moves[s, (a + k) % 4])
                probs[t] = probs.get(t, 0.0) + 1 / len(slips)
            out[s, a] = probs
    return out


@pytest.mark.parametrize("map_name", ["4x4", "8x8"])
@pytest.mark.parametrize("slippery", [True, False])
def test_transition_model_matches_gymnasium(map_name, slippery):
    gym_env = gym.make("FrozenLake-v1", map_name=map_name, is_slippery=slippery).unwrapped
    ours = model(map_name, slippery)
    tiles = "".join(MAPS[map_name])
    assert "".join(c.decode() for c in gym_env.desc.reshape(-1)) == tiles
    for (s, a), probs in ours.items():
        if tiles[s] in "GH":  # Gymnasium's absorbing entries are never stepped from
            continue
        theirs: dict[int, float] = {}
        for p, t, r, term in gym_env.P[s][a]:
            theirs[t] = theirs.get(t, 0.0) + p
            assert r == float(tiles[t] == "G") and term == (tiles[t] in "GH")
        assert probs.keys() == theirs.keys()
        np.testing.assert_allclose([probs[t] for t in theirs], list(theirs.values()))


def test_slip_frequencies_follow_the_model():
    env = envs.make("FrozenLake", num_envs=3000)
    state, _ = env.reset(jax.random.PRNGKey(0))
    # From the start (0) going right (2): down to 4, right to 1, up stays at 0, 1/3 each.
    ts = env.step(state, jnp.full((3000,), 2), jax.random.PRNGKey(1))[1]
    freq = np.bincount(np.asarray(ts.obs).argmax(-1), minlength=16)[[0, 1, 4]] / 3000
    np.testing.assert_allclose(freq, [1 / 3] * 3, atol=0.03)


@pytest.mark.parametrize(
    "actions",
    [
        [1, 1, 2, 2, 1, 2],  # down down right right down right: reaches the goal
        [2, 2, 1, 0, 3],  # right right down left: the hole at (1, 1); then a new episode
        [0, 3, 0, 3] * 30,  # bumps the walls until the 100-step time limit
    ],
)
def test_fixed_action_sequences_match_gymnasium(actions):
    gym_env = gym.make("FrozenLake-v1", is_slippery=False)
    env = envs.make("FrozenLake", num_envs=1, is_slippery=False)
    state, first = env.reset(jax.random.PRNGKey(0))
    obs = first.obs
    gym_obs, _ = gym_env.reset(seed=0)
    step = jax.jit(env.step)
    for i, a in enumerate(actions):
        assert int(np.asarray(obs)[0].argmax()) == gym_obs
        state, ts = step(state, jnp.array([a]), jax.random.PRNGKey(i))
        gym_obs, r, term, trunc, _ = gym_env.step(a)
        assert float(ts.reward[0]) == r
        assert bool(ts.terminated[0]) == term and bool(ts.truncated[0]) == trunc
        final = int(np.asarray(ts.info["final_obs"])[0].argmax())
        assert final == gym_obs
        obs = ts.obs
        if term or trunc:
            gym_obs, _ = gym_env.reset()
