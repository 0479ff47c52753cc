r"""The variational autoencoder's loss (Kingma & Welling 2014, "Auto-Encoding Variational
Bayes", ICLR; the :math:`\beta`-weighted KL of Higgins et al. 2017), as GenRL-style action
priors use it (Emote's ``VariationalAutoencoder.loss``).

An encoder maps a datum :math:`x` ``[B, D]`` (and a condition) to a diagonal Gaussian
posterior :math:`q(z|x) = \mathcal N(\mu, \operatorname{diag}\sigma^2)` over a latent
:math:`z` ``[B, L]``; a latent is drawn by the reparameterization
:math:`z = \mu + \sigma \odot \varepsilon`, :math:`\varepsilon \sim \mathcal N(0, I)`
(``reparameterize``), and the decoder maps it back to :math:`\hat x`. The loss is the
negative ELBO with a fixed-variance Gaussian decoder, up to constants and scale:

.. math:: L = \operatorname{mean}_{b,d}\,(x_{bd} - \hat x_{bd})^2
          + \beta\, \operatorname{mean}_b \mathrm{KL}_b,\qquad
          \mathrm{KL}_b = \mathrm{KL}\big(\mathcal N(\mu_b, \sigma_b^2)\,\|\,
          \mathcal N(0, I)\big) = \tfrac12 \sum_{l} \big(\mu_{bl}^2 + \sigma_{bl}^2 - 1
          - 2 \log\sigma_{bl}\big)

(the closed form of Kingma & Welling's Appendix B). The reconstruction term is a mean
over elements, as Emote's (``F.mse_loss``), so its ``beta`` (0.01 by default) means the
same here. All functions are pure and jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gaussian_kl(mean: jax.Array, log_std: jax.Array) -> jax.Array:
    r"""``[...]`` float32: :math:`\mathrm{KL}(\mathcal N(\mu, \sigma^2) \| \mathcal N(0, I))`
    of diagonal Gaussians, summed over the last axis (``mean``, ``log_std`` ``[..., L]``)."""
    var = jnp.exp(2.0 * log_std)
    return 0.5 * jnp.sum(mean**2 + var - 1.0 - 2.0 * log_std, axis=-1)


def reparameterize(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    r"""A latent :math:`z = \mu + \sigma \odot \varepsilon` ``[..., L]`` (differentiable in
    ``mean`` and ``log_std``; ``key`` draws :math:`\varepsilon`)."""
    eps = jax.random.normal(key, mean.shape, mean.dtype)
    return mean + jnp.exp(log_std) * eps


def elbo_loss(
    x: jax.Array, x_hat: jax.Array, mean: jax.Array, log_std: jax.Array, beta: jax.Array | float
) -> tuple[jax.Array, dict[str, jax.Array]]:
    r"""``(L, {"restore_loss", "kl_loss"})`` (module docstring): ``x``, ``x_hat`` ``[B, D]``,
    the posterior's ``mean`` and ``log_std`` ``[B, L]``; float32 scalars."""
    restore = jnp.mean((x - x_hat) ** 2)
    kl = jnp.mean(gaussian_kl(mean, log_std))
    return restore + beta * kl, {"restore_loss": restore, "kl_loss": kl}
