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


def hysteretic_target(
    value: jax.Array, target: jax.Array, increase_rate: ArrayLike, decrease_rate: ArrayLike
) -> jax.Array:
    r"""The hysteretic regression target of machin's ``HDDPG`` (after hysteretic
    Q-learning, Matignon et al. 2007, "Hysteretic Q-learning").

    .. math::
        \delta = y - Q,\qquad
        \tilde y = Q + \begin{cases} \text{increase\_rate}\;\delta & \delta > 0 \\
                                      \text{decrease\_rate}\;\delta & \text{otherwise}
                       \end{cases}

    Regressing ``Q`` on ``stop_gradient(y~)`` moves the critic up by a fraction
    ``increase_rate`` of the error and down by ``decrease_rate`` (a squared loss's
    gradient is scaled by the rate on each side); both 1 give ``y`` back.

    Args:
      value: ``Q``, float array ``[..., B]`` (e.g. ``[K, B]`` critics).
      target: ``y``, float array broadcastable to ``value``'s shape.
      increase_rate, decrease_rate: float scalars (may be traced), usually in ``[0, 1]``.

    Returns:
      ``y~`` with ``value``'s shape and dtype, gradient stopped.
    """
    delta = target - value
    rate = jnp.where(delta > 0, increase_rate, decrease_rate)
    return jax.lax.stop_gradient(value + rate * delta).astype(jnp.result_type(value))
