"""Parameter-space noise ops against NumPy references."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.param_noise import (
    action_distance,
    adapt_noise_scale,
    epsilon_kl_threshold,
    perturb_params,
    softmax_kl,
)


def test_perturb_params_adds_scaled_standard_normals_per_leaf():
    params = {"a": jnp.zeros((200, 50)), "b": jnp.ones((3000,))}
    noisy = perturb_params(jax.random.PRNGKey(0), params, 0.3)
    np.testing.assert_allclose(np.std(noisy["a"]), 0.3, rtol=0.03)
    np.testing.assert_allclose(np.mean(noisy["b"]), 1.0, atol=0.03)
    assert not np.allclose(noisy["a"].reshape(-1)[:3000] / 0.3, noisy["b"] - 1)  # own keys
    zero = perturb_params(jax.random.PRNGKey(0), params, 0.0)
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, zero, params)))


def test_adapt_noise_scale_rises_below_and_falls_above_the_threshold():
    np.testing.assert_allclose(adapt_noise_scale(0.1, 0.05, 0.2), 0.101, rtol=1e-6)
    np.testing.assert_allclose(adapt_noise_scale(0.1, 0.2, 0.2), 0.101, rtol=1e-6)
    np.testing.assert_allclose(adapt_noise_scale(0.1, 0.3, 0.2), 0.1 / 1.01, rtol=1e-6)


def test_distances_against_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 8, 3))
    np.testing.assert_allclose(action_distance(a, b), np.sqrt(((a - b) ** 2).mean()), rtol=1e-5)
    p = np.exp(a) / np.exp(a).sum(-1, keepdims=True)
    q = np.exp(b) / np.exp(b).sum(-1, keepdims=True)
    want = (p * np.log(p / q)).sum(-1).mean()
    np.testing.assert_allclose(softmax_kl(a, b), want, rtol=1e-5)
    assert float(softmax_kl(a, a)) == 0.0
    np.testing.assert_allclose(epsilon_kl_threshold(0.1, 4), -np.log(1 - 0.1 + 0.1 / 4), rtol=1e-6)
