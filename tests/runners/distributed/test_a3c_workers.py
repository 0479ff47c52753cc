"""A3C's asynchronous workers (runners/distributed/a3c_workers.py, agents/on_policy/a3c.py):
one worker computes what synchronous A2C computes; two workers apply stale gradients with a
lag bounded by one."""

import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.runners.base import RunConfig
from jaxrl.runners.distributed.a3c_workers import make_a3c_runner
from jaxrl.runners.distributed.sebulba import make_sebulba_runner
from jaxrl.types import ConfigError
from tests.runners.distributed.test_sebulba import _train

CONFIG = RunConfig(steps=320, rollout_len=5, log_every=160, eval_every=160, eval_episodes=2)
OPTIONS = {"hidden_sizes": (8,), "lr": 1e-2, "entropy_weight": 0.01}


@pytest.fixture(scope="module")
def one_worker():
    env = envs.make("CartPole-v1", num_envs=4)
    eval_env = envs.make("CartPole-v1", num_envs=2)
    a3c = agents.make("a3c", env.spec, **OPTIONS)
    # A2C with A3C's optimizer (RMSProp 0.99 / 6.25e-5), through Sebulba's synchronous
    # learner with one actor: the same rollouts, keys and env batches.
    same = {"optimizer": "rmsprop", "rmsprop_decay": 0.99, "rmsprop_eps": 6.25e-5}
    a2c = agents.make("a2c", env.spec, **OPTIONS, **same)
    a3c_run = _train(make_a3c_runner(a3c, env, CONFIG, eval_env, workers=1))
    a2c_run = _train(make_sebulba_runner(a2c, env, CONFIG, eval_env, 1, 1, True))
    return a3c_run, a2c_run


def test_one_worker_equals_synchronous_a2c(one_worker):
    """16 updates of A3C with one worker equal A2C's to rtol 1e-6: the same operations,
    but A2C's update is one jitted program (its gradient step inside a scan of one
    minibatch) and A3C's two (gradient, then apply), which XLA may fuse differently."""
    (a3c, m3), (a2c, m2) = one_worker
    assert int(a3c.agent_state.updates) == int(a2c.agent_state.updates) == 16 == a3c.version
    leaves = zip(jax.tree.leaves(a3c.agent_state), jax.tree.leaves(a2c.agent_state), strict=True)
    for x, y in leaves:
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(m3["episode_return_sum"], m2["episode_return_sum"])
    np.testing.assert_allclose(m3["policy_loss"], m2["policy_loss"], rtol=1e-5, atol=1e-6)
    assert (m3["policy_lag"] == 0).all() and m3["step"][-1] == 320


def test_two_workers_apply_stale_gradients_with_bounded_lag():
    """A worker at most 0 gradients ahead of the other: a gradient is at most 1 stale."""
    env = envs.make("CartPole-v1", num_envs=4)
    agent = agents.make("a3c", env.spec, **OPTIONS)
    runner = make_a3c_runner(agent, env, CONFIG, None, workers=2, max_lead=0)
    state, metrics = _train(runner, seed=1)
    assert int(state.agent_state.updates) == 16 == state.version
    assert int(state.agent_state.step) == 320 and len(state.actors) == 2
    lag = metrics["policy_lag"]
    assert ((lag >= 0) & (lag <= 1)).all() and (metrics["apply_wait_s"] >= 0).all()
    assert np.isfinite(metrics["policy_loss"]).all()


def test_the_update_is_its_gradient_applied():
    env = envs.make("CartPole-v1", num_envs=2)
    agent = agents.make("a3c", env.spec, **OPTIONS)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    runner = make_a3c_runner(agent, env, CONFIG, None, workers=1)
    transitions = runner.init(jax.random.PRNGKey(1))  # any rollout: collect one
    from jaxrl.runners.scan import make_rollout

    actor = transitions.actors[0]
    _, rollout, _ = make_rollout(agent, env, 5)(
        state, actor.env_state, actor.obs, actor.carry, jax.random.PRNGKey(2)
    )
    key = jax.random.PRNGKey(3)
    whole, _ = jax.jit(agent.update)(state, rollout, key)
    split = agent.split_update
    assert split is not None
    parts = jax.jit(lambda s: split.apply(s, split.gradient(s, rollout, key)))
    jax.tree.map(np.testing.assert_array_equal, whole, parts(state))
    with pytest.raises(ConfigError, match="update splits into gradient and apply"):
        make_a3c_runner(agents.make("a2c", env.spec), env, CONFIG)
