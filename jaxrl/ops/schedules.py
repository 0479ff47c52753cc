"""Step-indexed schedules for hyperparameters such as the exploration rate epsilon."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array


def linear_schedule(
    init_value: ArrayLike,
    end_value: ArrayLike,
    transition_steps: int,
    transition_begin: int = 0,
) -> Callable[[ArrayLike], Array]:
    r"""Linear interpolation from ``init_value`` to ``end_value``, then constant.

    .. math::
        v(t) = (1 - f)\,I + f\,E, \qquad
        f = \mathrm{clip}\!\left(\frac{t - B}{T}, 0, 1\right),

    with ``I = init_value``, ``E = end_value``, ``B = transition_begin``,
    ``T = transition_steps``: ``v(t) = I`` for ``t <= B``, linear in between, and
    ``v(t) = E`` for ``t >= B + T``. The same as ``optax.linear_schedule`` and RLHive's
    ``hive.utils.schedule.LinearSchedule(init_value, end_value, steps)`` (whose ``k``-th
    ``update()`` call, counting from 0, returns ``v(k)`` with ``B = 0``), e.g. the
    epsilon-greedy annealing of Mnih et al. (2015). The form ``(1-f) I + f E`` returns
    ``I`` and ``E`` exactly at the ends.

    ``transition_steps == 0`` jumps from ``I`` to ``E`` at ``t = B`` (the limit of the
    linear ramp; ``optax`` instead holds ``I`` forever for a non-positive
    ``transition_steps``).

    Args:
      init_value: value at and before ``transition_begin``; float or scalar array, may be
        traced (e.g. read from a vmapped hparams pytree).
      end_value: value at and after ``transition_begin + transition_steps``; likewise.
      transition_steps: static Python int ``>= 0``, the length of the ramp.
      transition_begin: static Python int ``>= 0``, the step at which the ramp starts.

    Returns:
      ``schedule(step) -> value``: ``step`` is an int or integer/float array of any shape
      (may be traced); the value broadcasts ``step`` against ``init_value``/``end_value``
      and has their floating dtype (float32 by default).

    Raises:
      ValueError: if ``transition_steps`` or ``transition_begin`` is negative or not int.
    """
    for name, v in (("transition_steps", transition_steps), ("transition_begin", transition_begin)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be a Python int >= 0, got {v!r}")

    def schedule(step: ArrayLike) -> Array:
        init = jnp.asarray(init_value)
        end = jnp.asarray(end_value)
        dtype = jnp.result_type(init, end, jnp.float32)
        t = jnp.asarray(step) - transition_begin
        if transition_steps == 0:
            frac = (t >= 0).astype(dtype)
        else:
            frac = jnp.clip(t, 0, transition_steps).astype(dtype) / transition_steps
        return (1 - frac) * init.astype(dtype) + frac * end.astype(dtype)

    return schedule
