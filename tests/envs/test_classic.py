"""The JAX classic-control envs step exactly like Gymnasium's.

Each env is rolled out in JAX (one jitted ``lax.scan``, 4 envs: even ones follow a
heuristic that ends episodes by termination or balances until the time limit, odd ones act
at random), then the same actions are replayed in Gymnasium, starting from the JAX reset
states. Every observation, reward, terminated and truncated flag is compared, and the
internal state too while the episode goes on. At every episode end Gymnasium is reset and
re-synced to the JAX env's new start state.

CartPole and Acrobot are chaotic: rounding-level differences (1e-16) grow to 1e-9 within 40
steps of an open-loop replay in float64 (1e-4 within 25 steps in float32), so the replay
re-syncs Gymnasium's state to the JAX state every ``resync`` steps (20 in float64, 10 in
float32); between re-syncs the two trajectories run freely.
"""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.types import Box, Discrete

NUM_ENVS = 4
NAMES = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"]


def _policy(name: str, obs: jax.Array, u: jax.Array) -> jax.Array:
    """Heuristic actions on even env indices, random ones (from uniforms ``u``) on odd ones."""
    heuristic = jnp.arange(obs.shape[0]) % 2 == 0
    if name == "CartPole-v1":  # balances until the time limit
        h = obs[:, 2] + 0.5 * obs[:, 3] + 0.01 * obs[:, 0] + 0.1 * obs[:, 1] > 0
        return jnp.where(heuristic, h, u < 0.5).astype(jnp.int32)
    if name in ("Acrobot-v1", "MountainCar-v0"):
        # Acrobot: torque along the second joint's velocity swings up fast;
        # MountainCar: pushing along the velocity reaches the goal.
        h = jnp.where(obs[:, 5 if name == "Acrobot-v1" else 1] >= 0, 2, 0)
        return jnp.where(heuristic, h, jnp.floor(3 * u)).astype(jnp.int32)
    if name == "MountainCarContinuous-v0":  # out-of-range actions test clipping and reward
        h = jnp.where(obs[:, 1] >= 0, 1.3, -1.3)
        return jnp.where(heuristic, h, 3 * u - 1.5)[:, None].astype(jnp.float32)
    assert name == "Pendulum-v1"
    return (5 * u - 2.5)[:, None].astype(jnp.float32)


def _rollout(name: str, steps: int, seed: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Reset and step ``NUM_ENVS`` envs for ``steps`` steps; returns host arrays ``[T, N]``."""
    env = envs.make(name, num_envs=NUM_ENVS)

    def run(key, uniforms):
        keys = jax.random.split(key, steps + 1)
        state, ts = env.reset(keys[0])

        def body(carry, xs):
            state, obs = carry
            step_key, u = xs
            action = _policy(name, obs, u)
            state, ts = env.step(state, action, step_key)
            out = dict(
                action=action,
                core=state.core,
                obs=ts.obs,
                final_obs=ts.info["final_obs"],
                reward=ts.reward,
                terminated=ts.terminated,
                truncated=ts.truncated,
            )
            return (state, ts.obs), out

        _, out = jax.lax.scan(body, (state, ts.obs), (keys[1:], uniforms))
        return state.core, out

    uniforms = np.random.default_rng(seed).random((steps, NUM_ENVS), np.float32)
    return jax.device_get(jax.jit(run)(jax.random.key(seed), uniforms))


def _gym_obs_of_state(gym_env: gym.Env) -> np.ndarray:
    u = gym_env.unwrapped
    if hasattr(u, "_get_ob"):  # Acrobot
        return u._get_ob()
    if hasattr(u, "_get_obs"):  # Pendulum
        return u._get_obs()
    return np.asarray(u.state, np.float32)


def _replay(name: str, start: np.ndarray, out: dict[str, np.ndarray], resync: int) -> dict:
    """Step Gymnasium with the recorded actions; returns its outputs stacked like ``out``."""
    steps = out["reward"].shape[0]
    ref = {k: np.zeros_like(out[k]) for k in ("final_obs", "reward", "terminated", "truncated")}
    ref["core"] = np.full(out["core"].shape, np.nan)  # NaN where an episode ended
    ref["obs_after_reset"] = out["obs"].copy()
    for i in range(NUM_ENVS):
        gym_env = gym.make(name, disable_env_checker=True)
        gym_env.reset(seed=i)
        gym_env.unwrapped.state = np.array(start[i], np.float64)
        for t in range(steps):
            action = out["action"][t, i]
            action = int(action) if action.ndim == 0 else np.asarray(action, np.float32)
            obs, reward, terminated, truncated, _ = gym_env.step(action)
            ref["final_obs"][t, i] = obs
            ref["reward"][t, i] = reward
            ref["terminated"][t, i] = terminated
            # gymnasium's TimeLimit may also truncate on a terminal step; jaxrl never does
            ref["truncated"][t, i] = truncated and not terminated
            if terminated or truncated:
                gym_env.reset()
                gym_env.unwrapped.state = np.array(out["core"][t, i], np.float64)
                ref["obs_after_reset"][t, i] = _gym_obs_of_state(gym_env)
            else:
                ref["core"][t, i] = np.asarray(gym_env.unwrapped.state, np.float64)
                if (t + 1) % resync == 0:
                    gym_env.unwrapped.state = np.array(out["core"][t, i], np.float64)
    return ref


def _check(name, steps, seed, *, state_atol, obs_atol, resync, rtol=0.0):
    start, out = _rollout(name, steps, seed)
    ref = _replay(name, start, out, resync)
    np.testing.assert_array_equal(out["terminated"], ref["terminated"], err_msg="terminated")
    np.testing.assert_array_equal(out["truncated"], ref["truncated"], err_msg="truncated")
    alive = ~np.isnan(ref["core"])
    np.testing.assert_allclose(out["core"][alive], ref["core"][alive], rtol=rtol, atol=state_atol)
    np.testing.assert_allclose(out["final_obs"], ref["final_obs"], rtol=rtol, atol=obs_atol)
    np.testing.assert_allclose(out["obs"], ref["obs_after_reset"], rtol=0, atol=obs_atol)
    np.testing.assert_allclose(out["reward"], ref["reward"], rtol=1e-6, atol=obs_atol)
    return out


# name -> (steps, at least this many terminations, at least this many truncations)
EXPECTED_ENDS = {
    "CartPole-v1": (600, 10, 2),
    "Acrobot-v1": (600, 4, 1),
    "MountainCar-v0": (450, 4, 4),
    "MountainCarContinuous-v0": (1100, 10, 1),
    "Pendulum-v1": (450, 0, 8),
}


@pytest.mark.default_codegen  # float64 to 1e-9: the precision of sin/cos as fused
@pytest.mark.parametrize("name", NAMES)
def test_matches_gymnasium_in_float64(name):
    steps, min_terminated, min_truncated = EXPECTED_ENDS[name]
    # Gymnasium's MountainCarContinuous stores its state as float32, so it is the reference
    # only to float32 precision; every other env runs in float64 there.
    state_atol = 1e-6 if name == "MountainCarContinuous-v0" else 1e-9
    with jax.enable_x64(True):
        out = _check(name, steps, seed=0, state_atol=state_atol, obs_atol=2e-6, resync=20)
        assert out["core"].dtype == np.float64
    assert out["obs"].dtype == out["final_obs"].dtype == out["reward"].dtype == np.float32
    assert out["terminated"].dtype == out["truncated"].dtype == bool
    assert out["terminated"].sum() >= min_terminated
    assert out["truncated"].sum() >= min_truncated
    assert not (out["terminated"] & out["truncated"]).any()


@pytest.mark.parametrize("name", NAMES)
def test_matches_gymnasium_in_float32(name):
    steps = 250 if name != "MountainCarContinuous-v0" else 1050
    out = _check(name, steps, seed=1, state_atol=1e-4, obs_atol=1e-4, resync=10, rtol=1e-4)
    assert out["core"].dtype == np.float32
    assert (out["terminated"] | out["truncated"]).any()


@pytest.mark.parametrize("name", NAMES)
def test_spec_and_reset_distribution_match_gymnasium(name):
    env = envs.make(name, num_envs=512)
    gym_env = gym.make(name)
    spec, space = env.spec, gym_env.action_space
    assert spec.name == name
    assert spec.max_episode_steps == gym.spec(name).max_episode_steps
    assert spec.obs_shape == gym_env.observation_space.shape
    assert spec.obs_dtype == "float32"
    if isinstance(space, gym.spaces.Discrete):
        assert spec.action_space == Discrete(int(space.n))
    else:
        assert spec.action_space == Box(space.shape, tuple(space.low), tuple(space.high))

    state, ts = jax.jit(env.reset)(jax.random.key(0))
    core = np.asarray(state.core)
    refs = []
    for i in range(16):
        gym_env.reset(seed=i)
        refs.append(np.asarray(gym_env.unwrapped.state, np.float64))
        gym_env.unwrapped.state = core[i]
        np.testing.assert_allclose(ts.obs[i], _gym_obs_of_state(gym_env), atol=1e-7)
    refs = np.stack(refs)
    # same support as Gymnasium's initial-state distribution, and not a degenerate one
    low, high = {
        "CartPole-v1": ([-0.05] * 4, [0.05] * 4),
        "Acrobot-v1": ([-0.1] * 4, [0.1] * 4),
        "MountainCar-v0": ([-0.6, 0.0], [-0.4, 0.0]),
        "MountainCarContinuous-v0": ([-0.6, 0.0], [-0.4, 0.0]),
        "Pendulum-v1": ([-np.pi, -1.0], [np.pi, 1.0]),
    }[name]
    for sample in (core, refs):
        assert (sample >= np.float32(low)).all() and (sample <= np.float32(high)).all()
    width = np.float32(high) - np.float32(low)
    np.testing.assert_allclose(core.max(0) - core.min(0), width, atol=0.02 * width.max())
    assert ts.obs.dtype == jnp.float32 and ts.obs.shape == (512, *spec.obs_shape)
