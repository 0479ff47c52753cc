"""HL-Gauss: a value trained as a histogram by cross-entropy on Gaussian-smoothed targets.

References:
  Imani & White (2018), "Improving Regression Performance with Distributional Losses",
  ICML (the histogram loss, HL-Gauss).
  Farebrother et al. (2024), "Stop Regressing: Training Value Functions via
  Classification for Scalable Deep RL", ICML, sec. 3.1 and Listing 1 (the target
  histogram; ``sigma = 0.75`` bin widths recommended). Emote's
  ``HLGaussLoss(min_value, max_value, num_bins, sigma)`` is the same op.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import erf
from jax.typing import ArrayLike

Array = jax.Array


def hl_gauss_edges(min_value: float, max_value: float, num_bins: int) -> Array:
    """The ``num_bins + 1`` evenly spaced bin edges on ``[min_value, max_value]``, float32."""
    if not isinstance(num_bins, int) or num_bins < 2:
        raise ValueError(f"num_bins must be a Python int >= 2, got {num_bins!r}")
    if not min_value < max_value:
        raise ValueError(f"need min_value < max_value, got {min_value}, {max_value}")
    return jnp.linspace(min_value, max_value, num_bins + 1, dtype=jnp.float32)


def hl_gauss_centers(min_value: float, max_value: float, num_bins: int) -> Array:
    """The ``[num_bins]`` bin centres (the values a histogram's mean is taken over)."""
    edges = hl_gauss_edges(min_value, max_value, num_bins)
    return (edges[:-1] + edges[1:]) / 2


def hl_gauss_target(
    target: ArrayLike, min_value: float, max_value: float, num_bins: int, sigma: float
) -> Array:
    r"""The HL-Gauss target histogram of scalar targets ``y``:

    .. math::
        p_i = \frac{\Phi\big(\frac{e_{i+1} - y}{\sigma}\big) - \Phi\big(\frac{e_i - y}{\sigma}\big)}
                   {\Phi\big(\frac{e_K - y}{\sigma}\big) - \Phi\big(\frac{e_0 - y}{\sigma}\big)},

    the mass of :math:`\mathcal N(y, \sigma^2)` in bin ``i`` of the edges ``e_0..e_K``
    (``hl_gauss_edges``), renormalised to the support (Farebrother et al. 2024, Listing 1;
    :math:`\Phi(x) = (1 + \mathrm{erf}(x / \sqrt 2)) / 2`). Targets are clipped to
    ``[min_value, max_value]`` first (as in Listing 1).

    Args:
      target: ``[...]`` scalar targets.
      min_value, max_value: static support bounds.
      num_bins: static ``K >= 2``.
      sigma: static ``> 0``, the Gaussian's standard deviation in value units.

    Returns:
      ``[..., num_bins]`` float32 probabilities summing to 1.
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    edges = hl_gauss_edges(min_value, max_value, num_bins)
    y = jnp.clip(jnp.asarray(target, jnp.float32), min_value, max_value)
    cdf = erf((edges - y[..., None]) / (jnp.sqrt(2.0) * sigma))
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / (cdf[..., -1:] - cdf[..., :1])


def hl_gauss_loss(
    logits: ArrayLike,
    target: ArrayLike,
    min_value: float,
    max_value: float,
    num_bins: int,
    sigma: float,
) -> Array:
    """Cross-entropy of ``logits [..., K]`` against ``hl_gauss_target(target [...])``
    (stop-gradient), ``[...]`` float32: Emote's ``HLGaussLoss.forward``."""
    probs = jax.lax.stop_gradient(hl_gauss_target(target, min_value, max_value, num_bins, sigma))
    return -(probs * jax.nn.log_softmax(jnp.asarray(logits), axis=-1)).sum(axis=-1)
