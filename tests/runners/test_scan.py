"""The fused runner: layout of iterations and chunks, chunked == fused, vmap over seeds,
schedule conds that stay real branches under vmap, and greedy evaluation."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import agents, envs
from jaxrl.runners import RunConfig, make_evaluate, make_runner, make_train
from jaxrl.types import Agent
from tests.helpers import TINY_DQN

CONFIG = RunConfig(steps=400, rollout_len=4, log_every=96, eval_every=192)


def dqn_setup(num_envs=4):
    env = envs.make("CartPole-v1", num_envs=num_envs)
    agent = agents.make("dqn", env.spec, **TINY_DQN)
    return agent, env


def sub_jaxprs(params):
    for value in params.values():
        for x in value if isinstance(value, tuple | list) else (value,):
            if hasattr(x, "eqns"):
                yield x
            elif hasattr(getattr(x, "jaxpr", None), "eqns"):
                yield x.jaxpr


def count_primitives(jaxpr, name):
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == name
        for sub in sub_jaxprs(eqn.params):
            count += count_primitives(sub, name)
    return count


def test_layout_and_metrics():
    agent, env = dqn_setup()
    runner = make_runner(agent, env, CONFIG)
    assert runner.steps_per_iteration == 16
    assert runner.iterations_per_chunk == 6  # 96 // 16
    assert runner.num_chunks == 5  # ceil(400 / 96)
    _, metrics = jax.jit(make_train(agent, env, CONFIG))(jax.random.PRNGKey(0))
    steps = np.asarray(metrics["step"])
    np.testing.assert_array_equal(steps, 16 * np.arange(1, 31))
    eval_rows = np.flatnonzero(~np.isnan(np.asarray(metrics["eval_return"])))
    np.testing.assert_array_equal(eval_rows, [11, 23])  # every 2nd chunk's last iteration
    loss = np.asarray(metrics["loss"])
    assert np.isnan(loss[steps < 64]).all() and np.isfinite(loss[steps >= 64]).all()
    # CartPole pays 1 per step, so raw returns equal lengths; each finished episode counted.
    np.testing.assert_array_equal(metrics["episode_return_sum"], metrics["episode_length_sum"])
    total = int(np.sum(metrics["episode_length_sum"]))
    assert 0 < total <= 30 * 16 and int(np.sum(metrics["episodes"])) > 0


def test_chunked_driver_equals_fused_train():
    agent, env = dqn_setup()
    key = jax.random.PRNGKey(3)
    fused_state, fused = jax.jit(make_train(agent, env, CONFIG))(key)
    runner = make_runner(agent, env, CONFIG)
    state = jax.jit(runner.init)(key)
    run_chunk = jax.jit(runner.run_chunk)
    chunks = []
    for _ in range(runner.num_chunks):
        state, m = run_chunk(state)
        chunks.append(m)
    # Same experience exactly (counts are integers); floats up to XLA's fusion rounding.
    for name in fused:
        got = np.concatenate([np.asarray(c[name]) for c in chunks])
        np.testing.assert_allclose(got, np.asarray(fused[name]), rtol=1e-5, err_msg=name)
    for name in ("step", "episodes", "episode_length_sum"):
        np.testing.assert_array_equal(np.concatenate([c[name] for c in chunks]), fused[name])
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    jax.tree.map(close, state.agent_state.params, fused_state.agent_state.params)


def test_vmap_over_seeds_matches_single_runs_and_keeps_conds():
    agent, env = dqn_setup(num_envs=2)
    config = RunConfig(steps=192, rollout_len=4, log_every=64, eval_every=128)
    train = make_train(agent, env, config)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    _, batched = jax.jit(jax.vmap(train))(keys)
    for i in range(2):
        _, single = jax.jit(train)(keys[i])
        for name in ("step", "episodes", "episode_return_sum", "epsilon"):
            np.testing.assert_allclose(batched[name][i], single[name], rtol=1e-6, err_msg=name)
    # The learning cond (DQN) and the evaluation cond (runner) stay conds under vmap:
    # a batched predicate would turn them into select_n over both branches.
    conds = count_primitives(jax.make_jaxpr(train)(keys[0]).jaxpr, "cond")
    vmapped = count_primitives(jax.make_jaxpr(jax.vmap(train))(keys).jaxpr, "cond")
    assert conds >= 2 and vmapped == conds


def test_vmap_over_hyperparameters():
    agent, env = dqn_setup(num_envs=2)
    config = RunConfig(steps=128, rollout_len=4, log_every=64, eval_every=0)
    train = make_train(agent, env, config)
    hparams = jax.jit(agent.init)(jax.random.PRNGKey(0)).hparams
    sweep = jax.tree.map(lambda x: jnp.stack([x, x]), hparams)
    sweep = sweep.replace(epsilon_end=jnp.array([0.5, 0.0]), lr=jnp.array([1e-3, 1e-2]))
    state, metrics = jax.jit(jax.vmap(train, in_axes=(None, 0)))(jax.random.PRNGKey(0), sweep)
    np.testing.assert_allclose(np.asarray(state.agent_state.hparams.lr), [1e-3, 1e-2])
    assert float(metrics["epsilon"][0, -1]) > float(metrics["epsilon"][1, -1])


def constant_agent(action: int) -> Agent:
    return Agent(
        init=lambda key: {},
        act=lambda s, obs, carry, key, explore=True: (
            jnp.full(obs.shape[0], action, jnp.int32),
            carry,
            {},
        ),
        update=lambda s, rollout, key: (s, {}),
    )


def test_evaluate_returns_each_first_episode_return():
    env = envs.make("CartPole-v1", num_envs=5)
    key = jax.random.PRNGKey(7)
    got = np.asarray(jax.jit(make_evaluate(constant_agent(0), env))({}, key))
    # Manual loop with the same reset key: pushing left ends every episode early.
    _, reset_key = jax.random.split(key)
    env_state, ts = env.reset(reset_key)
    returns, finished = np.zeros(5), np.zeros(5, bool)
    step = jax.jit(env.step)
    while not finished.all():
        env_state, ts = step(env_state, jnp.zeros(5, jnp.int32), jax.random.PRNGKey(0))
        returns += np.where(finished, 0.0, np.asarray(ts.reward))
        finished |= np.asarray(ts.terminated | ts.truncated)
    np.testing.assert_allclose(got, returns)
    assert (got < 20).all() and (got > 5).all()
