"""The tanh-squashed Gaussian against slow float64 NumPy references."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.distributions import gaussian_log_prob
from jaxrl.ops.squashed_gaussian import (
    squash,
    squashed_gaussian_log_prob,
    squashed_gaussian_sample,
    tanh_log_det_jacobian,
)


def np_log_prob(u, mean, log_std, low, high):
    """log N(u) - log|d a / d u| with a = c + h tanh(u), element by element in float64."""
    u, mean, log_std = (np.asarray(x, np.float64) for x in (u, mean, log_std))
    half = (np.asarray(high, np.float64) - np.asarray(low, np.float64)) / 2
    std = np.exp(log_std)
    normal = -0.5 * ((u - mean) / std) ** 2 - np.log(std * math.sqrt(2 * math.pi))
    jac = half * (1 - np.tanh(u) ** 2)  # da/du
    return (normal - np.log(jac)).sum(-1)


def test_tanh_log_det_jacobian_matches_direct_formula_and_stays_finite():
    u = np.linspace(-8, 8, 101)
    np.testing.assert_allclose(
        tanh_log_det_jacobian(jnp.asarray(u, jnp.float32)),
        np.log(1 - np.tanh(u) ** 2),
        rtol=1e-5,
        atol=1e-5,
    )
    # Far in the tails 1 - tanh^2 underflows; -2 log cosh u in float64 is the reference.
    big = np.array([-40.0, -15.0, 15.0, 40.0])
    ref = -2 * (np.abs(big) + np.log1p(np.exp(-2 * np.abs(big))) - math.log(2))
    out = np.asarray(tanh_log_det_jacobian(jnp.asarray(big, jnp.float32)))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_log_prob_matches_numpy_reference():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=(5, 3))
    log_std = rng.uniform(-2, 1, size=(5, 3))
    u = mean + np.exp(log_std) * rng.normal(size=(5, 3))
    low, high = np.array([-2.0, -1.0, 0.0]), np.array([2.0, 1.0, 0.5])
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    out = squashed_gaussian_log_prob(f32(u), f32(mean), f32(log_std), f32(low), f32(high))
    assert out.shape == (5,)
    np.testing.assert_allclose(out, np_log_prob(u, mean, log_std, low, high), rtol=1e-5)
    # Default box [-1, 1]: no log-scale term.
    np.testing.assert_allclose(
        squashed_gaussian_log_prob(f32(u), f32(mean), f32(log_std)),
        np_log_prob(u, mean, log_std, -1.0, 1.0),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        gaussian_log_prob(f32(mean), f32(log_std), f32(u)),
        np_log_prob(np.zeros_like(u), mean - u, log_std, -1, 1) + np.log(1.0 - np.tanh(0.0) ** 2),
        rtol=1e-5,
    )


def test_density_integrates_to_one_over_the_box():
    # 1-D: integrate pi(a) over a in (low, high) by the trapezoid rule, u = artanh((a-c)/h).
    low, high, mean, log_std = -2.0, 3.0, 0.3, -0.2
    a = np.linspace(low, high, 200_001)[1:-1]
    c, h = (high + low) / 2, (high - low) / 2
    u = np.arctanh((a - c) / h)
    logp = squashed_gaussian_log_prob(
        jnp.asarray(u[:, None], jnp.float32), mean, log_std, low, high
    )
    np.testing.assert_allclose(
        np.trapezoid(np.exp(np.asarray(logp, np.float64)), a), 1.0, atol=1e-3
    )


def test_sample_is_reparameterized_squash_with_matching_log_prob():
    key = jax.random.PRNGKey(3)
    mean = jnp.array([[0.5, -1.0], [2.0, 0.0]])
    log_std = jnp.array([[-1.0, 0.5], [0.0, -3.0]])
    low, high = jnp.array([-2.0, 0.0]), jnp.array([2.0, 1.0])
    action, logp = squashed_gaussian_sample(key, mean, log_std, low, high)
    eps = np.asarray(jax.random.normal(key, mean.shape), np.float64)
    u = np.asarray(mean, np.float64) + np.exp(np.asarray(log_std, np.float64)) * eps
    c, h = (np.asarray(high) + np.asarray(low)) / 2, (np.asarray(high) - np.asarray(low)) / 2
    np.testing.assert_allclose(action, c + h * np.tanh(u), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logp, np_log_prob(u, mean, log_std, low, high), rtol=1e-5)
    assert (np.asarray(action) >= np.asarray(low)).all()
    assert (np.asarray(action) <= np.asarray(high)).all()
    np.testing.assert_allclose(squash(jnp.zeros(2), low, high), c)
    # Gradients reach mean and log_std (the reparameterization trick).
    g = jax.grad(lambda m: squashed_gaussian_sample(key, m, log_std)[0].sum())(mean)
    np.testing.assert_allclose(g, 1 - np.tanh(u) ** 2, rtol=1e-4, atol=1e-6)
