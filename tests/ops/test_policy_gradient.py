"""PPO's clipped surrogate, the policy-gradient loss and value losses against NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops.policy_gradient import (
    normalize_advantages,
    policy_gradient_loss,
    ppo_clip_loss,
    value_loss,
)


def _ppo_ref(logp, old, adv, clip):
    ratio = np.exp(logp - old)
    terms = [
        min(r * a, np.clip(r, 1 - clip, 1 + clip) * a) for r, a in zip(ratio, adv, strict=True)
    ]
    kl = np.mean((ratio - 1) - np.log(ratio))
    return -np.mean(terms), kl, np.mean(np.abs(ratio - 1) > clip)


def test_ppo_clip_loss_matches_reference():
    rng = np.random.default_rng(0)
    logp, old = rng.normal(size=64) * 0.3 - 1, rng.normal(size=64) * 0.3 - 1
    adv = rng.normal(size=64)
    loss, kl, frac = ppo_clip_loss(jnp.asarray(logp), jnp.asarray(old), jnp.asarray(adv), 0.2)
    ref = _ppo_ref(logp, old, adv, 0.2)
    np.testing.assert_allclose([loss, kl, frac], ref, rtol=1e-5, atol=1e-6)
    assert 0 < ref[2] < 1  # the sample exercises both clipped and unclipped terms


def test_ppo_clip_loss_has_no_gradient_where_clipped():
    # ratio e^0.5 > 1.2 with a positive advantage: clipped, so no gradient; with a
    # negative advantage the unclipped (smaller) term is active.
    grad = jax.grad(lambda lp, a: ppo_clip_loss(lp, jnp.zeros(1), a, 0.2)[0])
    assert grad(jnp.array([0.5]), jnp.array([1.0]))[0] == 0.0
    np.testing.assert_allclose(grad(jnp.array([0.5]), jnp.array([-1.0]))[0], np.exp(0.5))


def test_policy_gradient_loss_and_gradient():
    logp, adv = jnp.array([-1.0, -2.0]), jnp.array([2.0, -1.0])
    np.testing.assert_allclose(policy_gradient_loss(logp, adv), -(-2.0 + 2.0) / 2)
    np.testing.assert_allclose(jax.grad(policy_gradient_loss)(logp, adv), [-1.0, 0.5])


@pytest.mark.parametrize("clip", [None, 0.1])
def test_value_loss_matches_reference(clip):
    rng = np.random.default_rng(1)
    v, old, ret = (rng.normal(size=32) for _ in range(3))
    loss = value_loss(jnp.asarray(v), jnp.asarray(ret), jnp.asarray(old), clip)
    ref = (v - ret) ** 2
    if clip is not None:
        ref = np.maximum(ref, (old + np.clip(v - old, -clip, clip) - ret) ** 2)
    np.testing.assert_allclose(loss, 0.5 * ref.mean(), rtol=1e-5)


def test_normalize_advantages():
    a = np.array([1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(
        normalize_advantages(jnp.asarray(a)), (a - a.mean()) / (a.std() + 1e-8), rtol=1e-5
    )
