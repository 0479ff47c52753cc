"""IMPALA's LSTM option (agents/on_policy/recurrent_learner.py): the learner's unroll
reproduces acting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.on_policy.core import actor_critic_parts
from jaxrl.agents.on_policy.impala import IMPALAConfig
from jaxrl.agents.on_policy.recurrent_learner import recurrent_parts
from jaxrl.runners.base import RunConfig
from jaxrl.runners.distributed.sebulba import make_sebulba_runner
from jaxrl.runners.scan import make_rollout
from jaxrl.types import ConfigError, Transition
from tests.helpers import rollout_after_one_update

TINY = dict(hidden_sizes=(8,), lstm=True, lstm_size=6, lr=1e-2)
T, N = 40, 4


@pytest.fixture(scope="module")
def setup():
    env = envs.make("CartPole-v1", num_envs=N)
    agent = agents.make("impala", env.spec, **TINY)
    state, ro, update = rollout_after_one_update(agent, env, T)
    done = np.asarray(ro.terminated | ro.truncated)
    assert done[:-1].any()  # an episode ends inside the rollout, another one starts
    cfg = IMPALAConfig(**TINY)  # the parts make_impala builds, for their ``evaluate``
    rnn = recurrent_parts(env.spec, cfg, actor_critic_parts(env.spec, cfg, None, "impala"), 6)
    return state, ro, rnn, update(state, ro, jax.random.PRNGKey(4))


def _evaluate(rnn, state, ro, done):
    carry0 = jax.tree.map(lambda c: c[0], ro.extras["carry"])
    return jax.jit(rnn.evaluate)(state.params, carry0, ro.obs, ro.next_obs, done)


def test_learner_unroll_equals_acting(setup):
    """From the rollout's first carry, with resets where episodes start, the learner's
    log-probabilities and values equal those acting recorded (rtol 1e-5), and its carry
    after each step, reset where the step ended an episode, is the next step's acting
    carry."""
    state, ro, rnn, _ = setup
    done = ro.terminated | ro.truncated
    logits, value, next_value = _evaluate(rnn, state, ro, done)
    log_prob = jax.nn.log_softmax(logits)[jnp.arange(T * N), ro.action.reshape(-1)]
    np.testing.assert_allclose(log_prob.reshape(T, N), ro.extras["log_prob"], rtol=1e-5)
    np.testing.assert_allclose(value, ro.extras["value"], rtol=1e-5, atol=1e-6)
    # V(x_{t+1}) from the carry after step t is the next step's value where no episode ended
    keep = ~np.asarray(done[:-1])
    np.testing.assert_allclose(
        np.asarray(next_value[:-1])[keep], np.asarray(ro.extras["value"][1:])[keep], rtol=1e-5
    )


def test_without_the_resets_the_unroll_differs(setup):
    """The same unroll told that no episode ends: values after the first episode end no
    longer match acting's (so the test above would fail without the reset)."""
    state, ro, rnn, _ = setup
    _, value, _ = _evaluate(rnn, state, ro, jnp.zeros_like(ro.terminated))
    first = int(np.argmax(np.asarray(ro.terminated | ro.truncated).any(1)))
    np.testing.assert_allclose(value[: first + 1], ro.extras["value"][: first + 1], rtol=1e-5)
    assert not np.allclose(value, ro.extras["value"], rtol=1e-3)


def test_update_is_on_policy_and_trains_the_lstm(setup):
    """On the acting rollout the importance ratios are 1 (the learner sees what acting
    saw), and one update moves every parameter, the LSTM's recurrent kernels included."""
    state, _, _, (new, metrics) = setup
    np.testing.assert_allclose(metrics["importance_ratio"], 1.0, rtol=1e-5)
    assert float(metrics["clipped_fraction"]) < 0.6  # only rounding pushes rho over 1
    moved = jax.tree.map(lambda a, b: bool((a != b).any()), new.params, state.params)
    assert all(jax.tree.leaves(moved))
    assert "hf" in new.params["params"]["actor_lstm"]


def test_lstm_shapes_and_gaussian_actions():
    """A shared torso has one LSTM state, separate torsos two; a Box action space acts
    and updates with the same recurrent parts."""
    env = envs.make("Pendulum-v1", num_envs=N)
    agent = agents.make("impala", env.spec, **TINY, shared_torso=True)
    carry = agent.init_carry(N)
    assert set(carry) == {"actor"} and carry["actor"][0].shape == (N, 6)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    env_state, ts = env.reset(jax.random.PRNGKey(1))
    ro = jax.jit(make_rollout(agent, env, 4))(state, env_state, ts.obs, carry, jax.random.key(2))[1]
    assert isinstance(ro, Transition) and ro.extras["carry"]["actor"][1].shape == (4, N, 6)
    new, metrics = jax.jit(agent.update)(state, ro, jax.random.PRNGKey(3))
    np.testing.assert_allclose(metrics["importance_ratio"], 1.0, rtol=1e-5)
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(new.params))
    separate = agents.make("impala", env.spec, **TINY).init_carry(2)
    assert set(separate) == {"actor", "critic"}
    with pytest.raises(ConfigError, match="lstm_size"):
        agents.make("impala", env.spec, lstm=True, lstm_size=0)


def test_lstm_under_sebulba_actors():
    """Sebulba's actors keep each env batch's LSTM state across rollouts and chunks; the
    learner trains on their rollouts with the recorded carries (synchronous: no lag)."""
    env = envs.make("CartPole-v1", num_envs=N)
    agent = agents.make("impala", env.spec, **TINY)
    config = RunConfig(steps=128, rollout_len=8, log_every=64, eval_every=0)
    runner = make_sebulba_runner(agent, env, config, None, 1, 2, synchronous=True)
    state = runner.init(jax.random.PRNGKey(0))
    for _ in range(runner.num_chunks):
        state, metrics = runner.run_chunk(state)
    np.testing.assert_allclose(metrics["importance_ratio"], 1.0, rtol=1e-5)
    assert state.version == 4 and (metrics["policy_lag"] == 0).all()
    for actor in state.actors:
        assert float(jnp.abs(actor.carry["actor"][1]).sum()) > 0
