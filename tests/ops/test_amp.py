"""AMP's least-squares discriminator loss, gradient penalty, style reward and the
action-symmetry confusion reward against slow NumPy loops (Peng et al. 2021, eqs. 7-8)."""

import jax.numpy as jnp
import numpy as np

from jaxrl.ops.amp import (
    confusion_reward,
    gradient_penalty,
    input_gradients,
    lsq_discriminator_loss,
    style_reward,
)

RNG = np.random.default_rng(0)
D_REF, D_POL = RNG.normal(size=7).astype(np.float32), RNG.normal(size=5).astype(np.float32)


def test_lsq_loss_matches_numpy():
    ref = sum((d - 1.0) ** 2 for d in D_REF.astype(np.float64)) / len(D_REF)
    pol = sum((d + 1.0) ** 2 for d in D_POL.astype(np.float64)) / len(D_POL)
    got = lsq_discriminator_loss(jnp.asarray(D_REF), jnp.asarray(D_POL))
    np.testing.assert_allclose(float(got), ref + pol, rtol=1e-6)
    # Perfect outputs (+1 on reference, -1 on policy data) cost nothing; swapped, 4 + 4.
    assert float(lsq_discriminator_loss(jnp.ones(3), -jnp.ones(2))) == 0.0
    assert float(lsq_discriminator_loss(-jnp.ones(3), jnp.ones(2))) == 8.0


def test_gradient_penalty_matches_numpy():
    grad = RNG.normal(size=(4, 2, 3)).astype(np.float32)
    want = np.mean([sum(float(g) ** 2 for g in row.ravel()) for row in grad.astype(np.float64)])
    np.testing.assert_allclose(float(gradient_penalty(jnp.asarray(grad))), want, rtol=1e-6)


def test_input_gradients_are_per_sample():
    w = jnp.asarray(RNG.normal(size=3), jnp.float32)
    x = jnp.asarray(RNG.normal(size=(4, 3)), jnp.float32)
    d = lambda x: jnp.sum(x**2 * w, axis=-1)  # d D / d x = 2 w x, row by row
    np.testing.assert_allclose(input_gradients(d, x), 2 * np.asarray(w) * np.asarray(x), rtol=1e-6)


def test_rewards_match_numpy():
    d = np.array([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0], np.float32)
    style = [max(0.0, 1.0 - 0.25 * (v - 1.0) ** 2) for v in d.astype(np.float64)]
    confusion = [max(0.0, 1.0 - 0.25 * v**2) for v in d.astype(np.float64)]
    np.testing.assert_allclose(style_reward(jnp.asarray(d)), style, rtol=1e-6)
    np.testing.assert_allclose(confusion_reward(jnp.asarray(d)), confusion, rtol=1e-6)
    assert (
        float(style_reward(jnp.float32(1.0))) == 1.0 and float(style_reward(jnp.float32(-1))) == 0
    )
    assert float(confusion_reward(jnp.float32(0.0))) == 1.0
