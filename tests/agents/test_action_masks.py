"""Legal-action masks in DQN, Rainbow, IQN and M-DQN: with a mask
leaving exactly one legal action, greedy, epsilon-greedy and noisy acting pick it, and
bootstrap targets (max, double-Q, C51) use only it (against NumPy references)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.q_learning.dqn import make_q_network
from jaxrl.agents.q_learning.value_heads import categorical_head, expected_value_head
from jaxrl.types import ArraySpec, Discrete, EnvSpec, Transition
from tests.references import c51_project

A = 4
SPEC = EnvSpec(
    name="Masked",
    obs_shape=(3,),
    obs_dtype="float32",
    action_space=Discrete(A),
    num_envs=8,
    max_episode_steps=10,
    obs_extras=(ArraySpec("action_mask", (A,), "bool"),),
)
TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, learning_starts=0)


def one_legal(rng, shape):
    legal = rng.integers(0, A, shape)
    return legal, np.eye(A, dtype=bool)[legal]


CONFIGS = {
    "dqn": ("dqn", {}),
    "rainbow_noisy": ("rainbow", {}),
    "rainbow_noisy_eps": ("rainbow", dict(use_eps_greedy=True)),
    "rainbow_eps_expected": ("rainbow", dict(noisy=False, distributional=False)),
    # The sampling head (its own forward pass) and the Munchausen bonus (the first
    # observation's mask); QR-DQN's and HL-Gauss's targets:
    # tests/agents/q_learning/test_value_family.py.
    "iqn": ("iqn", dict(num_tau_samples=4, num_tau_prime_samples=4, num_quantile_samples=4)),
    "mdqn": ("mdqn", {}),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def agent_and_state(request):
    name, overrides = CONFIGS[request.param]
    agent = agents.make(name, SPEC, **TINY, **overrides)
    return request.param, agent, jax.jit(agent.init)(jax.random.PRNGKey(0))


def test_acting_picks_the_only_legal_action(agent_and_state):
    name, agent, state = agent_and_state
    rng = np.random.default_rng(0)
    legal, mask = one_legal(rng, (SPEC.num_envs,))
    obs = {"obs": jnp.asarray(rng.normal(size=(SPEC.num_envs, 3)), jnp.float32)}
    obs["action_mask"] = jnp.asarray(mask)
    act = jax.jit(agent.act, static_argnums=4)
    # At step 0 epsilon is 1 (epsilon-greedy configs): every action is a random one.
    state = state.replace(hparams=state.hparams.replace(eval_epsilon=jnp.float32(0.5)))
    seen_unmasked = set()
    for seed in range(20):
        for explore in (True, False):
            action, carry, _ = act(state, obs, (), jax.random.PRNGKey(seed), explore)
            np.testing.assert_array_equal(action, legal, err_msg=f"{name} explore={explore}")
        free = {"obs": obs["obs"], "action_mask": jnp.ones((SPEC.num_envs, A), bool)}
        seen_unmasked |= set(np.asarray(act(state, free, (), jax.random.PRNGKey(seed), True)[0]))
    assert len(seen_unmasked) > 1  # without the mask, acting does pick other actions


def test_update_with_dict_observations_runs(agent_and_state):
    name, agent, state = agent_and_state
    rng = np.random.default_rng(1)
    T, N = 3, SPEC.num_envs

    def obs(shape):
        return {
            "obs": jnp.asarray(rng.normal(size=(*shape, 3)), jnp.float32),
            "action_mask": jnp.asarray(one_legal(rng, shape)[1]),
        }

    data = Transition(
        obs=obs((T, N)),
        action=jnp.asarray(rng.integers(0, A, (T, N)), jnp.int32),
        reward=jnp.ones((T, N), jnp.float32),
        next_obs=obs((T, N)),
        terminated=jnp.zeros((T, N), bool),
        truncated=jnp.zeros((T, N), bool),
        extras={},
    )
    new_state, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(2))
    assert np.isfinite(float(metrics["loss"])), name
    assert int(new_state.updates) == 1


# ---------------------------------------------------------------- targets


@pytest.mark.parametrize("double", [False, True])
def test_expected_value_target_uses_only_legal_actions(double):
    rng = np.random.default_rng(3)
    B = 6
    q_target = rng.normal(size=(B, A)).astype(np.float32)
    q_online = rng.normal(size=(B, A)).astype(np.float32)
    legal, mask = one_legal(rng, (B,))
    r, d = rng.normal(size=B).astype(np.float32), np.full(B, 0.9, np.float32)
    head = expected_value_head()
    got = head.target(
        jnp.asarray(q_target), jnp.asarray(q_online) if double else None, jnp.asarray(mask),
        jnp.asarray(r), jnp.asarray(d),
    )  # fmt: skip
    want = r + d * q_target[np.arange(B), legal]  # the only legal action, max or double
    np.testing.assert_allclose(got, want, rtol=1e-6)
    unmasked = head.target(jnp.asarray(q_target), None, None, jnp.asarray(r), jnp.asarray(d))
    np.testing.assert_allclose(unmasked, r + d * q_target.max(-1), rtol=1e-6)
    assert not np.allclose(unmasked, want)


@pytest.mark.parametrize("double", [False, True])
def test_categorical_target_uses_only_legal_actions(double):
    rng = np.random.default_rng(4)
    B, K = 5, 11
    head = categorical_head(-2.0, 2.0, K)
    support = np.linspace(-2.0, 2.0, K)
    logits = rng.normal(size=(B, A, K)).astype(np.float32) * 2
    select = rng.normal(size=(B, A)).astype(np.float32)
    legal, mask = one_legal(rng, (B,))
    r, d = rng.normal(size=B).astype(np.float32), np.full(B, 0.8, np.float32)
    got = np.asarray(
        head.target(
            jnp.asarray(logits), jnp.asarray(select) if double else None, jnp.asarray(mask),
            jnp.asarray(r), jnp.asarray(d),
        )
    )  # fmt: skip
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for b in range(B):
        want = c51_project(support, r[b] + d[b] * support, probs[b, legal[b]])
        np.testing.assert_allclose(got[b], want, atol=1e-5)
    # Unmasked, the selected action differs for some row: the mask changed the target.
    free = np.asarray(head.target(jnp.asarray(logits), None, None, jnp.asarray(r), jnp.asarray(d)))
    assert not np.allclose(free, got, atol=1e-4)


@pytest.mark.parametrize("double", [False, True])
def test_dqn_loss_bootstraps_from_the_legal_action(double):
    # One env, a 1-step window and a 2-row buffer holding one row: every sample is row 0, so the
    # reported loss is its TD loss at the initial params (target params == params).
    spec = EnvSpec("Masked", (3,), "float32", Discrete(A), 1, 10, SPEC.obs_extras)
    gamma = 0.9
    agent = agents.make(
        "dqn", spec, **TINY | dict(buffer_size=2, double=double, gamma=gamma, max_grad_norm=None)
    )
    state = jax.jit(agent.init)(jax.random.PRNGKey(1))
    net = make_q_network(spec, (8,), False)
    q = lambda o: np.asarray(net.apply(state.params, jnp.asarray(o)))
    rng = np.random.default_rng(5)
    obs, next_obs = rng.normal(size=(2, 1, 1, 3)).astype(np.float32)
    legal = int(np.argmin(q(next_obs[0])[0]))  # not the unmasked max
    mask = np.eye(A, dtype=bool)[legal][None, None]
    data = Transition(
        obs={"obs": jnp.asarray(obs), "action_mask": jnp.ones((1, 1, A), bool)},
        action=jnp.zeros((1, 1), jnp.int32),
        reward=jnp.ones((1, 1), jnp.float32),
        next_obs={"obs": jnp.asarray(next_obs), "action_mask": jnp.asarray(mask)},
        terminated=jnp.zeros((1, 1), bool),
        truncated=jnp.zeros((1, 1), bool),
        extras={},
    )
    _, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(2))
    target = 1.0 + gamma * q(next_obs[0])[0, legal]
    td = q(obs[0])[0, 0] - target
    huber = 0.5 * td**2 if abs(td) <= 1 else abs(td) - 0.5
    np.testing.assert_allclose(float(metrics["loss"]), huber, rtol=1e-4)
