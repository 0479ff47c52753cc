"""The VAE's ELBO (ops/vae.py) against a slow float64 NumPy reference: the KL of diagonal
Gaussians from the multivariate formula (trace, quadratic, log-determinant), element by
element; and the reparameterization's moments."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.vae import elbo_loss, gaussian_kl, reparameterize


def numpy_kl(mean, log_std):
    """KL(N(mu, S) || N(0, I)) = (tr S + mu^T mu - L - log det S) / 2, per row, float64."""
    out = np.zeros(mean.shape[0])
    for b in range(mean.shape[0]):
        cov = np.diag(np.exp(2.0 * log_std[b].astype(np.float64)))
        mu = mean[b].astype(np.float64)
        _, logdet = np.linalg.slogdet(cov)
        out[b] = 0.5 * (np.trace(cov) + mu @ mu - len(mu) - logdet)
    return out


def test_elbo_matches_numpy_float64():
    rng = np.random.default_rng(0)
    x, x_hat = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    mean, log_std = rng.normal(size=(5, 2)), 0.5 * rng.normal(size=(5, 2))
    beta = 0.3
    f32 = lambda a: jnp.asarray(a, jnp.float32)
    loss, parts = elbo_loss(f32(x), f32(x_hat), f32(mean), f32(log_std), beta)
    restore = sum((x[b, d] - x_hat[b, d]) ** 2 for b in range(5) for d in range(3)) / 15
    kl = numpy_kl(mean, log_std)
    np.testing.assert_allclose(gaussian_kl(f32(mean), f32(log_std)), kl, rtol=1e-5)
    np.testing.assert_allclose(float(parts["restore_loss"]), restore, rtol=1e-5)
    np.testing.assert_allclose(float(parts["kl_loss"]), kl.mean(), rtol=1e-5)
    np.testing.assert_allclose(float(loss), restore + beta * kl.mean(), rtol=1e-5)
    # The prior itself has zero KL; any other posterior a positive one.
    assert float(gaussian_kl(jnp.zeros(4), jnp.zeros(4))) == 0.0
    assert (kl > 0).all()


def test_reparameterize_moments_and_gradient():
    mean, log_std = jnp.float32([1.0, -2.0]), jnp.log(jnp.float32([0.5, 2.0]))
    z = reparameterize(jax.random.PRNGKey(0), jnp.broadcast_to(mean, (20000, 2)), log_std)
    np.testing.assert_allclose(z.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(z.std(0), [0.5, 2.0], rtol=0.03)
    grad = jax.grad(lambda m: reparameterize(jax.random.PRNGKey(1), m, log_std).sum())(mean)
    np.testing.assert_array_equal(grad, 1.0)  # dz/dmu = 1
