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


def periodic_update(
    target_params: Params, online_params: Params, step: ArrayLike, period: ArrayLike
) -> Params:
    r"""Hard target update every ``period`` steps (Mnih et al., 2015).

    .. math::
        \theta' \leftarrow \begin{cases} \theta & \text{step} \bmod \text{period} = 0 \\
        \theta' & \text{otherwise} \end{cases}

    Implemented with ``jnp.where`` on every leaf (a select, not ``lax.cond``), so it is
    correct for every batching pattern under ``jax.vmap``: an unbatched ``step`` with
    batched params broadcasts the same decision to every member, a batched ``step``
    decides per member. Cost: one elementwise select over the parameters.

    Args:
      target_params: pytree of arrays, ``theta'``.
      online_params: pytree with the same structure and shapes, ``theta``.
      step: int scalar (or array, may be traced), the update counter.
      period: positive int (Python int or traced integer scalar).

    Returns:
      Pytree like ``target_params`` (leaves keep the target leaves' dtypes).

    Raises:
      ValueError: if ``period`` is a Python int smaller than 1.
    """
    if isinstance(period, int) and period < 1:
        raise ValueError(f"period must be >= 1, got {period}")
    update = jnp.asarray(step) % period == 0
    return jax.tree.map(
        lambda t, o: jnp.where(update, o, t).astype(jnp.result_type(t)),
        target_params,
        online_params,
    )
