"""The host runner: the same layout, metrics (keys, dtypes, shapes) and run directory as
the fused runner; the rollouts it hands to ``update`` are the env's transitions; its
episode statistics and evaluation equal a plain loop over the Gymnasium env."""

from __future__ import annotations

import json

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.runners import (
    ChunkLayout,
    LearnerCheckpoint,
    RunConfig,
    make_host_runner,
    make_runner,
)
from jaxrl.types import Agent
from tests.helpers import TINY_DQN

CONFIG = RunConfig(steps=400, rollout_len=4, log_every=96, eval_every=192, eval_episodes=3)


def test_same_layout_and_metrics_as_fused_runner():
    runners, chunks = {}, {}
    for name in ("CartPole-v1", "gym:CartPole-v1"):
        env = envs.make(name, num_envs=4)
        eval_env = envs.make(name, num_envs=3)
        agent = agents.make("dqn", env.spec, **TINY_DQN)
        host = name.startswith("gym:")
        runner = (make_host_runner if host else make_runner)(agent, env, CONFIG, eval_env)
        init = runner.init if host else jax.jit(runner.init)
        run_chunk = runner.run_chunk if host else jax.jit(runner.run_chunk)
        state = init(jax.random.PRNGKey(0))
        state, first = run_chunk(state)
        state, second = run_chunk(state)  # an evaluation chunk (every 192 steps = 2 chunks)
        runners[name], chunks[name] = runner, (first, second)
        returns = runner.evaluate(state.agent_state, jax.random.PRNGKey(1))
        assert np.shape(returns) == (3,) and np.asarray(returns).dtype == np.float32
    fused, host = runners["CartPole-v1"], runners["gym:CartPole-v1"]
    assert fused.layout == host.layout == ChunkLayout.of(CONFIG, 4)
    for field in ("iterations_per_chunk", "num_chunks", "steps_per_iteration"):
        assert getattr(fused, field) == getattr(host, field)
    assert fused.jittable and not host.jittable
    for f, h in zip(chunks["CartPole-v1"], chunks["gym:CartPole-v1"], strict=True):
        f, h = jax.device_get(f), jax.device_get(h)
        assert sorted(f) == sorted(h)
        for key in f:
            assert np.shape(f[key]) == np.shape(h[key]) == (6,), key
            assert np.asarray(f[key]).dtype == np.asarray(h[key]).dtype, key
        np.testing.assert_array_equal(f["step"], h["step"])
        np.testing.assert_array_equal(np.isnan(f["eval_return"]), np.isnan(h["eval_return"]))
    assert np.isfinite(h["eval_return"][-1])  # the second chunk evaluated


def recording_agent(num_actions: int) -> Agent:
    """Acts by a fixed rule and reports sums over the rollout it is given."""

    def act(state, obs, carry, key, explore=True):
        action = (obs[:, 2] > 0).astype(jnp.int32) % num_actions  # push toward the lean
        return action, carry, {"lean": obs[:, 2]}

    def update(state, rollout, key):
        done = rollout.terminated | rollout.truncated
        return state, {
            "reward_sum": rollout.reward.sum(),
            "done_sum": done.sum().astype(jnp.float32),
            "extras_match": jnp.all(rollout.extras["lean"] == rollout.obs[..., 2]).astype(
                jnp.float32
            ),
            "obs_chain": jnp.abs(rollout.obs[1:] - rollout.next_obs[:-1]).max(
                initial=0.0, where=~done[:-1, :, None]
            ),
        }

    return Agent(init=lambda key: {"n": jnp.zeros(())}, act=act, update=update)


def test_rollouts_and_statistics_equal_a_gymnasium_loop():
    env = envs.make("gym:CartPole-v1", num_envs=2, max_episode_steps=30)
    config = RunConfig(steps=240, rollout_len=8, log_every=80, eval_every=0)
    runner = make_host_runner(recording_agent(2), env, config)
    state = runner.init(jax.random.PRNGKey(0))
    rows = []
    for _ in range(runner.num_chunks):
        state, metrics = runner.run_chunk(state)
        rows.append(metrics)
    m = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    # rollouts: rewards are CartPole's 1 per step; episode ends counted once; extras kept;
    # obs[t+1] == next_obs[t] within an episode
    np.testing.assert_array_equal(m["reward_sum"], 16.0)
    np.testing.assert_array_equal(m["done_sum"], m["episodes"])
    np.testing.assert_array_equal(m["extras_match"], 1.0)
    np.testing.assert_array_equal(m["obs_chain"], 0.0)
    # Reference: the same policy on plain Gymnasium envs, seeded as HostEnv seeds them.
    seed = int(jax.random.randint(jax.random.split(jax.random.PRNGKey(0), 3)[2], (), 0, 2**31 - 1))
    lengths = []
    for i in range(2):
        ref = gym.make("CartPole-v1", max_episode_steps=30)
        obs, _ = ref.reset(seed=seed + i)
        length = 0
        for _ in range(120):
            obs, _, term, trunc, _ = ref.step(int(obs[2] > 0))
            length += 1
            if term or trunc:
                lengths.append(length)
                obs, length = ref.reset()[0], 0
    assert int(m["episodes"].sum()) == len(lengths)
    assert int(m["episode_length_sum"].sum()) == sum(lengths)
    np.testing.assert_allclose(m["episode_return_sum"].sum(), sum(lengths))


def test_host_evaluate_equals_gymnasium_loop():
    env = envs.make("gym:CartPole-v1", num_envs=3)  # evaluates on a fresh copy of it
    runner = make_host_runner(recording_agent(2), env, RunConfig(steps=8, eval_episodes=3))
    state = runner.init(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(5)
    got = runner.evaluate(state.agent_state, key)
    seed = int(jax.random.randint(jax.random.split(key)[1], (), 0, 2**31 - 1))
    expected = []
    for i in range(3):
        ref = gym.make("CartPole-v1")
        obs, _ = ref.reset(seed=seed + i)
        total, done = 0.0, False
        while not done:
            obs, r, term, trunc, _ = ref.step(int(obs[2] > 0))
            total, done = total + r, term or trunc
        expected.append(total)
    np.testing.assert_allclose(got, expected)


def test_host_and_fused_run_directories_match(tmp_path):
    dirs = {}
    for name in ("CartPole-v1", "gym:CartPole-v1"):
        overrides = {f"agent.{k}": v for k, v in TINY_DQN.items()}
        overrides.update({"agent.updates_per_rollout": 1, "run.rollout_len": 4})
        overrides.update({"run.log_every": 256, "run.eval_every": 512, "run.eval_episodes": 2})
        cfg = resolve(agent="dqn", env=name, steps=1024, num_envs=4, overrides=overrides)
        dirs[name] = run_experiment(cfg, tmp_path / name).run_dir
    fused, host = dirs["CartPole-v1"], dirs["gym:CartPole-v1"]
    files = lambda d: sorted(p.name for p in d.iterdir() if not p.name.startswith("events."))
    assert files(fused) == files(host)
    assert "metrics.jsonl" in files(host) and "metrics.csv" in files(host)
    rows = lambda d: [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    assert [list(r) for r in rows(fused)] == [list(r) for r in rows(host)]
    assert [r["step"] for r in rows(host)] == [256, 512, 768, 1024]
    assert [r["eval_return"] is not None for r in rows(host)] == [False, True, False, True]
    header = lambda d: (d / "metrics.csv").read_text().splitlines()[0]
    assert header(fused) == header(host)


def test_chunk_layout():
    # 4 envs x rollout 4 = 16 steps per iteration; 96 // 16 = 6 iterations per chunk;
    # ceil(400 / 96) = 5 chunks; an evaluation every round(192 / 96) = 2 chunks.
    layout = ChunkLayout.of(CONFIG, 4)
    assert layout == ChunkLayout(16, 6, 5, 2, 192)
    assert (layout.steps_per_chunk, layout.total_steps) == (96, 480)
    assert [layout.evaluates(c) for c in range(1, 6)] == [False, True, False, True, False]
    assert bool(jax.jit(layout.evaluates)(jnp.int32(4)))
    steps = layout.iteration_steps(2, np)
    np.testing.assert_array_equal(steps, [112, 128, 144, 160, 176, 192])
    assert steps.dtype == np.int32
    traced = jax.jit(layout.iteration_steps)(jnp.int32(2))
    assert traced.dtype == jnp.int32 and np.array_equal(traced, steps)
    # log_every below one iteration: one iteration per chunk; eval_every 0: never.
    never = ChunkLayout.of(RunConfig(steps=10, rollout_len=4, log_every=3, eval_every=0), 2)
    assert never.iterations_per_chunk == 1 and never.num_chunks == 2  # ceil(10 / 8)
    assert not any(never.evaluates(c) for c in range(1, 3))


def test_runner_says_what_a_checkpoint_holds():
    """The host runner saves the learner only (its env state is a Python object) and a
    restore restarts the envs; the fused runner of a JAX-native env saves everything."""
    env = envs.make("gym:CartPole-v1", num_envs=2)
    agent = agents.make("dqn", env.spec, **TINY_DQN)
    config = RunConfig(steps=64, log_every=16, eval_every=0, eval_episodes=2)
    runner = make_host_runner(agent, env, config)
    assert not runner.jittable
    state = runner.init(jax.random.PRNGKey(0))
    state, _ = runner.run_chunk(state)
    saved = runner.save(state)
    assert isinstance(saved, LearnerCheckpoint) and int(saved.chunk) == 1
    shape = runner.saved_shape(jax.random.PRNGKey(0))
    assert jax.tree.structure(shape) == jax.tree.structure(saved)
    for a, b in zip(jax.tree.leaves(shape), jax.tree.leaves(saved), strict=True):
        assert (a.shape, a.dtype) == (np.shape(b), np.asarray(b).dtype)
    resumed = runner.restore(saved, lambda: runner.init(jax.random.PRNGKey(5)))
    assert resumed.chunk == 1 and np.array_equal(resumed.key, state.key)
    leaves = jax.tree.leaves(resumed.agent_state), jax.tree.leaves(state.agent_state)
    for a, b in zip(*leaves, strict=True):
        np.testing.assert_array_equal(a, b)

    fused_env = envs.make("CartPole-v1", num_envs=2)
    fused = make_runner(agent, fused_env, config)
    assert fused.jittable
    state = jax.jit(fused.init)(jax.random.PRNGKey(0))
    assert fused.save(state) is state
    assert fused.restore(state, lambda: pytest.fail("no fresh state needed")) is state
    shape = fused.saved_shape(jax.random.PRNGKey(0))
    assert jax.tree.structure(shape) == jax.tree.structure(state)
