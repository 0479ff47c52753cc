"""Importance-sampling weights of prioritized experience replay."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array


def importance_weights(probabilities: ArrayLike, num_items: ArrayLike, beta: ArrayLike) -> Array:
    r"""Importance-sampling weights of a prioritized batch, normalized by their maximum.

    Prioritized replay draws item ``i`` with probability ``P(i)`` instead of ``1 / n``;
    weighting its loss by

    .. math::
        w_i = \frac{(n\,P(i))^{-\beta}}{\max_j (n\,P(j))^{-\beta}}
            = \left(\frac{\min_j P(j)}{P(i)}\right)^{\beta}

    corrects the bias of the update fully at ``beta = 1`` (Schaul et al. 2016,
    "Prioritized Experience Replay", ICLR, Algorithm 1, line 10), where the maximum and
    minimum run over the sampled batch, so the largest weight is 1 and updates are
    only ever scaled down. ``beta`` is usually annealed linearly from ``beta_0 = 0.4`` to
    1 over training (e.g. ``jaxrl.ops.linear_schedule(0.4, 1.0, steps)``). The same as
    machin's ``PrioritizedBuffer`` and pfrl's ``normalize_by_max="batch"``.

    The normalization cancels ``n``, so the weights are computed from the ratio
    ``min_j P(j) / P(i)``, which cannot overflow for tiny probabilities; ``num_items`` is
    kept in the signature for the definition (and is checked to broadcast). Entries with
    ``P(i) <= 0`` (which a sampler never returns, except from an empty buffer) get weight
    0, and if no entry is positive all weights are 0.

    Args:
      probabilities: ``[B]`` float, the probability with which each sampled item was
        drawn (e.g. ``PrioritizedSample.probabilities``).
      num_items: int or float scalar, ``n``, the number of items the buffer could have
        drawn (e.g. ``PrioritizedReplayBuffer.num_items(state)``); may be traced.
      beta: float scalar in ``[0, 1]``, the correction exponent; may be traced.

    Returns:
      ``[B]`` float32 weights in ``[0, 1]``; ``beta = 0`` gives 1 for every positive entry.
    """
    p = jnp.asarray(probabilities, jnp.float32)
    jnp.broadcast_shapes(jnp.shape(num_items), ())
    beta = jnp.asarray(beta, jnp.float32)
    positive = p > 0
    smallest = jnp.min(jnp.where(positive, p, jnp.inf))
    ratio = smallest / jnp.where(positive, p, 1.0)  # in (0, 1]
    return jnp.where(positive, ratio**beta, 0.0).astype(jnp.float32)


R2D2_ETA = 0.9  # R2D2's mix of the max and the mean absolute TD error


def sequence_priority(td: ArrayLike, mask: ArrayLike, eta: ArrayLike = R2D2_ETA) -> Array:
    r"""The priority of replayed sequences from their TD errors (Kapturowski et al. 2019,
    "Recurrent Experience Replay in Distributed Reinforcement Learning", section 2.3):

    .. math:: p = \eta \max_t |\delta_t| + (1 - \eta)\,\overline{|\delta_t|},

    over the steps where ``mask`` is true (a sequence without one gets 0).

    Args:
      td: ``[..., T]`` float, the TD errors along each sequence.
      mask: ``[..., T]`` bool (or 0/1), the steps that count.
      eta: float in ``[0, 1]`` (0.9, the paper's); may be traced.

    Returns:
      ``[...]`` float32, non-negative.
    """
    mask, eta = jnp.asarray(mask).astype(bool), jnp.asarray(eta, jnp.float32)
    magnitude = jnp.where(mask, jnp.abs(jnp.asarray(td, jnp.float32)), 0.0)
    count = mask.sum(-1)
    mean = magnitude.sum(-1) / jnp.maximum(count, 1)
    return eta * magnitude.max(-1) + (1.0 - eta) * mean
