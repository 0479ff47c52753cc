r"""The invertible value rescaling of R2D2 and Ape-X DQfD (Pohlen et al. 2018).

.. math::
    h(x) = \operatorname{sign}(x)\left(\sqrt{|x| + 1} - 1\right) + \varepsilon x,

which squashes large returns roughly to their square root while staying strictly
increasing (so invertible) and Lipschitz-invertible near 0; its inverse (Pohlen et al.
2018, "Observe and Look Further", Proposition A.2) is

.. math::
    h^{-1}(x) = \operatorname{sign}(x)\left(\left(\frac{\sqrt{1 + 4\varepsilon(|x| + 1
    + \varepsilon)} - 1}{2\varepsilon}\right)^2 - 1\right).

A Q-learner with it regresses ``Q`` on ``h(r + gamma h^{-1}(Q'))`` instead of ``r + gamma
Q'`` (Kapturowski et al. 2019, section 2, with ``eps = 1e-3``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array

RESCALE_EPS = 1e-3  # R2D2's and Ape-X DQfD's epsilon


def value_rescale(x: ArrayLike, eps: float = RESCALE_EPS) -> Array:
    """``h(x)`` elementwise (module docstring); any shape, float; ``eps > 0``."""
    x = jnp.asarray(x)
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1.0) - 1.0) + eps * x


def inverse_value_rescale(x: ArrayLike, eps: float = RESCALE_EPS) -> Array:
    """``h^{-1}(x)`` elementwise, the exact inverse of :func:`value_rescale` with the same
    ``eps`` (module docstring); any shape, float."""
    x = jnp.asarray(x)
    # (sqrt(1 + a) - 1) / (2 eps) with a = 4 eps u, written without the cancellation.
    u = jnp.abs(x) + 1.0 + eps
    root = 2.0 * u / (jnp.sqrt(1.0 + 4.0 * eps * u) + 1.0)
    return jnp.sign(x) * (jnp.square(root) - 1.0)
