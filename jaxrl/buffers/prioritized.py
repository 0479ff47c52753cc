r"""Prioritized experience replay as pure functions over fixed-size arrays.

Proportional prioritization (Schaul et al. 2016, "Prioritized Experience Replay", ICLR):
item ``i`` is drawn with probability

.. math::
    P(i) = \frac{p_i^\alpha}{\sum_k p_k^\alpha}, \qquad p_i = |\delta_i| + \epsilon,

where ``delta_i`` is the item's last TD error (or any other non-negative priority, e.g.
the distributional loss of Rainbow), ``epsilon`` keeps every valid item drawable and
``alpha`` sets how strongly to prioritize (``alpha = 0`` is uniform). An item enters with
the largest priority seen so far, ``p = max_priority`` (Algorithm 1, line 6), so that it is
replayed at least once soon. The learner weights each sampled loss by the importance
weight ``w_i = (n P(i))^{-beta} / max_j w_j`` (:func:`jaxrl.ops.prioritized.
importance_weights`), with ``beta`` annealed towards 1 (e.g. by
``jaxrl.ops.linear_schedule(0.4, 1.0, steps)``), and writes the new ``|delta_i|`` back with
``update_priorities``.

Knobs and their defaults: ``alpha = 0.6`` and ``beta_0 = 0.4`` are the PER paper's
hyperparameters for the proportional variant on Atari (Schaul et al. 2016) and the
defaults of machin's ``PrioritizedBuffer`` and pfrl's ``PrioritizedReplayBuffer``;
Dopamine's and RLHive's Rainbow use ``alpha = beta = 0.5`` (RLHive's
``PrioritizedReplayBuffer(alpha=0.5, beta=0.5)``). ``eps = 1e-6`` (machin and pfrl use
0.01; the paper leaves it "small").

Storage
-------
The same as :mod:`jaxrl.buffers.replay`: every leaf of the experience pytree is one array
``[L, N, ...]`` (``L = capacity // num_envs`` rows of ``N`` environments), a ring with
``position`` (next row to write) and ``size`` (rows written). A sampled item is a window of
``window`` consecutive steps of one environment, identified by its first step: the *item
index* is ``row * N + env`` in ``[0, L N)``. A sum tree (:mod:`jaxrl.buffers.sum_tree`)
over the ``L N`` items holds each item's weight ``p_i^alpha``.

Validity
--------
An item ``(row, env)`` is *valid* (can be drawn) iff its whole window lies in written rows
and does not cross the write head, exactly as in the uniform buffer: with
``d = (position - row) mod L`` taken in ``[1, L]`` (the number of rows from ``row`` up to
the head), iff ``window <= d <= size``. Invalid items have weight 0 in the tree, so a sample
never crosses the write head and never reads unwritten rows. ``add`` keeps this exact:
rows just written whose window is not complete get 0, items that became valid with the new
rows (just written, or older ones waiting for their window to fill) get
``max_priority^alpha``, and overwritten rows get their new value; ``update_priorities``
ignores invalid items, so it cannot resurrect one. There are ``num_items = N max(size -
window + 1, 0)`` valid items, the ``n`` of the importance weights.

Cost
----
``add`` of ``T`` steps: one scatter of ``T N`` transitions plus a tree update of the
``(T + window - 1) N`` items whose validity can change; ``sample``: one tree descent of
``batch_size`` draws plus one gather of ``batch_size * window`` transitions;
``update_priorities``: one tree update of ``K`` items. None depends on the capacity beyond
the tree's depth ``ceil(log_b(L N))`` (``b = 8``: 6 levels for 100,000 items).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample, require_priority
from jaxrl.buffers.replay import (
    ReplayState,
    Ring,
    make_uniform_replay,
    ring_add,
    ring_can_sample,
    ring_gather,
    ring_init,
    ring_num_items,
)
from jaxrl.buffers.validity import window_valid
from jaxrl.validation import check_int

Array = jax.Array
PyTree = Any


@flax.struct.dataclass
class PrioritizedReplayState:
    """State of a prioritized replay buffer; a pytree of arrays only.

    Attributes:
      storage: the ``ReplayState`` of the experience, exactly as in the uniform buffer
        (leaves ``[L, N, ...]``, ``position``, ``size``).
      tree: ``SumTree`` over the ``L N`` items (item ``row * N + env``); leaf = the item's
        weight ``p^alpha``, 0 for an invalid item.
      max_priority: float32 scalar, the largest priority ``p = |delta| + eps`` set by
        ``update_priorities`` so far, starting at 1; items that become valid get weight
        ``max_priority ** alpha``.

    ``alpha`` and ``eps`` are not state: ``add`` and ``update_priorities`` take them as a
    ``PriorityParams`` (an agent's hparams, where a sweep reaches them).
    """

    storage: ReplayState
    tree: sum_tree.SumTree
    max_priority: Array


def write_priorities(
    state: Any,
    indices: Array,
    priorities: Array,
    valid: Array,
    priority: PriorityParams,
    min_weight: float = 0.0,
) -> tuple[sum_tree.SumTree, Array]:
    """The tree and running maximum after writing ``priorities`` at ``indices``.

    Shared by every prioritized buffer (``state`` has ``tree`` and ``max_priority``).
    Entries where ``valid`` is false write nothing; duplicates resolve last-write-wins
    once, so the maximum sees only the writes kept. Leaf weight:
    ``max((|p| + eps) ** alpha, min_weight)``; ``max_priority`` tracks ``|p| + eps``.
    """
    alpha = priority.alpha
    magnitude = jnp.abs(priorities) + priority.eps
    capacity = state.tree.capacity
    indices, magnitude = sum_tree.deduplicate(jnp.where(valid, indices, -1), magnitude, capacity)
    kept = indices >= 0
    weight = jnp.maximum(magnitude**alpha, min_weight)
    tree = sum_tree.update(state.tree, indices, weight, assume_unique=True)
    max_priority = jnp.maximum(state.max_priority, jnp.max(jnp.where(kept, magnitude, 0.0)))
    return tree, max_priority


def make_prioritized_replay(
    capacity: int,
    num_envs: int,
    batch_size: int,
    window: int = 1,
    branching: int = 8,
) -> ReplayBuffer[PrioritizedReplayState]:
    """Build a prioritized replay buffer storing windows of ``window`` consecutive steps.

    Args:
      capacity, num_envs, batch_size, window: as :func:`jaxrl.buffers.replay.make_uniform_replay`
        (``L = capacity // num_envs`` rows of ``N = num_envs`` envs, ``B = batch_size``).
      branching: the sum tree's branching factor (a power of two; see
        :mod:`jaxrl.buffers.sum_tree`).

    Returns:
      A ``ReplayBuffer`` (:mod:`jaxrl.buffers.base`); ``priority`` is a
      ``PriorityParams(alpha, eps)`` (``alpha >= 0``; with ``eps = 0`` an item whose
      priority is set to 0 is never drawn again):

      * ``init(example)``: as the uniform buffer's (``example`` has leaves ``[N, ...]``);
        an all-zero tree, ``max_priority = 1``.
      * ``add(state, batch, priority)``: ``batch`` has leaves ``[T, N, ...]`` with a static
        ``T <= L``; writes the rows as the uniform buffer does and sets the weights of
        the items whose validity can change (see *Validity* in the module docstring):
        ``max_priority ** alpha`` for valid ones, 0 for the others.
      * ``sample(state, key)``: a ``ReplaySample`` of ``B`` items drawn with
        probability ``P(i)`` (stratified) and their windows. Only meaningful when
        ``can_sample(state)``; otherwise it returns index 0 with probability 0 and
        stored zeros rather than failing (so it can run unconditionally under ``jit``).
      * ``can_sample(state)``: bool scalar array, ``size >= window``.
      * ``update_priorities(state, indices, priorities, priority)``: ``indices`` ``[K]`` int item
        indices (``ReplaySample.indices``); ``priorities`` ``[K]`` float, the *raw*
        new priorities, typically the TD errors ``delta`` or ``|delta|`` (not
        exponentiated, without ``eps``): the tree gets ``(|priorities| + eps) ** alpha``
        and ``max_priority`` becomes ``max(max_priority, |priorities| + eps)`` over the
        items written. With duplicate indices the last entry wins, for the tree and
        for ``max_priority`` alike (earlier entries count as never written). The
        buffer adds ``eps`` and applies ``alpha`` itself (both from ``priority``), so
        pass ``|delta|``, not ``|delta| + eps`` nor ``p ** alpha``. Entries whose item
        is invalid now (its window is incomplete or crosses the write head) or out of
        range are ignored. An item overwritten by ``add`` between ``sample`` and
        ``update_priorities`` would receive the priority of its predecessor, so call
        it before the next ``add``, as an agent's update does.
      * ``num_items(state)``: int32 scalar array, ``N max(size - window + 1, 0)``.
      * ``gather(state, time_index, env_index)``: the windows starting at those rows.

    Raises:
      ValueError: on non-positive sizes, ``capacity < num_envs * window`` or a bad
        ``branching``; from ``add``/``update_priorities`` (at trace time) without
        ``priority``.
    """
    make_uniform_replay(capacity, num_envs, batch_size, window)  # validates the sizes
    branching = check_int("branching", branching)
    sum_tree.init(1, branching)  # validates branching
    ring = Ring(capacity // num_envs, num_envs, window)
    return ReplayBuffer(
        init=functools.partial(_init, ring, branching),
        add=functools.partial(_add, ring),
        sample=functools.partial(_sample, ring, batch_size),
        can_sample=lambda state: ring_can_sample(ring, state.storage),
        update_priorities=functools.partial(_update_priorities, ring),
        num_items=lambda state: ring_num_items(ring, state.storage),
        gather=lambda state, t, e: ring_gather(ring, state.storage, t, e),
    )


def _init(ring: Ring, branching: int, example: PyTree) -> PrioritizedReplayState:
    return PrioritizedReplayState(
        storage=ring_init(ring, example),
        tree=sum_tree.init(ring.num_rows * ring.num_envs, branching),
        max_priority=jnp.ones((), jnp.float32),
    )


def _is_valid(ring: Ring, storage: ReplayState, row: Array) -> Array:
    return window_valid(storage.position, storage.size, row, ring.num_rows, ring.window)


def _add(
    ring: Ring,
    state: PrioritizedReplayState,
    batch: PyTree,
    priority: PriorityParams | None = None,
) -> PrioritizedReplayState:
    num_rows, num_envs = ring.num_rows, ring.num_envs
    alpha = require_priority(priority, "add").alpha
    storage = ring_add(ring, state.storage, batch)
    num_steps = jnp.shape(jax.tree.leaves(batch)[0])[0]
    # Only the newest T + window - 1 rows can change validity: the T written ones and
    # the window - 1 before them, which were behind the old head.
    num_changed = min(num_steps + ring.window - 1, num_rows)
    rows = (storage.position - 1 - jnp.arange(num_changed, dtype=jnp.int32)) % num_rows
    weight = jnp.where(_is_valid(ring, storage, rows), state.max_priority**alpha, 0.0)
    items = rows[:, None] * num_envs + jnp.arange(num_envs, dtype=jnp.int32)
    tree = sum_tree.update(
        state.tree,
        items.reshape(-1),
        jnp.broadcast_to(weight[:, None], items.shape).reshape(-1),
        assume_unique=True,
    )
    return dataclasses.replace(state, storage=storage, tree=tree)


def _sample(
    ring: Ring, batch_size: int, state: PrioritizedReplayState, key: jax.Array
) -> ReplaySample:
    return sample_items(ring, batch_size, state, key, functools.partial(_locate, ring))


def _locate(ring: Ring, indices: Array) -> tuple[Array, Array]:
    return indices // ring.num_envs, indices % ring.num_envs


def sample_items(
    ring: Ring,
    batch_size: int,
    state: PrioritizedReplayState,
    key: jax.Array,
    locate: Callable[[Array], tuple[Array, Array]],
) -> ReplaySample:
    """``batch_size`` items drawn from the tree (stratified) with their windows;
    ``locate(indices) -> (time_index, env_index)`` maps an item to its window's first row
    and env (shared by the buffers whose tree is over items of a ``Ring``)."""
    indices, weight, mass = sum_tree.sample_with_total(state.tree, key, batch_size)
    probabilities = jnp.where(mass > 0, weight / jnp.where(mass > 0, mass, 1.0), 0.0)
    time_index, env_index = locate(indices)
    return ReplaySample(
        experience=ring_gather(ring, state.storage, time_index, env_index),
        time_index=time_index,
        env_index=env_index,
        indices=indices,
        probabilities=probabilities,
    )


def _update_priorities(
    ring: Ring,
    state: PrioritizedReplayState,
    indices: Any,
    priorities: Any,
    priority: PriorityParams | None = None,
) -> PrioritizedReplayState:
    valid = lambda indices: _is_valid(ring, state.storage, indices // ring.num_envs)
    num_items = ring.num_rows * ring.num_envs
    return update_item_priorities(state, indices, priorities, priority, num_items, valid)


def update_item_priorities(
    state: PrioritizedReplayState,
    indices: Any,
    priorities: Any,
    priority: PriorityParams | None,
    num_items: int,
    is_valid: Callable[[Array], Array],
) -> PrioritizedReplayState:
    """``update_priorities`` of a tree over ``num_items`` items: the writes to items in
    range for which ``is_valid(indices)`` holds (``write_priorities``)."""
    priority = require_priority(priority, "update_priorities")
    indices, priorities = sum_tree.index_value_batch(indices, priorities, "update_priorities")
    valid = (indices >= 0) & (indices < num_items) & is_valid(indices)
    tree, max_priority = write_priorities(state, indices, priorities, valid, priority)
    return dataclasses.replace(state, tree=tree, max_priority=max_priority)
