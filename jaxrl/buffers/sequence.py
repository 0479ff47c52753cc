"""Prioritized replay of fixed-length sequences with overlap, as pure functions (R2D2).

R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed Reinforcement
Learning", section 2.3) replays sequences of ``length`` consecutive steps of one env,
starting every ``period`` steps, so that neighbouring sequences overlap by ``length -
period`` steps (80 and 40 in the paper), each with the recurrent state its actor had at
the sequence's first step, drawn by the priority mix of ``ops.sequence_priority``.

Storage is the ring of :mod:`jaxrl.buffers.replay` (leaves ``[L, N, ...]``, every step
stored once); a *sequence* is a window of ``window = length + 1`` rows (the extra row
holds the observation after the last step), and only rows ``row % period == 0`` start
one, so overlapping sequences read the same rows instead of keeping copies (the paper's
actors send each sequence whole: ``length / period`` copies of every step). The stored
pytree is the caller's: R2D2 (``agents/q_learning/r2d2.py``) stores ``obs`` (not
``next_obs``: the next row has it), ``action``, ``reward``, the episode flags and the
carry acting was given, so the carry at a sequence's start is its first row's.

A sum tree (:mod:`jaxrl.buffers.sum_tree`) over the ``(L / period) N`` sequence starts
holds each one's weight ``p^alpha``: item ``(row // period) * N + env``. A start is
*valid* iff its window lies in written rows and ends before the write head
(:func:`jaxrl.buffers.validity.window_valid` with ``window``); invalid starts weigh 0.
``add`` gives starts that become valid ``max_priority ** alpha`` and those it overwrites
0; ``update_priorities`` writes ``(|p| + eps) ** alpha`` on valid starts only (as
:mod:`jaxrl.buffers.prioritized`, whose state, sampling and priority writes this reuses).
``L`` must be a multiple of ``period`` so that storage rows keep their phase when the
ring wraps (row ``r`` holds env step ``r mod L`` of the ring's current lap).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample, require_priority
from jaxrl.buffers.prioritized import (
    PrioritizedReplayState,
    sample_items,
    update_item_priorities,
)
from jaxrl.buffers.replay import ReplayState, Ring, ring_add, ring_gather, ring_init
from jaxrl.buffers.validity import window_valid
from jaxrl.validation import check_int

Array = jax.Array
PyTree = Any


class SequenceLayout(NamedTuple):
    """The static shape: ``ring`` (``window = length + 1``), ``period`` and ``batch_size``."""

    ring: Ring
    period: int
    batch_size: int

    @property
    def num_starts(self) -> int:
        """Sequence starts per env, ``L / period``."""
        return self.ring.num_rows // self.period


def make_sequence_replay(
    capacity: int,
    num_envs: int,
    batch_size: int,
    length: int,
    period: int,
    branching: int = 8,
) -> ReplayBuffer[PrioritizedReplayState]:
    """A prioritized replay of sequences of ``length`` steps starting every ``period``.

    Args:
      capacity: steps stored, ``L = capacity // num_envs`` rows of ``num_envs`` envs;
        ``L`` a multiple of ``period`` and at least ``length + 1``.
      num_envs: ``N``, envs per added row.
      batch_size: ``B``, sequences per sample.
      length: steps per sequence (burn-in included), ``>= 1``.
      period: steps between sequence starts, ``1 <= period <= length`` (overlap
        ``length - period``).
      branching: the sum tree's branching factor.

    Returns:
      A ``ReplayBuffer`` (:mod:`jaxrl.buffers.base`) over ``PrioritizedReplayState``:
      ``add(state, batch [T, N, ...], priority)``; ``sample(state, key)``, a
      ``ReplaySample`` whose ``experience`` has leaves ``[B, length + 1, ...]`` (rows
      ``time_index .. time_index + length``) and ``indices`` the sequence items;
      ``update_priorities(state, indices [K], priorities [K], priority)`` with raw
      priorities (e.g. ``ops.sequence_priority`` of the TD errors); ``num_items``, the
      valid starts; ``can_sample``, at least one; ``gather``, windows at any rows.

    Raises:
      ValueError: on a size that breaks the rules above.
    """
    length, period = check_int("length", length), check_int("period", period)
    capacity, num_envs = check_int("capacity", capacity), check_int("num_envs", num_envs)
    batch_size = check_int("batch_size", batch_size)
    num_rows = capacity // max(num_envs, 1)
    if min(length, period, num_envs, batch_size) < 1 or period > length:
        raise ValueError(
            f"sequence replay needs length >= 1, 1 <= period <= length, num_envs >= 1 and "
            f"batch_size >= 1, got length={length}, period={period}, num_envs={num_envs}, "
            f"batch_size={batch_size}"
        )
    if num_rows < length + 1 or num_rows % period:
        raise ValueError(
            f"sequence replay needs capacity // num_envs = {num_rows} rows to be at least "
            f"length + 1 = {length + 1} and a multiple of period = {period}"
        )
    sum_tree.init(1, branching)  # validates branching
    layout = SequenceLayout(Ring(num_rows, num_envs, length + 1), period, batch_size)
    ring = layout.ring
    return ReplayBuffer(
        init=functools.partial(_init, layout, branching),
        add=functools.partial(_add, layout),
        sample=functools.partial(_sample, layout),
        can_sample=lambda state: _num_items(layout, state) > 0,
        update_priorities=functools.partial(_update_priorities, layout),
        num_items=functools.partial(_num_items, layout),
        gather=lambda state, t, e: ring_gather(ring, state.storage, t, e),
    )


def _init(layout: SequenceLayout, branching: int, example: PyTree) -> PrioritizedReplayState:
    return PrioritizedReplayState(
        storage=ring_init(layout.ring, example),
        tree=sum_tree.init(layout.num_starts * layout.ring.num_envs, branching),
        max_priority=jnp.ones((), jnp.float32),
    )


def _valid(layout: SequenceLayout, storage: ReplayState, rows: Array) -> Array:
    """Bool like ``rows``: a sequence starts there and its window is written."""
    ring = layout.ring
    written = window_valid(storage.position, storage.size, rows, ring.num_rows, ring.window)
    return written & (rows % layout.period == 0)


def _items(layout: SequenceLayout, rows: Array) -> Array:
    """``[K, N]`` items of the starts at ``rows`` ``[K]`` (``rows % period == 0``)."""
    n = layout.ring.num_envs
    return (rows // layout.period)[:, None] * n + jnp.arange(n, dtype=jnp.int32)


def _add(
    layout: SequenceLayout,
    state: PrioritizedReplayState,
    batch: PyTree,
    priority: PriorityParams | None = None,
) -> PrioritizedReplayState:
    ring = layout.ring
    alpha = require_priority(priority, "add").alpha
    storage = ring_add(ring, state.storage, batch)
    num_steps = jnp.shape(jax.tree.leaves(batch)[0])[0]
    # Only the newest T + window - 1 rows can change validity (prioritized._add).
    num_changed = min(num_steps + ring.window - 1, ring.num_rows)
    rows = (storage.position - 1 - jnp.arange(num_changed, dtype=jnp.int32)) % ring.num_rows
    starts = rows % layout.period == 0
    weight = jnp.where(_valid(layout, storage, rows), state.max_priority**alpha, 0.0)
    items = jnp.where(starts[:, None], _items(layout, rows), -1)
    weights = jnp.broadcast_to(weight[:, None], items.shape)
    tree = sum_tree.update(state.tree, items.reshape(-1), weights.reshape(-1), assume_unique=True)
    return dataclasses.replace(state, storage=storage, tree=tree)


def _locate(layout: SequenceLayout, indices: Array) -> tuple[Array, Array]:
    """``(time_index, env_index)`` of sequence items."""
    n = layout.ring.num_envs
    return (indices // n) * layout.period, indices % n


def _sample(layout: SequenceLayout, state: PrioritizedReplayState, key: Array) -> ReplaySample:
    locate = functools.partial(_locate, layout)
    return sample_items(layout.ring, layout.batch_size, state, key, locate)


def _update_priorities(
    layout: SequenceLayout,
    state: PrioritizedReplayState,
    indices: Any,
    priorities: Any,
    priority: PriorityParams | None = None,
) -> PrioritizedReplayState:
    valid = lambda indices: _valid(layout, state.storage, _locate(layout, indices)[0])
    num_items = layout.num_starts * layout.ring.num_envs
    return update_item_priorities(state, indices, priorities, priority, num_items, valid)


def _num_items(layout: SequenceLayout, state: PrioritizedReplayState) -> Array:
    """Int32: valid starts. The windows that fit begin at offsets ``0 .. size - window``
    from the oldest row; those at a row ``% period == 0`` start sequences."""
    ring, storage = layout.ring, state.storage
    fits = jnp.maximum(storage.size - ring.window + 1, 0)
    oldest = (storage.position - storage.size) % ring.num_rows
    first = (-oldest) % layout.period  # offset of the first start row
    count = jnp.maximum(fits - first + layout.period - 1, 0) // layout.period
    return (count * ring.num_envs).astype(jnp.int32)
