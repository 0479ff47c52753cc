"""Step-indexed schedules for hyperparameters such as the exploration rate epsilon:
linear, exponential (multiplicative) and piecewise linear."""

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


def exponential_schedule(
    init_value: ArrayLike, end_value: ArrayLike, decay: ArrayLike, steps_per_decay: int = 1
) -> Callable[[ArrayLike], Array]:
    r"""Multiplicative decay with a floor: :math:`v(t) = \max(E,\ I\, d^{\,t / s})`.

    With ``s = steps_per_decay`` the value is multiplied by ``d = decay`` once per ``s``
    steps: machin's ``epsilon_decay`` (epsilon multiplied by it at every batched acting
    call, ``s`` = the number of parallel envs when ``t`` counts env steps). ``I``, ``E`` and
    ``d`` may be traced; ``s`` is a static int ``>= 1``. Returns ``schedule(step)`` in
    float32.
    """
    if isinstance(steps_per_decay, bool) or not isinstance(steps_per_decay, int):
        raise ValueError(f"steps_per_decay must be a Python int >= 1, got {steps_per_decay!r}")
    if steps_per_decay < 1:
        raise ValueError(f"steps_per_decay must be a Python int >= 1, got {steps_per_decay!r}")

    def schedule(step: ArrayLike) -> Array:
        t = jnp.asarray(step, jnp.float32) / steps_per_decay
        value = jnp.asarray(init_value, jnp.float32) * jnp.asarray(decay, jnp.float32) ** t
        return jnp.maximum(jnp.asarray(end_value, jnp.float32), value)

    return schedule


def piecewise_linear_schedule(
    boundaries: tuple[int, ...], values: tuple[float, ...]
) -> Callable[[ArrayLike], Array]:
    r"""Linear interpolation through the points ``(boundaries[i], values[i])``, constant
    before the first and after the last (``np.interp``; OpenAI Baselines'
    ``PiecewiseSchedule``). ``boundaries`` strictly increasing, as many as ``values``
    (else ``ValueError``). Returns ``schedule(step)`` in float32."""
    if len(boundaries) != len(values) or not boundaries:
        raise ValueError(f"need as many boundaries as values, at least one: {boundaries}, {values}")
    if any(b >= c for b, c in zip(boundaries, boundaries[1:], strict=False)):
        raise ValueError(f"boundaries must be strictly increasing, got {list(boundaries)}")
    xs = jnp.asarray(boundaries, jnp.float32)
    ys = jnp.asarray(values, jnp.float32)

    def schedule(step: ArrayLike) -> Array:
        return jnp.interp(jnp.asarray(step, jnp.float32), xs, ys)

    return schedule
