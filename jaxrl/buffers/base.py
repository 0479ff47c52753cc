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

from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import jax

Array = jax.Array
PyTree = Any
BufferState = Any

# The buffer state's type (``_co``: only returned, ``_contra``: only taken).
BufferStateT = TypeVar("BufferStateT")
_B_co = TypeVar("_B_co", covariant=True)
_B_contra = TypeVar("_B_contra", contravariant=True)


class PriorityParams(NamedTuple):
    """The knobs of proportional prioritization (Schaul et al. 2016), float32 scalars
    (arrays, so a sweep can vmap over them): an item's weight is ``(|p| + eps) ** alpha``.
    """

    alpha: Array | float
    eps: Array | float


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


class InitFn(Protocol[_B_co]):
    """``init(example: pytree of [N, ...]) -> state``."""

    def __call__(self, example: PyTree, /) -> _B_co: ...


class AddFn(Protocol[BufferStateT]):
    """``add(state, batch: pytree of [T, N, ...], priority=None) -> state``."""

    def __call__(
        self, state: BufferStateT, batch: PyTree, priority: PriorityParams | None = None, /
    ) -> BufferStateT: ...


class SampleFn(Protocol[_B_contra]):
    """``sample(state, key) -> ReplaySample``."""

    def __call__(self, state: _B_contra, key: Array, /) -> ReplaySample: ...


class StateQuery(Protocol[_B_contra]):
    """``(state) -> scalar array``: ``can_sample`` (bool) and ``num_items`` (int32)."""

    def __call__(self, state: _B_contra, /) -> Array: ...


class UpdatePrioritiesFn(Protocol[BufferStateT]):
    """``update_priorities(state, indices [K], priorities [K], priority=None) -> state``."""

    def __call__(
        self,
        state: BufferStateT,
        indices: Array,
        priorities: Array,
        priority: PriorityParams | None = None,
        /,
    ) -> BufferStateT: ...


class GatherFn(Protocol[_B_contra]):
    """``gather(state, time_index [B], env_index [B]) -> experience [B, window]``."""

    def __call__(self, state: _B_contra, time_index: Array, env_index: Array, /) -> PyTree: ...


class ReplayBuffer(NamedTuple, Generic[BufferStateT]):
    """Pure functions of a replay buffer (uniform, prioritized or compact), generic in the
    type of its state.

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

    init: InitFn[BufferStateT]
    add: AddFn[BufferStateT]
    sample: SampleFn[BufferStateT]
    can_sample: StateQuery[BufferStateT]
    update_priorities: UpdatePrioritiesFn[BufferStateT]
    num_items: StateQuery[BufferStateT]
    gather: GatherFn[BufferStateT]


def require_priority(priority: PriorityParams | None, where: str) -> PriorityParams:
    """``priority``, or a ValueError naming ``where`` if a prioritized buffer got none."""
    if priority is None:
        raise ValueError(
            f"{where} of a prioritized buffer needs priority=PriorityParams(alpha, eps) "
            "(an agent passes its hparams)"
        )
    return priority
