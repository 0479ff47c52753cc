r"""The tanh-squashed diagonal Gaussian policy of SAC (Haarnoja et al. 2018, Appendix C).

A pre-squash sample :math:`u \sim \mathcal N(\mu, \operatorname{diag}\sigma^2)` is squashed
to :math:`a = c + h \tanh(u)` in the box ``[low, high]`` (centre :math:`c = (high + low)/2`,
half-width :math:`h = (high - low)/2`). By the change of variables

.. math::
    \log \pi(a) = \sum_i \Big[\log \mathcal N(u_i; \mu_i, \sigma_i)
                  - \log\big(1 - \tanh^2 u_i\big) - \log h_i\Big],

where the Jacobian term is evaluated in the numerically stable form

.. math:: \log(1 - \tanh^2 u) = 2\,(\log 2 - u - \operatorname{softplus}(-2u)),

exact for every ``u`` (no ``1e-6`` fudge; ``1 - tanh(u)**2`` underflows to 0 in float32
for ``|u| > 9``). With the default box ``[-1, 1]`` the ``log h`` term is zero, which is the
convention of SAC's reference code and Stable-Baselines3 (actions normalized to [-1, 1]).

All functions act on the last axis (the action dimensions ``A``) and broadcast over
leading axes; log-probabilities are summed over ``A``. The unsquashed Gaussian's density
is ``ops.distributions.gaussian_log_prob``, shared with PPO's policy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.ops.distributions import gaussian_log_prob

Array = jax.Array

_LOG_2 = math.log(2.0)


def tanh_log_det_jacobian(u: ArrayLike) -> Array:
    r"""Elementwise :math:`\log(1 - \tanh^2 u) = 2(\log 2 - u - \operatorname{softplus}(-2u))`.

    Args:
      u: float array of pre-squash values, any shape.

    Returns:
      Array of ``u``'s shape and dtype, the log-derivative of ``tanh`` at ``u`` (<= 0).
    """
    u = jnp.asarray(u)
    return 2.0 * (_LOG_2 - u - jax.nn.softplus(-2.0 * u))


def squash(u: ArrayLike, low: ArrayLike = -1.0, high: ArrayLike = 1.0) -> Array:
    """``c + h * tanh(u)``: pre-squash values ``[..., A]`` to actions in ``[low, high]``."""
    low, high = jnp.asarray(low), jnp.asarray(high)
    return (high + low) / 2 + (high - low) / 2 * jnp.tanh(u)


def squashed_gaussian_log_prob(
    u: ArrayLike,
    mean: ArrayLike,
    log_std: ArrayLike,
    low: ArrayLike = -1.0,
    high: ArrayLike = 1.0,
) -> Array:
    r"""Log-density of the squashed action :math:`a = c + h\tanh(u)` (see module docstring).

    Args:
      u: ``[..., A]`` pre-squash value (``log_prob`` takes ``u`` rather than ``a`` because
        inverting ``tanh`` near the box edges loses precision).
      mean, log_std: ``[..., A]`` parameters of the pre-squash Gaussian.
      low, high: the box, scalars or ``[A]``.

    Returns:
      ``[...]`` float array, :math:`\log\pi(a)` with respect to Lebesgue measure on the box.
    """
    half = (jnp.asarray(high) - jnp.asarray(low)) / 2
    log_half = jnp.broadcast_to(jnp.log(half), jnp.shape(u))
    correction = jnp.sum(tanh_log_det_jacobian(u) + log_half, axis=-1)
    return gaussian_log_prob(mean, log_std, u) - correction


def squashed_gaussian_sample(
    key: jax.Array,
    mean: ArrayLike,
    log_std: ArrayLike,
    low: ArrayLike = -1.0,
    high: ArrayLike = 1.0,
) -> tuple[Array, Array]:
    r"""A reparameterized sample and its log-probability.

    :math:`u = \mu + \sigma \odot \varepsilon`, :math:`\varepsilon \sim \mathcal N(0, I)`,
    so gradients flow to ``mean`` and ``log_std`` (the reparameterization trick, SAC eq. 11).

    Args:
      key: PRNG key.
      mean, log_std: ``[..., A]`` float arrays.
      low, high: the box, scalars or ``[A]``.

    Returns:
      ``(action [..., A] in [low, high], log_prob [...])``.
    """
    mean, log_std = jnp.asarray(mean), jnp.asarray(log_std)
    eps = jax.random.normal(key, mean.shape, mean.dtype)
    u = mean + jnp.exp(log_std) * eps
    return squash(u, low, high), squashed_gaussian_log_prob(u, mean, log_std, low, high)
