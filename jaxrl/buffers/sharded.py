r"""Prioritized replay split into shards, one (or more) per device of a mesh.

Ape-X (Horgan et al. 2018, "Distributed Prioritized Experience Replay", arXiv:1803.00933)
keeps one replay memory that many actors write to and one learner samples from. Here the
memory of :mod:`jaxrl.buffers.prioritized` is split by environment into ``S`` shards:
shard ``s`` stores envs ``[s N_s, (s + 1) N_s)`` (``N_s = N / S``), its own ring of rows and
its own sum tree over its ``L N_s`` items. Every leaf of the state has a leading ``[S]``
axis; with a ``mesh``, that axis is split over the mesh's devices (a sharding constraint
inside every function, so ``jax.jit`` keeps each shard, its tree descent and its tree update
on its device, as ``runners/distributed/devices.py`` splits envs). Envs that a device steps
in ``data_parallel`` (contiguous blocks) are the envs whose shard it holds.

Items keep the unsharded buffer's index ``row * N + env`` (global env), so an agent sees
one buffer: ``ReplaySample``, ``update_priorities`` and ``num_items`` mean what they mean
for :func:`jaxrl.buffers.make_prioritized_replay` of the same capacity, and one shard is
exactly that buffer.

Sampling over all shards
------------------------
With ``T_s`` the total mass of shard ``s`` and ``T = sum_s T_s``, draw ``b`` takes the
stratified target ``u_b = (b + U_b) / B * T`` of the single-tree sampler, picks the shard
whose slice ``[sum_{r<s} T_r, sum_{r<=s} T_r)`` holds it (shard ``s`` with probability
``T_s / T``), and descends shard ``s``'s tree with ``u_b - sum_{r<s} T_r``. So item ``i``
of shard ``s`` is drawn with probability ``(T_s / T) (p_i / T_s) = p_i / T``, its
priority over *all* shards: the draws are those of one sum tree over the concatenated
leaves. ``probabilities`` are ``p_i / T``, so importance weights
(:func:`jaxrl.ops.importance_weights`) use the global total, and their batch maximum is
the global batch's. Every shard descends all ``B`` targets (clipped into its mass) and
the batch takes, for each draw, the chosen shard's leaf: ``S B`` descents done in
parallel by the devices, then one gather of ``B`` windows.

``max_priority`` (the weight of new items) is kept equal across shards: after
``update_priorities`` every shard holds the maximum over all of them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample
from jaxrl.buffers.prioritized import PrioritizedReplayState, make_prioritized_replay
from jaxrl.validation import check_int

PyTree = Any


@flax.struct.dataclass
class ShardedReplayState:
    """``shards``: a ``PrioritizedReplayState`` whose every leaf has a leading ``[S]``
    axis (shard ``s`` at index ``s``)."""

    shards: PrioritizedReplayState


class _Layout(NamedTuple):
    num_shards: int
    num_envs: int  # N, all shards together
    shard_envs: int  # N_s
    inner: ReplayBuffer  # one shard's buffer
    mesh: Mesh | None
    axis: str | None


def make_sharded_prioritized_replay(
    capacity: int,
    num_envs: int,
    batch_size: int,
    window: int = 1,
    num_shards: int = 1,
    mesh: Mesh | None = None,
    branching: int = 8,
) -> ReplayBuffer[ShardedReplayState]:
    """A prioritized replay of ``capacity`` transitions in ``num_shards`` shards (module
    docstring), with the protocol and item indices of ``make_prioritized_replay``.

    Args:
      capacity, num_envs, batch_size, window, branching: as ``make_prioritized_replay``
        (``capacity`` in all; each shard holds ``capacity / S`` transitions of ``N / S``
        envs).
      num_shards: ``S``; must divide ``num_envs``.
      mesh: a 1-D ``Mesh`` whose devices hold the shards (``S / D`` each; ``D`` must
        divide ``S``), or None (the state's placement is left to the caller).

    Raises:
      ValueError: on bad sizes, ``S`` not dividing ``N``, or a mesh whose device count
        does not divide ``S``.
    """
    num_shards = check_int("num_shards", num_shards)
    if num_shards < 1 or num_envs % num_shards:
        raise ValueError(
            f"num_shards {num_shards} must be >= 1 and divide the {num_envs} envs "
            f"(valid: {[s for s in range(1, num_envs + 1) if num_envs % s == 0]})"
        )
    axis = None
    if mesh is not None:
        if len(mesh.axis_names) != 1 or num_shards % mesh.devices.size:
            raise ValueError(
                f"a replay of {num_shards} shards needs a 1-D mesh whose device count "
                f"divides {num_shards}, got {dict(mesh.shape)}"
            )
        axis = mesh.axis_names[0]
    shard_envs = num_envs // num_shards
    inner = make_prioritized_replay(
        capacity // num_shards, shard_envs, batch_size, window, branching
    )
    lay = _Layout(num_shards, num_envs, shard_envs, inner, mesh, axis)
    return ReplayBuffer(
        init=functools.partial(_init, lay),
        add=functools.partial(_add, lay),
        sample=functools.partial(_sample, lay, batch_size),
        can_sample=lambda state: inner.can_sample(_first(state)),
        update_priorities=functools.partial(_update_priorities, lay),
        num_items=lambda state: jnp.sum(jax.vmap(inner.num_items)(state.shards)),
        gather=functools.partial(_gather, lay),
    )


def _first(state: ShardedReplayState) -> PrioritizedReplayState:
    """Shard 0 (every shard has the same rows written, position and size)."""
    return jax.tree.map(lambda x: x[0], state.shards)


def _place(lay: _Layout, state: ShardedReplayState) -> ShardedReplayState:
    if lay.mesh is None:
        return state
    split = NamedSharding(lay.mesh, PartitionSpec(lay.axis))
    return jax.lax.with_sharding_constraint(state, jax.tree.map(lambda _: split, state))


def _split_envs(lay: _Layout, x: jax.Array, env_axis: int) -> jax.Array:
    """``[..., N, ...]`` (envs at ``env_axis``) -> ``[S, ..., N_s, ...]``."""
    shape = x.shape[:env_axis] + (lay.num_shards, lay.shard_envs) + x.shape[env_axis + 1 :]
    return jnp.moveaxis(x.reshape(shape), env_axis, 0)


def _init(lay: _Layout, example: PyTree) -> ShardedReplayState:
    split = jax.tree.map(lambda x: _split_envs(lay, jnp.asarray(x), 0), example)
    return _place(lay, ShardedReplayState(jax.vmap(lay.inner.init)(split)))


def _add(
    lay: _Layout, state: ShardedReplayState, batch: PyTree, priority: PriorityParams | None = None
) -> ShardedReplayState:
    split = jax.tree.map(lambda x: _split_envs(lay, x, 1), batch)  # [S, T, N_s, ...]
    add = jax.vmap(lambda s, b: lay.inner.add(s, b, priority))
    return _place(lay, ShardedReplayState(add(state.shards, split)))


def _sample(lay: _Layout, batch_size: int, state: ShardedReplayState, key) -> ReplaySample:
    shards = _place(lay, state).shards
    totals = jax.vmap(sum_tree.total)(shards.tree)  # [S]
    total = jnp.sum(totals)
    upper = jnp.cumsum(totals)
    strata = jnp.arange(batch_size, dtype=jnp.float32)
    target = (strata + jax.random.uniform(key, (batch_size,))) / batch_size * total
    # The shard whose slice holds the target; rounding past the end: the last with mass.
    last = jnp.max(jnp.where(totals > 0, jnp.arange(lay.num_shards), 0))
    shard = jnp.minimum(jnp.sum(upper[None, :] <= target[:, None], axis=1), last)
    lower = upper - totals

    def descend(tree, low, mass):
        return sum_tree._descend(tree, jnp.clip(target - low, 0.0, mass))[:2]

    leaves, weights = jax.vmap(descend)(shards.tree, lower, totals)  # [S, B]
    draws = jnp.arange(batch_size)
    local, weight = leaves[shard, draws], weights[shard, draws]
    time_index = local // lay.shard_envs
    env_index = shard * lay.shard_envs + local % lay.shard_envs
    probabilities = jnp.where(total > 0, weight / jnp.where(total > 0, total, 1.0), 0.0)
    return ReplaySample(
        experience=_gather(lay, state, time_index, env_index),
        time_index=time_index.astype(jnp.int32),
        env_index=env_index.astype(jnp.int32),
        indices=(time_index * lay.num_envs + env_index).astype(jnp.int32),
        probabilities=probabilities,
    )


def _gather(lay: _Layout, state: ShardedReplayState, time_index, env_index) -> PyTree:
    """Windows ``[B, window, ...]`` at rows ``time_index`` of global envs ``env_index``."""
    env_index = jnp.asarray(env_index, jnp.int32)
    shard, local = env_index // lay.shard_envs, env_index % lay.shard_envs
    each = jax.vmap(lambda s: lay.inner.gather(s, time_index, local))(state.shards)
    draws = jnp.arange(env_index.shape[0])
    return jax.tree.map(lambda x: x[shard, draws], each)


def _update_priorities(
    lay: _Layout,
    state: ShardedReplayState,
    indices: Any,
    priorities: Any,
    priority: PriorityParams | None = None,
) -> ShardedReplayState:
    indices, priorities = sum_tree.index_value_batch(indices, priorities, "update_priorities")
    row, env = indices // lay.num_envs, indices % lay.num_envs
    shard, local = env // lay.shard_envs, row * lay.shard_envs + env % lay.shard_envs
    mine = shard[None, :] == jnp.arange(lay.num_shards)[:, None]  # [S, K]
    # An index outside [0, L N) maps outside [0, L N_s) of its shard, which ignores it.
    local = jnp.where(mine & (indices >= 0)[None, :], local[None, :], -1)
    update = jax.vmap(lambda s, i: lay.inner.update_priorities(s, i, priorities, priority))
    shards = update(state.shards, local)
    top = jnp.max(shards.max_priority)
    shards = dataclasses.replace(shards, max_priority=jnp.full_like(shards.max_priority, top))
    return _place(lay, ShardedReplayState(shards))
