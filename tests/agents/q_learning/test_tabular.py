"""Tabular Q-learning (agents/q_learning/tabular.py): the update against a NumPy loop, acting
(epsilon, random tie-breaking), the order of a rollout's updates, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.q_learning.tabular import greedy_random_ties, q_update
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, Transition

S, A = 5, 3
SPEC = EnvSpec("OneHot5", (S,), "bool", Discrete(A), 2, 10)


def reference(q, s, a, r, s_next, term, alpha, gamma):
    q = np.array(q, np.float64)
    for i in range(len(s)):
        target = r[i] + gamma * (1.0 - term[i]) * q[s_next[i]].max()
        q[s[i], a[i]] += alpha * (target - q[s[i], a[i]])
    return q


def transitions(rng, m):
    return (
        rng.integers(0, S, m),
        rng.integers(0, A, m),
        rng.normal(size=m).astype(np.float32),
        rng.integers(0, S, m),
        rng.random(m) < 0.3,
    )


def test_q_update_matches_a_numpy_loop_in_order():
    rng = np.random.default_rng(0)
    q0 = rng.normal(size=(S, A)).astype(np.float32)
    s, a, r, s_next, term = transitions(rng, 40)  # 40 updates of 15 pairs: repeats
    got = q_update(jnp.asarray(q0), s, a, r, s_next, term, 0.3, 0.9)
    np.testing.assert_allclose(got, reference(q0, s, a, r, s_next, term, 0.3, 0.9), rtol=1e-5)


def test_update_applies_the_rollout_time_major_env_by_env():
    agent = agents.make("tabular_q", SPEC, alpha=0.5, gamma=0.8)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    rng = np.random.default_rng(1)
    t, n = 4, 2
    s, a, r, s_next, term = transitions(rng, t * n)
    onehot = lambda x: jax.nn.one_hot(x.reshape(t, n), S)
    rollout = Transition(
        obs=onehot(s),
        action=jnp.asarray(a.reshape(t, n), jnp.int32),
        reward=jnp.asarray(r.reshape(t, n)),
        next_obs=onehot(s_next),
        terminated=jnp.asarray(term.reshape(t, n)),
        truncated=jnp.zeros((t, n), bool),
        extras={},
    )
    new, metrics = jax.jit(agent.update)(state, rollout, jax.random.PRNGKey(2))
    want = reference(np.zeros((S, A)), s, a, r, s_next, term, 0.5, 0.8)
    np.testing.assert_allclose(new.q, want, rtol=1e-5, atol=1e-7)
    assert int(new.step) == t * n and np.isfinite(float(metrics["q_mean"]))


def test_acting_breaks_ties_at_random_and_explores_by_epsilon():
    q = jnp.array([[1.0, 0.0, 1.0]] * 4000)
    actions = np.asarray(greedy_random_ties(jax.random.PRNGKey(0), q))
    assert set(np.unique(actions)) == {0, 2}
    assert abs((actions == 0).mean() - 0.5) < 0.05
    agent = agents.make("tabular_q", SPEC, epsilon_start=1.0, epsilon_decay_steps=100)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    state = state.replace(q=state.q.at[3, 1].set(1.0))
    obs = jax.nn.one_hot(jnp.full((4000,), 3), S)
    act = jax.jit(agent.act, static_argnums=4)
    explored = np.asarray(act(state, obs, (), jax.random.PRNGKey(1), True)[0])
    np.testing.assert_allclose(np.bincount(explored, minlength=A) / 4000, [1 / 3] * 3, atol=0.04)
    greedy = np.asarray(act(state, obs, (), jax.random.PRNGKey(1), False)[0])
    assert (greedy == 1).all()
    # After the decay epsilon is epsilon_end (0.05): mostly greedy.
    later = np.asarray(
        act(state.replace(step=jnp.int32(100)), obs, (), jax.random.PRNGKey(3), True)[0]
    )
    assert abs((later != 1).mean() - 0.05 * 2 / 3) < 0.02


def test_bad_input_raises_config_error():
    pendulum = EnvSpec("Pendulum-v1", (3,), "float32", Box((1,), (-2.0,), (2.0,)), 1, 200)
    with pytest.raises(ConfigError, match="discrete actions"):
        agents.make("tabular_q", pendulum)
    cartpole = EnvSpec("CartPole-v1", (4,), "float32", Discrete(2), 1, 500)  # not one-hot
    with pytest.raises(ConfigError, match=r"one-hot observations \[S\] \(bool\)"):
        agents.make("tabular_q", cartpole)
    with pytest.raises(ConfigError, match="alpha"):
        agents.make("tabular_q", SPEC, alpha=1.5)
