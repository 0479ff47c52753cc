"""The on-policy learners' rollout bookkeeping (``agents/on_policy/batches.py``): learning
rewards clipped before they are scaled (NumPy reference of the running return's std), and
the state after an update (counters, observation statistics) with and without
``normalize_obs``."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents.on_policy.batches import after_update, learning_rewards
from jaxrl.agents.on_policy.config import ActorCriticConfig, ActorCriticHparams
from jaxrl.agents.on_policy.core import ActorCriticState
from jaxrl.ops.normalization import init_running_stats
from jaxrl.types import Transition

T, N, GAMMA = 5, 3, 0.9


def _state() -> ActorCriticState:
    h = ActorCriticHparams(*(jnp.float32(x) for x in (1e-3, GAMMA, 0.95, 0.01, 0.5, 0.5)))
    return ActorCriticState(
        params={"w": jnp.zeros(2)},
        opt_state=(),
        obs_stats=init_running_stats((2,)),
        return_stats=init_running_stats(),
        discounted_return=jnp.asarray([0.5, -1.0, 2.0], jnp.float32),
        step=jnp.int32(7),
        updates=jnp.int32(3),
        hparams=h,
    )


def _rollout() -> Transition:
    rng = np.random.default_rng(0)
    f = lambda x, dtype=jnp.float32: jnp.asarray(x, dtype)
    return Transition(
        obs=f(rng.normal(size=(T, N, 2)) * 3 + 1),
        action=f(np.zeros((T, N)), jnp.int32),
        reward=f(rng.normal(size=(T, N)) * 5),
        next_obs=f(rng.normal(size=(T, N, 2))),
        terminated=f(rng.random((T, N)) < 0.3, bool),
        truncated=f(np.zeros((T, N)), bool),
        extras={},
    )


@pytest.mark.parametrize("normalize_reward", [False, True])
def test_learning_rewards_clips_then_scales(normalize_reward):
    cfg = ActorCriticConfig(reward_clip=1.0, normalize_reward=normalize_reward)
    state, rollout = _state(), _rollout()
    stats, g_out, reward = learning_rewards(cfg, state, rollout)
    clipped = np.clip(np.asarray(rollout.reward, np.float64), -1.0, 1.0)
    if not normalize_reward:
        np.testing.assert_array_equal(reward, np.asarray(jnp.clip(rollout.reward, -1.0, 1.0)))
        np.testing.assert_array_equal(g_out, state.discounted_return)
        assert stats is state.return_stats
        return
    g, seen = np.asarray(state.discounted_return, np.float64), []
    for t in range(T):  # the running discounted return, reset where an episode ended
        g = g * GAMMA + clipped[t]
        seen.append(g)
        g = np.where(np.asarray(rollout.terminated[t]), 0.0, g)
    seen = np.ravel(seen)
    count = 1e-4 + seen.size
    var = (1e-4 + seen.var() * seen.size + seen.mean() ** 2 * 1e-4 * seen.size / count) / count
    np.testing.assert_allclose(g_out, g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.var, var, rtol=1e-4)
    np.testing.assert_allclose(reward, np.clip(clipped / np.sqrt(var + 1e-8), -10, 10), rtol=1e-4)


@pytest.mark.parametrize("normalize_obs", [False, True])
def test_after_update_advances_counters_and_obs_stats(normalize_obs):
    cfg = ActorCriticConfig(normalize_obs=normalize_obs)
    state, rollout = _state(), _rollout()
    params, stats, g = {"w": jnp.ones(2)}, init_running_stats(), jnp.zeros(N)
    new = after_update(cfg, state, rollout, params, ("opt",), stats, g, 6)
    assert int(new.step) == 7 + T * N and int(new.updates) == 3 + 6
    assert new.params is params and new.opt_state == ("opt",) and new.return_stats is stats
    obs = np.asarray(rollout.obs, np.float64).reshape(-1, 2)
    if normalize_obs:  # the running mean starts at 0 with a count of 1e-4
        np.testing.assert_allclose(new.obs_stats.mean, obs.mean(0) * 15 / (15 + 1e-4), rtol=1e-5)
        np.testing.assert_allclose(new.obs_stats.count, 15 + 1e-4, rtol=1e-6)
    else:
        assert new.obs_stats is state.obs_stats
