"""Exploration noise against NumPy references driven by the same key sequence."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.noise import (
    clipped_gaussian_noise,
    gaussian_noise,
    ou_init,
    ou_step,
    uniform_noise,
)
from jaxrl.types import reset_carry

SHAPE = (4, 3)  # [num_envs, A]
MU = np.array([0.0, 0.5, -1.0])
SIGMA = np.array([0.2, 1.0, 0.05])


def normals(keys, shape):
    return [np.asarray(jax.random.normal(k, shape, jnp.float32), np.float64) for k in keys]


def test_ou_matches_numpy_for_a_fixed_key_sequence():
    theta, dt = np.array([0.15, 0.5, 1.0]), 0.05
    keys = jax.random.split(jax.random.PRNGKey(0), 50)
    x0 = np.array([1.0, -2.0, 0.0])

    def body(x, key):
        noise, x = ou_step(x, key, MU, SIGMA, theta, dt)
        return x, noise

    _, out = jax.lax.scan(body, ou_init(SHAPE, x0), keys)

    x = np.broadcast_to(x0, SHAPE).astype(np.float64)
    ref = []
    for eps in normals(keys, SHAPE):  # machin: x += theta (mu - x) dt + sigma sqrt(dt) eps
        x = x + theta * (MU - x) * dt + SIGMA * np.sqrt(dt) * eps
        ref.append(x)
    np.testing.assert_allclose(out, np.stack(ref), rtol=1e-5, atol=1e-5)


def test_ou_is_mean_reverting_with_the_stationary_variance():
    theta, sigma, dt, mu = 0.5, 0.3, 0.1, 2.0
    keys = jax.random.split(jax.random.PRNGKey(1), 4000)
    _, xs = jax.lax.scan(
        lambda x, k: ou_step(x, k, mu, sigma, theta, dt)[::-1], ou_init((256,)), keys
    )
    tail = np.asarray(xs[1000:])
    # AR(1) x' = (1 - theta dt) x + ...: variance sigma^2 dt / (1 - (1 - theta dt)^2).
    var = sigma**2 * dt / (1 - (1 - theta * dt) ** 2)
    np.testing.assert_allclose(tail.mean(), mu, atol=0.02)
    np.testing.assert_allclose(tail.var(), var, rtol=0.05)


def test_ou_state_reset_as_a_carry_restores_only_finished_envs():
    # The OU state is an agent's per-env carry: the runner resets it with reset_carry.
    x = jnp.arange(12.0).reshape(SHAPE)
    done = jnp.array([False, True, False, True])
    out = np.asarray(reset_carry(x, ou_init(SHAPE), done))
    np.testing.assert_array_equal(out[[0, 2]], np.asarray(x)[[0, 2]])
    np.testing.assert_array_equal(out[[1, 3]], 0.0)
    out = np.asarray(reset_carry(x, ou_init(SHAPE, x0=jnp.array([1.0, 2.0, 3.0])), done))
    np.testing.assert_array_equal(out[1], [1.0, 2.0, 3.0])


def test_gaussian_and_clipped_gaussian_match_numpy():
    key = jax.random.PRNGKey(2)
    (eps,) = normals([key], SHAPE)
    np.testing.assert_allclose(gaussian_noise(key, SHAPE, MU, SIGMA), MU + SIGMA * eps, rtol=1e-6)
    low, high = np.array([-0.1, 0.0, -1.0]), np.array([0.1, 1.0, -0.99])
    np.testing.assert_allclose(
        clipped_gaussian_noise(key, SHAPE, MU, SIGMA, low, high),
        np.clip(MU + SIGMA * eps, low, high),
        rtol=1e-6,
    )


def test_uniform_matches_numpy_and_its_per_dimension_bounds():
    key = jax.random.PRNGKey(3)
    low, high = np.array([-1.0, 0.0, 5.0]), np.array([1.0, 0.1, 6.0])
    u = np.asarray(jax.random.uniform(key, SHAPE, jnp.float32), np.float64)
    np.testing.assert_allclose(
        uniform_noise(key, SHAPE, low, high), low + (high - low) * u, rtol=1e-6
    )
    big = np.asarray(uniform_noise(key, (20_000, 3), low, high))
    assert (big >= low).all() and (big < high).all()
    np.testing.assert_allclose(big.mean(0), (low + high) / 2, atol=0.02)


def test_gaussian_per_dimension_moments():
    x = np.asarray(gaussian_noise(jax.random.PRNGKey(4), (50_000, 3), MU, SIGMA))
    np.testing.assert_allclose(x.mean(0), MU, atol=0.02)
    np.testing.assert_allclose(x.std(0), SIGMA, rtol=0.02)
