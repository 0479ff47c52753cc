"""IMPALA's V-trace learner: equal to A2C on on-policy data, and its clipping of the
importance weights (the V-trace op itself: tests/ops/test_vtrace.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.on_policy.impala import IMPALAConfig
from tests.helpers import assert_refused
from tests.helpers import collect_rollout as rollout

# The options in which IMPALA and A2C differ, set to one value for both.
COMMON = dict(
    hidden_sizes=(8,),
    optimizer="adam",
    adam_eps=1e-5,
    lr=1e-2,
    max_grad_norm=0.5,
    gae_lambda=1.0,
    entropy_weight=0.01,
    normalize_advantage=False,
    anneal_lr=False,
)


@pytest.fixture(scope="module")
def setup():
    env = envs.make("CartPole-v1", num_envs=4)
    impala = agents.make("impala", env.spec, **COMMON)
    state = impala.init(jax.random.PRNGKey(0))
    ro = rollout(impala, state, env, jax.random.PRNGKey(1), T=16)
    assert bool((ro.terminated | ro.truncated).any())  # episode ends inside the rollout
    return env, impala, state, ro


def _params_after(agent, state, ro, **hparams):
    if hparams:
        state = state.replace(hparams=state.hparams.replace(**hparams))
    new, metrics = jax.jit(agent.update)(state, ro, jax.random.PRNGKey(2))
    return new, metrics


def test_on_policy_impala_equals_a2c(setup):
    """With no lag rho = 1: V-trace targets are TD(lambda) returns, and with lambda = 1
    A_s = v_s - V(x_s), so IMPALA's one gradient step equals A2C's (no advantage
    normalization). With lambda < 1 the value targets (hence the value loss) still equal
    A2C's GAE targets; the policy-gradient advantages then differ by design (section 4.2)."""
    env, impala, state, ro = setup
    a2c = agents.make("a2c", env.spec, **COMMON)
    a2c_state = a2c.init(jax.random.PRNGKey(0))
    jax.tree.map(np.testing.assert_array_equal, a2c_state.params, state.params)
    new, metrics = _params_after(impala, state, ro)
    ref, ref_metrics = _params_after(a2c, a2c_state, ro)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), new.params, ref.params
    )
    np.testing.assert_allclose(metrics["value_loss"], ref_metrics["value_loss"], rtol=1e-5)
    np.testing.assert_allclose(metrics["importance_ratio"], 1.0, rtol=1e-6)
    lam = jnp.float32(0.9)
    _, lam_metrics = _params_after(impala, state, ro, gae_lambda=lam)
    _, lam_ref = _params_after(a2c, a2c_state, ro, gae_lambda=lam)
    np.testing.assert_allclose(lam_metrics["value_loss"], lam_ref["value_loss"], rtol=1e-5)
    assert abs(float(lam_metrics["value_loss"]) - float(metrics["value_loss"])) > 1e-3
    assert int(new.updates) == 1 and int(new.step) == 64
    moved = jax.tree.map(lambda a, b: bool((a != b).any()), new.params, state.params)
    assert all(jax.tree.leaves(moved))


def test_importance_weights_are_clipped(setup):
    """A behaviour policy half as likely to take each action (rho = 2): with rho_bar =
    c_bar = 1 the clipped weights are 1 and the update equals the on-policy one; with
    rho_bar = 3 the value targets weigh the TD errors by 2 and the update differs."""
    _, impala, state, ro = setup
    stale = ro._replace(extras={**ro.extras, "log_prob": ro.extras["log_prob"] - jnp.log(2.0)})
    on_policy, _ = _params_after(impala, state, ro)
    clipped, metrics = _params_after(impala, state, stale)
    np.testing.assert_allclose(metrics["importance_ratio"], 2.0, rtol=1e-5)
    np.testing.assert_allclose(metrics["clipped_fraction"], 1.0)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8),
        clipped.params,
        on_policy.params,
    )
    three = jnp.float32(3.0)
    unclipped, _ = _params_after(impala, state, stale, rho_bar=three, pg_rho_bar=three)
    diff = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), unclipped.params, clipped.params)
    assert max(jax.tree.leaves(diff)) > 1e-4


def test_impala_defaults_are_the_papers():
    cfg = IMPALAConfig()
    assert (cfg.optimizer, cfg.rmsprop_decay, cfg.rmsprop_eps) == ("rmsprop", 0.99, 0.01)
    assert (cfg.lr, cfg.entropy_weight, cfg.value_weight, cfg.max_grad_norm) == (
        6e-4,
        0.01,
        0.5,
        40.0,
    )
    assert (cfg.rho_bar, cfg.c_bar, cfg.pg_rho_bar, cfg.gae_lambda) == (1.0, 1.0, None, 1.0)


def test_impala_user_mistakes_are_config_errors():
    spec = envs.make("CartPole-v1", num_envs=2).spec
    assert_refused("impala", spec, "rho_bar", rho_bar=0.0)
    assert_refused("impala", spec, "update_epochs", update_epochs=2)
