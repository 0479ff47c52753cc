"""Quantile distributional RL: quantile midpoints, the quantile Huber loss and IQN's
cosine embedding of quantile fractions.

References:
  Dabney, Rowland, Bellemare & Munos (2018a), "Distributional Reinforcement Learning
  with Quantile Regression", AAAI (QR-DQN): eq. 9-10 (quantile Huber loss), Lemma 2
  (quantile midpoints).
  Dabney, Ostrovski, Silver & Munos (2018b), "Implicit Quantile Networks for
  Distributional Reinforcement Learning", ICML (IQN): eq. 4 (cosine embedding).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.ops.losses import huber_loss

Array = jax.Array


def quantile_midpoints(num_quantiles: int) -> Array:
    r"""The fractions QR-DQN's ``N`` quantiles estimate: :math:`\hat\tau_i = (2i + 1) / (2N)`,
    ``i = 0..N-1`` (Dabney et al. 2018a, Lemma 2). Returns ``[N]`` float32."""
    if not isinstance(num_quantiles, int) or num_quantiles < 1:
        raise ValueError(f"num_quantiles must be a Python int >= 1, got {num_quantiles!r}")
    return (jnp.arange(num_quantiles, dtype=jnp.float32) + 0.5) / num_quantiles


def quantile_huber_loss(
    quantiles: ArrayLike, taus: ArrayLike, targets: ArrayLike, kappa: float = 1.0
) -> Array:
    r"""Quantile (Huber) regression loss of predicted quantiles against target samples.

    .. math::
        L = \sum_{i=1}^{N} \frac{1}{M} \sum_{j=1}^{M}
            \big|\tau_i - \mathbb{1}\{u_{ij} < 0\}\big|\, \frac{L_\kappa(u_{ij})}{\kappa},
        \qquad u_{ij} = y_j - \theta_i,

    with :math:`L_\kappa` the Huber loss (``ops.huber_loss``); ``kappa == 0`` is the plain
    quantile regression loss :math:`|\tau_i - \mathbb{1}\{u_{ij}<0\}|\,|u_{ij}|` (Dabney et
    al. 2018a, eq. 10; 2018b, eq. 3; summed over predictions and averaged over targets as
    in Dopamine's QR-DQN and IQN agents). Gradients flow into ``quantiles`` only
    (``targets`` and ``taus`` are stop-gradient).

    Args:
      quantiles: ``[..., N]`` predicted quantile values :math:`\theta_i`.
      taus: ``[..., N]`` (or broadcastable) fractions :math:`\tau_i \in [0, 1]` they estimate.
      targets: ``[..., M]`` target samples :math:`y_j` (e.g. ``r + gamma^n theta'_j``).
      kappa: static Python float ``>= 0``, the Huber threshold (1.0 in both papers).

    Returns:
      ``[...]`` float32 loss per batch element.
    """
    if kappa < 0:
        raise ValueError(f"kappa must be >= 0, got {kappa}")
    quantiles = jnp.asarray(quantiles)
    taus = jax.lax.stop_gradient(jnp.asarray(taus))
    targets = jax.lax.stop_gradient(jnp.asarray(targets))
    u = targets[..., None, :] - quantiles[..., :, None]  # [..., N, M]
    weight = jnp.abs(taus[..., :, None] - (u < 0).astype(u.dtype))
    scaled = huber_loss(u, kappa) / kappa if kappa > 0 else jnp.abs(u)
    return (weight * scaled).mean(axis=-1).sum(axis=-1)


def cosine_embedding(taus: ArrayLike, embedding_dim: int) -> Array:
    r"""IQN's embedding of quantile fractions: :math:`\cos(\pi\, i\, \tau)` for
    ``i = 1..embedding_dim`` (Dabney et al. 2018b, eq. 4, which counts ``i`` from 0;
    from 1 as in Dopamine's IQN network, which drops the constant feature ``cos 0``).

    Args:
      taus: ``[...]`` fractions in ``[0, 1]``.
      embedding_dim: static ``n`` (64 in the paper and Dopamine).

    Returns:
      ``[..., embedding_dim]`` float32.
    """
    i = jnp.arange(1, embedding_dim + 1, dtype=jnp.float32)
    return jnp.cos(jnp.pi * i * jnp.asarray(taus, jnp.float32)[..., None])
