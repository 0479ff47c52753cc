"""QR-DQN, IQN, M-DQN and the HL-Gauss loss of DQN/Rainbow: each compiles, acts and
learns; each agent's reported loss equals a NumPy computation from its network's outputs
(so each option changes the loss as it claims); legal-action masks in their targets;
M-DQN with its bonus off and a vanishing temperature is DQN; bad options are refused."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.q_learning import dqn, munchausen, quantile, rainbow
from jaxrl.agents.q_learning.config import Exploration
from jaxrl.agents.q_learning.core import make_network
from jaxrl.agents.q_learning.value_heads import (
    hl_gauss_head,
    implicit_quantile_head,
    munchausen_head,
    quantile_head,
    scalar_head,
)
from jaxrl.types import ConfigError, Discrete, EnvSpec, Transition
from tests.references import hl_gauss_target as hl_target_ref
from tests.references import quantile_huber as quantile_huber_ref

A = 3
SPEC = EnvSpec("Vec", (4,), "float32", Discrete(A), 2, 10)
TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, learning_starts=0, lr=1e-2)
# Acting and a learning step with dict observations, for qrdqn, iqn, mdqn and HL-Gauss DQN,
# are in test_action_masks.py; here the options those do not reach.
VARIANTS = {
    "qrdqn_double_dueling_nstep": ("qrdqn", dict(num_quantiles=5, n_step=2, double=True,
                                                dueling=True)),
    "iqn_double_nstep": ("iqn", dict(num_tau_samples=6, num_tau_prime_samples=5,
                                          num_quantile_samples=4, double=True, n_step=2)),
}  # fmt: skip


def rollout(rng, t, n, obs_dim=4):
    return Transition(
        obs=jnp.asarray(rng.normal(size=(t, n, obs_dim)), jnp.float32),
        action=jnp.asarray(rng.integers(0, A, size=(t, n)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(t, n)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(t, n, obs_dim)), jnp.float32),
        terminated=jnp.zeros((t, n), bool),
        truncated=jnp.zeros((t, n), bool),
        extras={},
    )


def changed(a, b):
    return any(jax.tree.leaves(jax.tree.map(lambda x, y: bool((x != y).any()), a, b)))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compiles_acts_and_learns(variant):
    name, options = VARIANTS[variant]
    agent = agents.make(name, SPEC, **TINY | options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    update = jax.jit(agent.update)
    rng = np.random.default_rng(0)
    new, metrics = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(1))
    new, metrics = update(new, rollout(rng, 4, 2), jax.random.PRNGKey(2))
    assert np.isfinite(float(metrics["loss"])) and int(new.updates) == 2, variant
    assert changed(new.params, state.params)
    action, _, _ = jax.jit(agent.act, static_argnums=4)(
        new, jnp.ones((2, 4)), (), jax.random.PRNGKey(3), True
    )
    assert action.shape == (2,) and action.dtype == jnp.int32
    assert ((0 <= action) & (action < A)).all()


def test_rainbow_hl_gauss_picks_the_histogram_head():
    cfg = rainbow.RainbowConfig(loss="hl_gauss", distributional=False, num_bins=4,
                                min_value=0.0, max_value=4.0)  # fmt: skip
    head = rainbow.make_head(cfg)
    logits = jnp.log(jnp.array([[[0.1, 0.2, 0.3, 0.4]]]))
    want = 0.1 * 0.5 + 0.2 * 1.5 + 0.3 * 2.5 + 0.4 * 3.5  # probabilities x bin centres
    np.testing.assert_allclose(head.q_values(logits), [[want]], rtol=1e-6)
    module = rainbow.make_network(SPEC, cfg).head
    assert module.num_atoms == 4 and module.hidden_size == 0  # dueling: the histogram head


def one_window(rng, obs_dim=4):
    """One env, one transition: in a 2-row buffer every sample is that row."""
    return rollout(rng, 1, 1, obs_dim)


SINGLE = EnvSpec("Vec", (4,), "float32", Discrete(A), 1, 10)
ONE = dict(hidden_sizes=(8,), batch_size=4, buffer_size=2, learning_starts=0, gamma=0.9)


def _loss_of_first_update(name, cfg_cls, head, options, seed):
    agent = agents.make(name, SINGLE, **ONE | options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(seed))
    data = one_window(np.random.default_rng(seed))
    _, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(seed + 1))
    net = make_network(SINGLE, cfg_cls(**ONE | options), head, Exploration())
    out = lambda o: np.asarray(net.apply(state.params, jnp.asarray(o)))[0]  # target == online
    obs, next_obs = np.asarray(data.obs)[0], np.asarray(data.next_obs)[0]
    a, r = int(data.action[0, 0]), float(data.reward[0, 0])
    return float(metrics["loss"]), out(obs), out(next_obs), a, r


def test_qrdqn_loss_matches_numpy():
    options = dict(num_quantiles=4, kappa=1.0, n_step=1)
    cfg = quantile.QRDQNConfig(**ONE | options)
    loss, z, z_next, a, r = _loss_of_first_update(
        "qrdqn", quantile.QRDQNConfig, quantile_head(4, 1.0), options, 0
    )
    best = int(np.argmax(z_next.mean(-1)))
    target = r + cfg.gamma * z_next[best]
    taus = [(2 * i + 1) / 8 for i in range(4)]
    np.testing.assert_allclose(loss, quantile_huber_ref(z[a], taus, target, 1.0), rtol=1e-4)


def test_hl_gauss_dqn_loss_matches_numpy():
    options = dict(loss="hl_gauss", min_value=-2.0, max_value=2.0, num_bins=9, sigma=0.4)
    cfg = dqn.DQNConfig(**ONE | options)
    loss, logits, logits_next, a, r = _loss_of_first_update(
        "dqn", dqn.DQNConfig, scalar_head(cfg), options, 1
    )
    centers = np.linspace(-2.0, 2.0, 10)
    centers = (centers[:-1] + centers[1:]) / 2
    softmax = lambda x: (
        np.exp(x - x.max(-1, keepdims=True))
        / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)
    )
    q_next = (softmax(logits_next) * centers).sum(-1)
    target = r + 0.9 * q_next.max()
    p = np.array(hl_target_ref(target, -2.0, 2.0, 9, 0.4))
    log_q = logits[a] - np.log(np.exp(logits[a]).sum())
    np.testing.assert_allclose(loss, -(p * log_q).sum(), rtol=1e-4)


def test_mdqn_loss_matches_numpy():
    options = dict(m_alpha=0.9, m_tau=0.5, l_0=-1.0, loss="mse")
    loss, q, q_next, a, r = _loss_of_first_update(
        "mdqn", munchausen.MDQNConfig, munchausen_head(0.9, 0.5, -1.0, "mse"), options, 2
    )
    log_pi = lambda x: x / 0.5 - np.log(np.exp(x / 0.5).sum())
    bonus = 0.9 * min(max(0.5 * log_pi(q)[a], -1.0), 0.0)
    soft = (np.exp(log_pi(q_next)) * (q_next - 0.5 * log_pi(q_next))).sum()
    target = r + bonus + 0.9 * soft
    np.testing.assert_allclose(loss, 0.5 * (q[a] - target) ** 2, rtol=1e-4)


def test_mdqn_without_bonus_at_vanishing_temperature_is_dqn():
    common = TINY | dict(learning_starts=0, loss="huber", max_grad_norm=None, n_step=1)
    common |= dict(lr=1e-3, adam_eps=1e-8, batch_size=4, buffer_size=64, hidden_sizes=(8,))
    plain = agents.make("dqn", SPEC, **common)
    m = agents.make("mdqn", SPEC, **common | dict(m_alpha=0.0, m_tau=1e-5))
    data = rollout(np.random.default_rng(4), 4, 2)
    key = jax.random.PRNGKey(0)
    s1, m1 = jax.jit(plain.update)(plain.init(key), data, key)
    s2, m2 = jax.jit(m.update)(m.init(key), data, key)
    np.testing.assert_allclose(float(m1["loss"]), float(m2["loss"]), rtol=1e-4)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-5), s1.params, s2.params)


# ---------------------------------------------------------------- legal actions in targets


def _mask_case(seed, b=5):
    rng = np.random.default_rng(seed)
    legal = rng.integers(0, A, b)
    return rng, legal, jnp.asarray(np.eye(A, dtype=bool)[legal])


@pytest.mark.parametrize("double", [False, True])
def test_quantile_targets_use_only_legal_actions(double):
    rng, legal, mask = _mask_case(0)
    z = rng.normal(size=(5, A, 4)).astype(np.float32)
    select = jnp.asarray(rng.normal(size=(5, A)), jnp.float32) if double else None
    r, d = np.ones(5, np.float32), np.full(5, 0.5, np.float32)
    got = quantile_head(4).target(jnp.asarray(z), select, mask, r, d)
    np.testing.assert_allclose(got, 1.0 + 0.5 * z[np.arange(5), legal], rtol=1e-6)
    iqn = implicit_quantile_head(3, 4, 2)
    out = {"quantiles": jnp.asarray(z), "taus": jnp.zeros_like(z)}
    got = iqn.target(out, select, mask, r, d)
    np.testing.assert_allclose(got, 1.0 + 0.5 * z[np.arange(5), legal], rtol=1e-6)


def test_hl_gauss_and_munchausen_targets_use_only_legal_actions():
    rng, legal, mask = _mask_case(1)
    logits = rng.normal(size=(5, A, 7)).astype(np.float32)
    r, d = np.zeros(5, np.float32), np.ones(5, np.float32)
    head = hl_gauss_head(-1.0, 1.0, 7)
    q = np.asarray(head.q_values(jnp.asarray(logits)))
    got = head.target(jnp.asarray(logits), None, mask, r, d)
    np.testing.assert_allclose(got, q[np.arange(5), legal], rtol=1e-6)
    # One legal action: pi is one-hot on it, log pi = 0, the soft value is its Q.
    qs = rng.normal(size=(5, A)).astype(np.float32)
    got = munchausen_head(0.9, 0.03, -1.0).target(jnp.asarray(qs), None, mask, r, d)
    np.testing.assert_allclose(got, qs[np.arange(5), legal], rtol=1e-6)
    assert math.isfinite(float(got.sum()))


# ---------------------------------------------------------------- bad options


@pytest.mark.parametrize(
    "name, options, words",
    [
        ("mdqn", dict(n_step=3), "does not take option 'n_step': it is fixed at 1"),
        ("mdqn", dict(double=True), "does not take option 'double': it is fixed at False"),
        ("mdqn", dict(loss="hl_gauss"), "loss 'hl_gauss' does not apply; use huber or mse"),
        ("iqn", dict(dueling=True), "does not take option 'dueling'"),
        ("qrdqn", dict(loss="mse"), "does not take option 'loss': it is fixed at 'huber'"),
        ("rainbow", dict(loss="hl_gauss"), "distributional false"),
        ("dqn", dict(loss="hl_gauss", min_value=1.0, max_value=0.0), "min_value < max_value"),
        ("dqn", dict(loss="hl_gauss", num_bins=1), "num_bins"),
    ],
)
def test_bad_options_are_one_line_config_errors(name, options, words):
    with pytest.raises(ConfigError) as e:
        agents.make(name, SPEC, **TINY | options)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_iqn_sample_counts_and_hl_gauss_default_sigma():
    head = implicit_quantile_head(6, 5, 4)
    assert head.samples == {"act": 4, "select": 4, "target": 5, "online": 6}
    net = make_network(SPEC, quantile.IQNConfig(hidden_sizes=(8,)), head, Exploration())
    keys = {"params": jax.random.PRNGKey(0), "noise": jax.random.PRNGKey(1)}
    params = jax.jit(net.init)(keys, jnp.ones((2, 4)))
    apply = jax.jit(lambda p, k: net.apply(p, jnp.ones((2, 4)), num_samples=7, rngs={"noise": k}))
    out = apply(params, jax.random.PRNGKey(2))
    assert out["quantiles"].shape == (2, A, 7) and out["taus"].shape == (2, A, 7)
    taus = np.asarray(out["taus"])
    assert (taus >= 0).all() and (taus < 1).all() and np.unique(taus[0, 0]).size == 7
    np.testing.assert_array_equal(taus[:, 0], taus[:, 1])  # one set of fractions per state
    logits = jnp.asarray(np.random.default_rng(0).normal(size=(3, 4)), jnp.float32)
    target = jnp.array([0.1, 0.5, 0.9])
    from jaxrl.ops import hl_gauss_loss

    want = hl_gauss_loss(logits, target, 0.0, 1.0, 4, 0.75 * 0.25)  # 0.75 bin widths
    got = jax.jit(hl_gauss_head(0.0, 1.0, 4).loss)(logits, target)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
