"""The one replay-buffer protocol that uniform, prioritized and compact storage implement.

In flashbax's style a buffer is a ``ReplayBuffer`` NamedTuple of pure functions over a
state pytree of arrays, so it lives inside an agent's state and works under ``jit``,
``scan`` and ``vmap``. Every buffer returns the same ``ReplaySample``. Priority knobs
(``alpha``, ``eps``) are not buffer state: they are passed in as ``PriorityParams``, taken
by an agent from its ``hparams`` (where a sweep reaches them); a uniform buffer ignores
them, and its ``update_priorities`` returns the state unchanged.

Observations, and every stored field, are pytrees: a dict observation
``{"obs": ..., "action_mask": ...}`` goes in through ``add`` and comes back, leaf by leaf,
in ``ReplaySample.experience``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

Array = jax.Array
PyTree = Any
BufferState = Any


class PriorityParams(NamedTuple):
    """The knobs of proportional prioritization (Schaul et al. 2016), float32 scalars
    (arrays, so a sweep can vmap over them): an item's weight is ``(|p| + eps) ** alpha``.
    """

    alpha: Array
    eps: Array


class ReplaySample(NamedTuple):
    """A batch of ``B`` windows of ``window`` consecutive steps of one environment each.

    Attributes:
      experience: pytree like the stored data with leaves ``[B, window, ...]``; entry
        ``[b, j]`` is row ``(time_index[b] + j) mod L`` of env ``env_index[b]``.
      time_index: ``[B]`` int32, the storage row of each window's first step.
      env_index: ``[B]`` int32, the env (column) of each window.
      indices: ``[B]`` int32, the item ``time_index * N + env_index``: what
        ``update_priorities`` takes.
      probabilities: ``[B]`` float32, the probability with which each item was drawn
        (``1 / num_items`` for a uniform buffer), for importance weights
        ``(num_items * probabilities) ** -beta`` (:func:`jaxrl.ops.importance_weights`).
    """

    experience: PyTree
    time_index: Array
    env_index: Array
    indices: Array
    probabilities: Array


class ReplayBuffer(NamedTuple):
    """Pure functions of a replay buffer (uniform, prioritized or compact).

    init:              ``(example: pytree of [N, ...]) -> state``
    add:               ``(state, batch: pytree of [T, N, ...], priority=None) -> state``
    sample:            ``(state, key) -> ReplaySample``
    can_sample:        ``(state) -> bool scalar array``
    update_priorities: ``(state, indices [K], priorities [K], priority=None) -> state``;
                       returns ``state`` unchanged for a uniform buffer.
    num_items:         ``(state) -> int32 scalar array``, the number of valid items.
    gather:            ``(state, time_index [B], env_index [B]) -> experience [B, window]``

    ``priority`` is a ``PriorityParams``; a prioritized buffer needs it (``add`` gives
    new items ``max_priority ** alpha``), a uniform one ignores it.
    """

    init: Callable[[PyTree], BufferState]
    add: Callable[..., BufferState]
    sample: Callable[[BufferState, jax.Array], ReplaySample]
    can_sample: Callable[[BufferState], Array]
    update_priorities: Callable[..., BufferState]
    num_items: Callable[[BufferState], Array]
    gather: Callable[[BufferState, Any, Any], PyTree]


def require_priority(priority: PriorityParams | None, where: str) -> PriorityParams:
    """``priority``, or a ValueError naming ``where`` if a prioritized buffer got none."""
    if priority is None:
        raise ValueError(
            f"{where} of a prioritized buffer needs priority=PriorityParams(alpha, eps) "
            "(an agent passes its hparams)"
        )
    return priority
