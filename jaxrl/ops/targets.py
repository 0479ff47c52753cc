"""Target-network updates over parameter pytrees."""

from __future__ import annotations

from typing import TypeVar

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Params = TypeVar("Params")


def soft_update(target_params: Params, online_params: Params, tau: ArrayLike) -> Params:
    r"""Polyak averaging of target parameters towards online parameters.

    .. math:: \theta' \leftarrow (1 - \tau)\,\theta' + \tau\,\theta

    applied leaf by leaf (Lillicrap et al., 2015, "Continuous control with deep
    reinforcement learning", the target update of DDPG; also ``optax.incremental_update``).
    ``tau = 1`` copies the online parameters, ``tau = 0`` leaves the target unchanged.

    Args:
      target_params: pytree of float arrays, ``theta'``.
      online_params: pytree with the same structure and shapes, ``theta``.
      tau: float or scalar array in ``[0, 1]`` (may be traced, e.g. from
        ``state.hparams``; a batched ``tau`` under ``jax.vmap`` works too).

    Returns:
      Pytree like ``target_params``; each leaf keeps the target leaf's dtype.
    """
    return jax.tree.map(
        lambda t, o: ((1 - tau) * t + tau * o).astype(jnp.result_type(t)),
        target_params,
        online_params,
    )
