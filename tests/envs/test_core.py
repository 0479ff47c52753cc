"""make_vector_env: time limit, episode statistics and auto-reset, under jit, scan and vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.envs.core import VectorEnvState, make_vector_env
from jaxrl.types import ConfigError, Discrete, Env, TimeStep

NUM_ENVS = 3
LIMIT = 4
INFO_KEYS = {"final_obs", "episode_return", "episode_length"}


def _counter_env(num_envs: int = NUM_ENVS) -> Env:
    """Toy core: obs ``[x, t]``; action a adds a to x; reward a + 0.5; action 2 terminates.

    The start ``x`` in ``[10, 20)`` is a hash of the reset key, so a test can tell episodes
    apart (taken from the key's bits rather than ``jax.random``, which is slow to compile).
    """

    def reset_fn(key):
        bits = jax.random.key_data(key)[0] >> 8  # 24 random bits
        x = 10.0 + bits.astype(jnp.float32) * (10.0 / 2**24)
        state = {"x": x, "t": jnp.int32(0)}
        return state, jnp.stack([state["x"], 0.0])

    def step_fn(state, action, key):
        del key
        state = {"x": state["x"] + action, "t": state["t"] + 1}
        obs = jnp.stack([state["x"], state["t"].astype(jnp.float32)])
        return state, obs, action + 0.5, action == 2

    return make_vector_env(
        name="Counter-v0",
        obs_shape=(2,),
        obs_dtype="float32",
        action_space=Discrete(3),
        max_episode_steps=LIMIT,
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
    )


def _scripted_actions(steps: int) -> np.ndarray:
    actions = np.random.default_rng(0).choice(3, size=(steps, NUM_ENVS), p=[0.45, 0.45, 0.1])
    actions[:4, 0] = [0, 0, 0, 2]  # terminal on the step the time limit is reached
    actions[:4, 1] = [1, 1, 0, 1]  # cut by the time limit
    actions[:2, 2] = [2, 2]  # two one-step episodes in a row
    return actions.astype(np.int32)


STEPS = 40
ENV = _counter_env()


def _rollout(key, actions):
    """Reset, then step ``ENV`` with ``actions [T, N]`` in a ``lax.scan``."""
    keys = jax.random.split(key, STEPS + 1)
    state, ts0 = ENV.reset(keys[0])

    def body(state, xs):
        state, ts = ENV.step(state, *xs)
        return state, ts

    return ts0, jax.lax.scan(body, state, (actions, keys[1:]))[1]


_rollout_jit = jax.jit(_rollout)


def test_auto_reset_time_limit_and_episode_stats_under_jit_and_scan():
    steps = STEPS
    actions = _scripted_actions(steps)
    ts0, traj = jax.device_get(_rollout_jit(jax.random.key(0), actions))
    obs, reward, term, trunc, info = traj
    assert obs.dtype == np.float32 and info["final_obs"].dtype == np.float32
    assert reward.dtype == np.float32 and term.dtype == bool and trunc.dtype == bool
    assert info["episode_return"].dtype == np.float32
    assert info["episode_length"].dtype == np.int32
    assert set(info) == INFO_KEYS and obs.shape == (steps, NUM_ENVS, 2)

    # Reference, computed step by step from the scripted actions.
    np.testing.assert_array_equal(reward, actions + 0.5)
    x, t, ret = ts0.obs[:, 0].copy(), np.zeros(NUM_ENVS, int), np.zeros(NUM_ENVS)
    starts = [x.copy()]
    n_term = n_trunc = 0
    for s in range(steps):
        a = actions[s]
        x, t, ret = x + a, t + 1, ret + a + 0.5
        np.testing.assert_allclose(info["final_obs"][s, :, 0], x, rtol=1e-6)
        np.testing.assert_array_equal(info["final_obs"][s, :, 1], t)
        want_term = a == 2
        want_trunc = ~want_term & (t == LIMIT)
        np.testing.assert_array_equal(term[s], want_term)
        np.testing.assert_array_equal(trunc[s], want_trunc)
        done = want_term | want_trunc
        n_term, n_trunc = n_term + want_term.sum(), n_trunc + want_trunc.sum()
        np.testing.assert_allclose(info["episode_return"][s], np.where(done, ret, 0), rtol=1e-6)
        np.testing.assert_array_equal(info["episode_length"][s], np.where(done, t, 0))
        # not done: obs is final_obs; done: obs is a fresh episode's first obs
        np.testing.assert_array_equal(obs[s][~done], info["final_obs"][s][~done])
        np.testing.assert_array_equal(obs[s, done, 1], 0.0)
        assert (obs[s, done, 0] >= 10.0).all() and (obs[s, done, 0] < 20.0).all()
        starts.append(obs[s, done, 0])
        x, t, ret = np.where(done, obs[s, :, 0], x), np.where(done, 0, t), np.where(done, 0, ret)
    assert not (term & trunc).any()
    assert n_term >= 5 and n_trunc >= 5
    assert term[3, 0] and not trunc[3, 0]  # terminal at the limit counts as terminated
    assert trunc[3, 1] and info["episode_length"][3, 1] == LIMIT
    starts = np.concatenate(starts)
    assert len(np.unique(starts)) == len(starts)  # every reset drew a fresh start


def test_reset_timestep():
    env = _counter_env()
    state, ts = jax.jit(env.reset)(jax.random.key(1))
    assert isinstance(state, VectorEnvState) and isinstance(ts, TimeStep)
    assert env.spec.num_envs == NUM_ENVS and env.spec.max_episode_steps == LIMIT
    assert set(ts.info) == INFO_KEYS
    np.testing.assert_array_equal(ts.info["final_obs"], ts.obs)
    assert ts.reward.dtype == jnp.float32 and ts.reward.shape == (NUM_ENVS,)
    assert not ts.reward.any() and not ts.terminated.any() and not ts.truncated.any()
    assert ts.terminated.dtype == bool and ts.truncated.dtype == bool
    assert ts.info["episode_return"].dtype == jnp.float32
    assert ts.info["episode_length"].dtype == jnp.int32
    assert not ts.info["episode_return"].any() and not ts.info["episode_length"].any()
    assert len(np.unique(ts.obs[:, 0])) == NUM_ENVS  # each env got its own key
    assert not state.episode_return.any() and not state.episode_length.any()


def test_vmap_over_seeds_of_a_scanned_rollout_matches_single_runs():
    keys = jax.random.split(jax.random.key(2), 3)
    actions = np.random.default_rng(3).integers(0, 3, (3, STEPS, NUM_ENVS), dtype=np.int32)
    batched = jax.jit(jax.vmap(_rollout))(keys, actions)
    for i in range(3):
        single = _rollout_jit(keys[i], actions[i])  # same shapes as above: no recompile
        jax.tree.map(lambda b, s, i=i: np.testing.assert_array_equal(b[i], s), batched, single)
    done = batched[1].terminated | batched[1].truncated
    assert done.any(axis=(1, 2)).all()
    returns = batched[1].info["episode_return"]
    assert not np.array_equal(returns[0], returns[1])  # seeds differ


def test_wrong_action_shape_is_an_error():
    key = jax.random.key(0)
    state, _ = jax.eval_shape(ENV.reset, key)  # shapes only: nothing is compiled
    with pytest.raises(ValueError, match=r"Counter-v0: expected actions of shape \(3,\)"):
        jax.eval_shape(ENV.step, state, jnp.zeros((3, 1), jnp.int32), key)


@pytest.mark.parametrize("value", [0, -1, 2.0, True, "4"])
def test_bad_num_envs_is_a_config_error(value):
    with pytest.raises(ConfigError, match=f"^num_envs must be a positive int, got {value!r}$"):
        _counter_env(num_envs=value)


def test_turn_based_spec_and_documented_partial():
    from jaxrl.envs.core import documented_partial, turn_based_spec
    from jaxrl.types import ACTION_MASK, ArraySpec, EnvSpec

    mask = (ArraySpec(ACTION_MASK, (7,), "bool"),)
    want = EnvSpec("g", (6, 7, 2), "float32", Discrete(7), 4, 42, mask, 2, True)
    assert turn_based_spec("g", (6, 7, 2), 7, 4, 42, 2) == want
    bare = turn_based_spec("g", (6, 7, 2), 7, 4, 42, 2, masked=False)
    assert bare.obs_extras == () and bare.turn_based and bare.num_players == 2

    make = documented_partial("doc", lambda *a, **k: (a, k), "task", backend="b")
    assert make.__doc__ == "doc" and make(3) == (("task", 3), {"backend": "b"})
