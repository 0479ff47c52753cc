"""Losses against plain-Python references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops import huber_loss, l2_loss


def _huber_ref(x: np.ndarray, delta: float) -> np.ndarray:
    out = np.empty(x.size, np.float64)
    for i, v in enumerate(x.ravel()):
        v = float(v)
        out[i] = 0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta)
    return out.reshape(x.shape)


@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
@pytest.mark.parametrize("shape", [(), (7,), (3, 4, 5)])
def test_huber_matches_reference(shape, delta):
    x = np.random.default_rng(0).normal(scale=3.0, size=shape).astype(np.float32)
    got = jax.jit(huber_loss)(jnp.asarray(x), delta)
    assert got.shape == x.shape and got.dtype == jnp.float32
    np.testing.assert_allclose(got, _huber_ref(x, delta), rtol=1e-6, atol=1e-6)


def test_huber_boundary_traced_delta_and_gradient():
    delta = 1.5
    x = np.array([-4.0, -1.5, -0.2, 0.0, 0.7, 1.5, 3.0], np.float32)
    got = jax.jit(huber_loss)(x, jnp.float32(delta))
    np.testing.assert_allclose(got, _huber_ref(x, delta), rtol=1e-6)
    # The gradient is the TD error clipped to [-delta, delta].
    grad = jax.jit(jax.vmap(jax.grad(huber_loss), in_axes=(0, None)))(jnp.asarray(x), delta)
    np.testing.assert_allclose(grad, np.clip(x, -delta, delta), rtol=1e-6)


@pytest.mark.parametrize("shape", [(), (6,), (2, 3, 4)])
def test_l2_matches_reference(shape):
    x = np.random.default_rng(1).normal(scale=2.0, size=shape).astype(np.float32)
    ref = np.array([0.5 * float(v) ** 2 for v in x.ravel()]).reshape(shape)
    got = l2_loss(jnp.asarray(x))
    assert got.shape == x.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: l2_loss(v).sum())(jnp.asarray(x)), x)
