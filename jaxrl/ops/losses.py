"""Elementwise regression losses for temporal-difference errors.

Both losses act elementwise on an array of any shape and dtype-preserving for floating
inputs; reduce (mean / sum / weighted by importance weights) at the call site.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array


def huber_loss(x: ArrayLike, delta: ArrayLike = 1.0) -> Array:
    r"""Huber loss, elementwise.

    .. math::
        L_\delta(x) = \begin{cases}
            \tfrac12 x^2 & |x| \le \delta \\
            \delta\,(|x| - \tfrac12 \delta) & |x| > \delta
        \end{cases}

    Quadratic near zero and linear in the tails, so its gradient is the TD error clipped
    to ``[-delta, delta]``: the "error clipping" of Mnih et al. (2015), "Human-level
    control through deep reinforcement learning", Nature 518. Computed as in
    ``rlax.huber_loss``, ``q = min(|x|, delta)``, ``0.5 q^2 + delta (|x| - q)``, which
    has a well-defined gradient everywhere (``x`` at ``|x| <= delta``, ``delta sign(x)``
    outside).

    Args:
      x: float array of any shape, typically TD errors.
      delta: positive float (or scalar array, may be traced) at which the loss turns
        linear.

    Returns:
      Array with the shape and dtype of ``x``.
    """
    x = jnp.asarray(x)
    abs_x = jnp.abs(x)
    quadratic = jnp.minimum(abs_x, delta)
    linear = abs_x - quadratic
    return (0.5 * quadratic**2 + delta * linear).astype(x.dtype)


def l2_loss(x: ArrayLike) -> Array:
    r"""Half squared error, elementwise: :math:`L(x) = \tfrac12 x^2`.

    Its gradient is ``x`` itself (as ``rlax.l2_loss`` and ``optax.l2_loss``).

    Args:
      x: float array of any shape.

    Returns:
      Array with the shape and dtype of ``x``.
    """
    x = jnp.asarray(x)
    return 0.5 * jnp.square(x)
