"""Quantile ops against plain-Python loops (Dabney et al. 2018a eq. 10, 2018b eq. 4)."""

import math

import jax
import numpy as np
import pytest

from jaxrl.ops import cosine_embedding, quantile_huber_loss, quantile_midpoints
from tests.references import quantile_huber as quantile_huber_ref


@pytest.mark.parametrize("kappa", [0.0, 0.5, 1.0])
def test_quantile_huber_loss_matches_reference(kappa):
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(6, 5)).astype(np.float32) * 2
    taus = rng.uniform(size=(6, 5)).astype(np.float32)
    targets = rng.normal(size=(6, 7)).astype(np.float32) * 2
    got = np.asarray(jax.jit(quantile_huber_loss, static_argnums=3)(theta, taus, targets, kappa))
    want = [quantile_huber_ref(theta[b], taus[b], targets[b], kappa) for b in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_quantile_huber_loss_gradient_is_the_quantile_step():
    # d/dtheta_i with kappa 0: mean_j (1{y_j < theta_i} - tau_i), the quantile regression step.
    theta = np.array([[0.0, 1.0]], np.float32)
    taus = np.array([[0.25, 0.75]], np.float32)
    y = np.array([[-1.0, 0.5, 2.0]], np.float32)
    grad = jax.grad(lambda t: quantile_huber_loss(t, taus, y, 0.0).sum())(theta)
    want = [[(1 / 3) - 0.25, (2 / 3) - 0.75]]
    np.testing.assert_allclose(grad, want, rtol=1e-6)


def test_quantile_midpoints():
    np.testing.assert_allclose(quantile_midpoints(4), [0.125, 0.375, 0.625, 0.875])
    with pytest.raises(ValueError):
        quantile_midpoints(0)


def test_cosine_embedding_matches_reference():
    taus = np.array([[0.0, 0.3], [0.9, 1.0]], np.float32)
    got = np.asarray(cosine_embedding(taus, 5))
    assert got.shape == (2, 2, 5)
    for idx in np.ndindex(2, 2):
        want = [math.cos(math.pi * i * float(taus[idx])) for i in range(1, 6)]
        np.testing.assert_allclose(got[idx], want, atol=1e-6)


def test_matches_rlax_quantile_regression_loss():
    rlax = pytest.importorskip("rlax")
    rng = np.random.default_rng(1)
    theta, taus = rng.normal(size=(4, 5)), rng.uniform(size=(4, 5))
    targets = rng.normal(size=(4, 6))
    for kappa in (0.0, 1.0, 2.0):
        ours = np.asarray(quantile_huber_loss(theta, taus, targets, kappa))
        theirs = jax.vmap(lambda a, b, c, k=kappa: rlax.quantile_regression_loss(a, b, c, k))(
            theta, taus, targets
        )
        # rlax does not divide the Huber loss by kappa (Dabney et al.'s eq. 10 does).
        np.testing.assert_allclose(ours * (kappa or 1.0), theirs, rtol=1e-5)
