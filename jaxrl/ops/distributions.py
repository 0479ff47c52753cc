"""Action distributions of stochastic policies as pure functions of their parameters.

* Categorical over ``{0, ..., A-1}`` given unnormalized ``logits [..., A]``.
* Diagonal Gaussian over ``R^D`` given ``mean [..., D]`` and ``log_std`` (broadcastable to
  ``[..., D]``; PPO's continuous policy uses a state-independent ``log_std [D]``).

Each has ``*_log_prob``, ``*_entropy``, ``*_sample`` and ``*_mode``; log-probabilities and
entropies are in nats and float32. ``categorical_mask`` restricts a categorical to the
legal actions of a mask. The tanh-squashed Gaussian of SAC (``ops/squashed_gaussian.py``)
uses ``gaussian_log_prob`` for its pre-squash density.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array

_LOG_2PI = math.log(2.0 * math.pi)


def categorical_log_prob(logits: Array, action: Array) -> Array:
    r"""``log pi(a) = logits_a - logsumexp(logits)``.

    Args:
      logits: ``[..., A]`` float.
      action: ``[...]`` int in ``[0, A)``.

    Returns:
      ``[...]`` float32.
    """
    log_p = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: Array) -> Array:
    r"""``H = -sum_a pi(a) log pi(a)``, ``[..., A] -> [...]`` float32."""
    log_p = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


def categorical_mask(logits: Array, mask: Array | None) -> Array:
    """``logits [..., A]`` with every illegal action (``mask [..., A]`` False) set to the
    lowest finite float of their dtype, so that it has probability 0 for sampling, the mode,
    the log-probability and the entropy alike (-inf would make the entropy NaN: 0 * -inf).
    ``mask`` None (no legal-action mask) returns ``logits`` itself. Apply it once, to the
    logits both acting and the loss see, so that PPO's ratio compares like with like."""
    if mask is None:
        return logits
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


def categorical_sample(key: Array, logits: Array) -> Array:
    """One action per row, ``[..., A] -> [...]`` int32 (Gumbel-max)."""
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def categorical_mode(logits: Array) -> Array:
    """The most probable action, ``[..., A] -> [...]`` int32 (the greedy action)."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def gaussian_log_prob(mean: ArrayLike, log_std: ArrayLike, action: ArrayLike) -> Array:
    r"""Log-density of a diagonal Gaussian, summed over the last axis:

    .. math::
        \log \pi(a) = -\sum_d \left[\frac{(a_d - \mu_d)^2}{2\sigma_d^2} + \log\sigma_d
                      + \tfrac12 \log 2\pi\right].

    Args:
      mean: ``[..., D]``; log_std: broadcastable to ``[..., D]``; action: ``[..., D]``
        (any of the three may broadcast against the others; SAC passes the pre-squash
        sample ``u`` as ``action``).

    Returns:
      ``[...]`` float32.
    """
    mean, log_std, action = jnp.asarray(mean), jnp.asarray(log_std), jnp.asarray(action)
    mean = jnp.broadcast_to(mean, jnp.broadcast_shapes(mean.shape, action.shape))
    log_std = jnp.broadcast_to(log_std, mean.shape)
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * jnp.square(z) - log_std - 0.5 * _LOG_2PI, axis=-1)


def gaussian_entropy(mean: Array, log_std: Array) -> Array:
    r"""``H = sum_d (log sigma_d + 0.5 log(2 pi e))``, ``[...]`` float32 (independent of
    the mean; ``mean`` only gives the batch shape)."""
    log_std = jnp.broadcast_to(log_std, mean.shape)
    return jnp.sum(log_std + 0.5 * (_LOG_2PI + 1.0), axis=-1)


def gaussian_sample(key: Array, mean: Array, log_std: Array) -> Array:
    """``a = mean + exp(log_std) * eps``, ``eps ~ N(0, I)``; ``[..., D]`` float32."""
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def gaussian_mode(mean: Array, log_std: Array) -> Array:
    """The mode of the Gaussian: ``mean`` (the greedy action before clipping)."""
    del log_std
    return mean
