"""importance_weights against the literal formula of Schaul et al. (2016), in NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops.prioritized import importance_weights

importance_weights_jit = jax.jit(importance_weights)


def _reference(p, n, beta):
    """w_i = (n P(i))^-beta / max_j (n P(j))^-beta, one element at a time, float64."""
    raw = [(n * float(pi)) ** -float(beta) for pi in p]
    top = max(raw)
    return np.array([r / top for r in raw])


@pytest.mark.parametrize("beta", [0.0, 0.4, 0.7, 1.0])
def test_matches_reference(beta):
    rng = np.random.default_rng(int(beta * 10))
    p = rng.dirichlet(np.ones(1000))[:64].astype(np.float32)  # probabilities of a batch
    got = importance_weights_jit(p, 1000, beta)
    assert got.shape == (64,) and got.dtype == jnp.float32
    np.testing.assert_allclose(got, _reference(p, 1000, beta), rtol=1e-5)
    assert float(jnp.max(got)) == 1.0


def test_extreme_probabilities_do_not_overflow():
    # (n P)^-beta alone overflows float32 for P = 2e-38; the ratio form does not.
    p = np.array([2e-38, 1e-20, 0.5], np.float32)
    got = importance_weights_jit(p, jnp.int32(10**6), jnp.float32(1.0))
    np.testing.assert_allclose(got, [1.0, 2e-18, 4e-38], rtol=1e-5)


def test_zero_probabilities_get_zero_weight():
    got = importance_weights_jit(np.array([0.0, 0.25, 0.5], np.float32), 4, 0.5)
    np.testing.assert_allclose(got, [0.0, 1.0, np.sqrt(0.5)], rtol=1e-6)
    np.testing.assert_array_equal(importance_weights_jit(np.zeros(3, np.float32), 0, 0.5), 0.0)


def test_traced_beta_under_vmap():
    p = jnp.array([0.1, 0.2, 0.4], jnp.float32)
    betas = jnp.array([0.0, 0.5, 1.0])
    got = jax.jit(jax.vmap(importance_weights, in_axes=(None, None, 0)))(p, 7, betas)
    for row, beta in zip(got, betas, strict=True):
        np.testing.assert_allclose(row, _reference(np.asarray(p), 7, beta), rtol=1e-6)
