"""MJX locomotion (jaxrl/envs/mjx.py) against Gymnasium's own MuJoCo v5 envs (C MuJoCo,
float64): from the same initial state and a fixed action sequence, observations, rewards
and terminations agree step by step; plus the Env contract through ``envs.make``.

Tolerance: MJX computes in float32 (C MuJoCo in float64) and its solver differs in detail
(fixed iteration count, no early exit), so the trajectories start together and part as
float32 rounding accumulates, faster once contacts switch on and off. Measured on
HalfCheetah (benchmarks/journal/2026-11-23-mujoco-mjx-histograms.md): observations
(entries up to ~15) differ by 5e-7 after one env step and 1e-6 after three, and by up to
7e-3 (relative 2e-3) after ten; rewards by at most 3e-4.
So the first ``T0 = 3`` steps must agree to ``2e-5 * (1 + |x|)`` (float32 resolution of
values of order 10, times a few) and all ``T = 12`` steps to ``1e-2 * (1 + |x|)`` on
observations and ``1e-3`` on rewards. A wrong reward term, frame skip, observation slice or
reset definition is off by far more (a missing ``ctrl_cost`` alone is 0.1-0.6 per step).
Each task compiles one program (MJX compiles slowly on CPU), so the episodes are short.
"""

from types import SimpleNamespace

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs import mjx as mjx_envs
from jaxrl.types import Box, ConfigError

T, T0 = 12, 3


def _gym_rollout(task, actions, seed):
    env = gymnasium.make(f"{task}-v5").unwrapped
    obs0, _ = env.reset(seed=seed)
    qpos, qvel = env.data.qpos.copy(), env.data.qvel.copy()
    rows = []
    for a in actions:
        obs, reward, terminated, _, _ = env.step(a)
        rows.append((obs, reward, terminated))
        if terminated:
            break
    env.close()
    obs, rew, term = (np.array(x) for x in zip(*rows, strict=True))
    return qpos, qvel, obs0, obs, rew, term


def _mjx_rollout(task, qpos, qvel, actions):
    core = mjx_envs.make_core(task)

    @jax.jit
    def run(qpos, qvel, actions):
        data, obs0 = core.set_state(qpos, qvel)

        def body(data, a):
            data, obs, reward, terminated = core.step_fn(data, a, jax.random.PRNGKey(0))
            return data, (obs, reward, terminated)

        return obs0, jax.lax.scan(body, data, actions)[1]

    obs0, (obs, rew, term) = run(qpos, qvel, jnp.asarray(actions, jnp.float32))
    return core, np.asarray(obs0), np.asarray(obs), np.asarray(rew), np.asarray(term)


@pytest.mark.parametrize(
    "task, obs_dim, act_dim",
    # One model compiled (about 15 s); the other tasks share this module's step and are
    # held to Gymnasium by their observation sizes and healthy rules below.
    [("HalfCheetah", 17, 6)],
)
def test_matches_gymnasium_v5(task, obs_dim, act_dim):
    rng = np.random.default_rng(0)
    # Hopper gets gentle actions (it stays healthy: termination is test_healthy_*'s).
    scale = 1.0 if task == "HalfCheetah" else 0.3
    actions = (scale * rng.uniform(-1, 1, (T, act_dim))).astype(np.float32)
    qpos, qvel, g_obs0, g_obs, g_rew, g_term = _gym_rollout(task, actions, seed=1)
    core, obs0, obs, rew, term = _mjx_rollout(task, qpos, qvel, actions)
    assert obs.shape == (T, obs_dim) and obs.dtype == np.float32
    assert core.action_space.shape == (act_dim,)
    n = len(g_rew)  # Gymnasium's episode may end early; compare up to there
    tight = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(obs0, g_obs0, **tight)
    np.testing.assert_allclose(obs[:T0], g_obs[:T0], **tight)
    np.testing.assert_allclose(rew[:T0], g_rew[:T0], **tight)
    np.testing.assert_allclose(obs[:n], g_obs, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(rew[:n], g_rew, rtol=0, atol=1e-3)
    np.testing.assert_array_equal(term[:n], g_term)


@pytest.mark.parametrize("task", ["Hopper", "Walker2d", "Ant", "Humanoid"])
def test_healthy_matches_gymnasium(task):
    """The termination rule (``is_healthy``) on states around its thresholds, against
    Gymnasium's property on the same ``qpos``/``qvel`` (no physics, nothing compiled)."""
    env = gymnasium.make(f"{task}-v5").unwrapped
    env.reset(seed=0)
    spec = mjx_envs.TASKS[task]
    rng = np.random.default_rng(1)
    verdicts = []
    for _ in range(100):
        qpos = env.init_qpos + rng.normal(0, 0.6, env.model.nq)
        qvel = rng.normal(0, 40, env.model.nv)  # Hopper: |state| < 100 is part of the rule
        env.data.qpos[:], env.data.qvel[:] = qpos, qvel
        data = SimpleNamespace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))
        mine = bool(spec.healthy_fn(data, spec.params))
        assert mine == bool(env.is_healthy), (task, qpos, qvel)
        verdicts.append(mine)
    assert 0 < sum(verdicts) < len(verdicts)  # both verdicts were exercised
    env.close()


def test_ant_and_humanoid_observation_layout():
    """Ant's 105 = 13 qpos[2:] + 14 qvel + 78 clipped cfrc_ext[1:]; Humanoid's 348 = 22 + 23
    + 130 cinert + 78 cvel + 17 qfrc_actuator[6:] + 78 cfrc_ext (Gymnasium v5), traced only."""
    for task, dim, bound in (("Ant", 105, 1.0), ("Humanoid", 348, 0.4)):
        core = mjx_envs.make_core(task)
        _, obs = jax.eval_shape(core.reset_fn, jax.random.PRNGKey(0))
        assert obs.shape == (dim,), task
        assert core.action_space.high == (bound,) * core.action_space.shape[0]
        gym_env = gymnasium.make(f"{task}-v5")
        assert gym_env.observation_space.shape == (dim,)
        gym_env.close()


def test_vector_env_contract_and_options():
    env = envs.make("HalfCheetah", num_envs=2, max_episode_steps=3, ctrl_cost_weight=0.0)
    assert env.spec.name == "HalfCheetah-mjx" and env.spec.obs_shape == (17,)
    assert env.spec.action_space == Box((6,), (-1.0,) * 6, (1.0,) * 6)
    assert envs.canonical_name("HalfCheetah") == "HalfCheetah-mjx"
    with pytest.raises(ConfigError, match="unknown option 'healthy_reward'.*ctrl_cost_weight"):
        envs.make("HalfCheetah", healthy_reward=1.0)
    with pytest.raises(ConfigError, match="unknown backend 'bullet'.*mjx, brax"):
        envs.make("HalfCheetah", backend="bullet")
    with pytest.raises(ConfigError, match="reset_noise_scale must be >= 0"):
        envs.make("Hopper", reset_noise_scale=-1.0)
