"""NoisyLinear (Fortunato et al. 2018, factorized Gaussian noise) against NumPy."""

import math

import flax
import flax.linen as nn
import jax
import numpy as np
import pytest

from jaxrl.networks import NoisyLinear, factorized_noise


def _f(x):
    return math.copysign(math.sqrt(abs(x)), x)


def _noise_key(key):
    """The key that the first ``make_rng("noise")`` of a top-level module gets from `key`."""

    class Probe(nn.Module):
        @nn.compact
        def __call__(self):
            return self.make_rng("noise")

    return Probe().apply({}, rngs={"noise": key})


def _random_params(rng, p, q):
    """Params with every entry distinct, so that a swapped or ignored one shows."""
    return {
        "mu_w": rng.normal(size=(p, q)).astype(np.float32),
        "sigma_w": rng.uniform(0.1, 1.0, size=(p, q)).astype(np.float32),
        "mu_b": rng.normal(size=q).astype(np.float32),
        "sigma_b": rng.uniform(0.1, 1.0, size=q).astype(np.float32),
    }


def _linear_ref(x, w, b):
    n, p = x.shape
    q = w.shape[1]
    y = np.zeros((n, q))
    for i in range(n):
        for j in range(q):
            y[i, j] = sum(float(x[i, k]) * float(w[k, j]) for k in range(p)) + float(b[j])
    return y


def test_factorized_noise_is_the_outer_product_of_signed_square_roots():
    key = jax.random.PRNGKey(7)
    eps_w, eps_b = factorized_noise(key, 5, 3)
    assert eps_w.shape == (5, 3) and eps_b.shape == (3,)
    k_in, k_out = jax.random.split(key)
    e_in = np.asarray(jax.random.normal(k_in, (5,)))
    e_out = np.asarray(jax.random.normal(k_out, (3,)))
    for i in range(5):
        for j in range(3):
            assert float(eps_w[i, j]) == pytest.approx(_f(e_in[i]) * _f(e_out[j]), rel=1e-6)
    for j in range(3):
        assert float(eps_b[j]) == pytest.approx(_f(e_out[j]), rel=1e-6)


def test_init_statistics():
    p, q, sigma0 = 64, 32, 0.3
    layer = NoisyLinear(q, sigma0=sigma0)
    params = jax.jit(layer.init)(jax.random.PRNGKey(0), np.zeros((2, p), np.float32))["params"]
    assert set(params) == {"mu_w", "sigma_w", "mu_b", "sigma_b"}
    assert params["mu_w"].shape == (p, q) and params["mu_b"].shape == (q,)
    sigma = np.float32(sigma0 / math.sqrt(p))
    np.testing.assert_array_equal(np.asarray(params["sigma_w"]), np.full((p, q), sigma))
    np.testing.assert_array_equal(np.asarray(params["sigma_b"]), np.full((q,), sigma))
    bound = 1 / math.sqrt(p)
    for name in ("mu_w", "mu_b"):
        mu = np.asarray(params[name])
        assert mu.dtype == np.float32
        assert (np.abs(mu) <= bound).all()
        assert mu.min() < -0.8 * bound and mu.max() > 0.8 * bound
    mu_w = np.asarray(params["mu_w"])
    assert abs(mu_w.mean()) < 0.1 * bound
    assert mu_w.var() == pytest.approx(bound**2 / 3, rel=0.1)  # U[-b, b]
    # The default sigma0 is RLHive's std_init = 0.5.
    default = jax.jit(NoisyLinear(4).init)(jax.random.PRNGKey(0), np.zeros((1, 16), np.float32))
    np.testing.assert_array_equal(np.asarray(default["params"]["sigma_b"]), np.float32(0.125))


def test_deterministic_uses_the_mean_weights():
    rng = np.random.default_rng(0)
    params = _random_params(rng, 6, 3)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    want = _linear_ref(x, params["mu_w"], params["mu_b"])
    got_arg = NoisyLinear(3).apply({"params": params}, x, deterministic=True)
    got_attr = NoisyLinear(3, deterministic=True).apply({"params": params}, x)
    np.testing.assert_allclose(np.asarray(got_arg), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got_attr), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(flax.errors.InvalidRngError):
        NoisyLinear(3).apply({"params": params}, x)  # noisy needs rngs={"noise": key}


def test_noisy_output_matches_factorized_formula():
    rng = np.random.default_rng(1)
    p, q = 6, 3
    params = _random_params(rng, p, q)
    x = rng.normal(size=(4, p)).astype(np.float32)
    key = jax.random.PRNGKey(42)
    got = np.asarray(NoisyLinear(q).apply({"params": params}, x, rngs={"noise": key}))
    eps_w, eps_b = (np.asarray(e) for e in factorized_noise(_noise_key(key), p, q))
    w = np.zeros((p, q))
    for i in range(p):
        for j in range(q):
            w[i, j] = params["mu_w"][i, j] + params["sigma_w"][i, j] * eps_w[i, j]
    b = [params["mu_b"][j] + params["sigma_b"][j] * eps_b[j] for j in range(q)]
    np.testing.assert_allclose(got, _linear_ref(x, w, b), rtol=1e-5, atol=1e-5)


def test_noise_is_factorized_and_shared_across_the_batch():
    # With mu = 0 and sigma = 1, rows of the identity read out eps_w + eps_b and a zero
    # row reads out eps_b, all in one call (one noise sample for the whole batch).
    p, q = 5, 4
    params = {
        "mu_w": np.zeros((p, q), np.float32),
        "sigma_w": np.ones((p, q), np.float32),
        "mu_b": np.zeros(q, np.float32),
        "sigma_b": np.ones(q, np.float32),
    }
    x = np.concatenate([np.eye(p), np.zeros((2, p))]).astype(np.float32)
    y = np.asarray(NoisyLinear(q).apply({"params": params}, x, rngs={"noise": jax.random.key(3)}))
    eps_b = y[p]
    np.testing.assert_array_equal(y[p + 1], eps_b)
    eps_w = y[:p] - eps_b
    f_in = eps_w[:, 0] / eps_b[0]
    np.testing.assert_allclose(eps_w, np.outer(f_in, eps_b), rtol=1e-4, atol=1e-5)


def test_keys_give_different_outputs_and_grads_reach_sigma():
    rng = np.random.default_rng(2)
    params = _random_params(rng, 6, 3)
    x = rng.normal(size=(2, 6)).astype(np.float32)

    def out(params, k):
        return NoisyLinear(3).apply({"params": params}, x, rngs={"noise": jax.random.PRNGKey(k)})

    a, a2, b = np.asarray(out(params, 0)), np.asarray(out(params, 0)), np.asarray(out(params, 1))
    np.testing.assert_array_equal(a, a2)
    assert np.abs(a - b).min() > 1e-4
    grads = jax.grad(lambda prm: out(prm, 0).sum())(params)
    assert np.abs(np.asarray(grads["sigma_w"])).min() > 0
    assert np.abs(np.asarray(grads["sigma_b"])).min() > 0
