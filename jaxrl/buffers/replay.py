"""Uniform experience replay as pure functions over fixed-size arrays.

In the style of flashbax's trajectory buffer: the buffer is a pytree of arrays
(``ReplayState``) and a ``ReplayBuffer`` of pure functions over it, so it lives inside an
agent's state and works under ``jax.jit``, ``jax.lax.scan`` and ``jax.vmap`` (e.g. one
buffer per seed of a vmapped sweep).

Memory layout
-------------
Storage is time-major per environment. With ``L = capacity // num_envs`` rows, each leaf
of the experience pytree is stored as one array of shape ``[L, N, ...]``: row ``i`` holds
one step of all ``N`` environments, so consecutive rows of one column are consecutive
steps of one environment. Rows form a ring: ``position`` is the next row to write,
``size`` the number of rows written (at most ``L``); the oldest row is
``(position - size) mod L`` (``0`` until the buffer first fills, ``position`` after).
The buffer holds ``L * N`` transitions (``capacity`` rounded down to a multiple of
``num_envs``) and uses ``L * N * bytes_per_step`` of memory, allocated once by ``init``.

Cost
----
``add`` of ``T`` steps is one scatter of ``T * N`` transitions (in place when the state is
donated or updated inside ``jit``/``scan``); ``sample`` is one gather of
``batch_size * window`` transitions. Neither depends on the capacity.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample
from jaxrl.types import shared_field
from jaxrl.validation import check_int

Array = jax.Array
PyTree = Any


@flax.struct.dataclass
class ReplayState:
    """State of a uniform replay buffer; a pytree of arrays only.

    Attributes:
      data: pytree whose leaves have shape ``[L, N, ...]`` (``L`` rows of ``N`` envs).
      position: int32 scalar, the next row to write, in ``[0, L)``.
      size: int32 scalar, the number of rows written so far, capped at ``L``.
    """

    data: PyTree
    position: Array = shared_field()
    size: Array = shared_field()


def make_uniform_replay(
    capacity: int, num_envs: int, batch_size: int, window: int = 1
) -> ReplayBuffer[ReplayState]:
    """Build a uniform replay buffer storing windows of ``window`` consecutive steps.

    ``sample`` draws ``batch_size`` windows independently (with replacement): the env
    uniformly in ``[0, N)`` and the start uniformly among the ``size - window + 1``
    starts whose whole window lies in written rows and does not cross the write head,
    i.e. start offsets ``0 .. size - window`` from the oldest row. Every valid
    (env, start) pair therefore has probability ``1 / (N (size - window + 1))``.

    Args:
      capacity: total number of transitions kept; rounded down to a multiple of
        ``num_envs`` (``L = capacity // num_envs`` rows).
      num_envs: ``N``, the number of environments in each added step.
      batch_size: ``B``, the number of windows per ``sample``.
      window: the number of consecutive steps per sampled window (``n`` for n-step
        returns; 1 for plain one-step transitions).

    Returns:
      A ``ReplayBuffer`` (:mod:`jaxrl.buffers.base`):

      * ``init(example)``: ``example`` is a pytree with leaves ``[N, ...]`` (one step of
        all envs, e.g. a ``Transition`` with ``T`` dropped; arrays or
        ``jax.ShapeDtypeStruct``s, only shapes and dtypes are read); allocates zeros
        ``[L, N, ...]`` of the same dtypes, ``position = size = 0``.
      * ``add(state, batch, priority=None)``: ``batch`` has leaves ``[T, N, ...]`` with a static
        ``T <= L``; writes rows ``(position + t) mod L`` for ``t < T`` (wrapping around,
        overwriting the oldest rows), advances ``position`` by ``T`` mod ``L`` and
        ``size`` to ``min(size + T, L)``. Values are cast to the stored dtypes.
      * ``sample(state, key)``: a ``ReplaySample`` with leaves ``[B, window, ...]`` and
        probabilities ``1 / num_items``. Only
        meaningful when ``can_sample(state)``; otherwise it returns stored zeros rather
        than failing (so it can be called unconditionally under ``jit``).
      * ``can_sample(state)``: bool scalar array, ``size >= window``.
      * ``update_priorities(state, indices, priorities, priority=None)``: ``state``.
      * ``num_items(state)``: int32, ``N max(size - window + 1, 0)``.
      * ``gather(state, time_index, env_index)``: the windows starting at those rows.

    Raises:
      ValueError: on non-positive arguments or ``capacity < num_envs * window``; from
        ``init``/``add`` (at trace time) on leaves whose shapes do not match.
    """
    capacity = check_int("capacity", capacity)
    num_envs = check_int("num_envs", num_envs)
    batch_size = check_int("batch_size", batch_size)
    window = check_int("window", window)
    if capacity < num_envs * window:
        raise ValueError(
            f"capacity must be >= num_envs * window = {num_envs} * {window} = "
            f"{num_envs * window}, got {capacity}"
        )
    ring = Ring(capacity // num_envs, num_envs, window)
    return ReplayBuffer(
        init=functools.partial(ring_init, ring),
        add=functools.partial(ring_add, ring),
        sample=functools.partial(uniform_sample, ring, batch_size),
        can_sample=functools.partial(ring_can_sample, ring),
        update_priorities=unchanged_priorities,
        num_items=functools.partial(ring_num_items, ring),
        gather=functools.partial(ring_gather, ring),
    )


class Ring(NamedTuple):
    """The static shape of a ring of ``num_rows`` rows of ``num_envs`` envs, sampled in
    windows of ``window`` consecutive rows (``L``, ``N`` and ``n`` in the docstrings)."""

    num_rows: int
    num_envs: int
    window: int


def ring_init(ring: Ring, example: PyTree) -> ReplayState:
    """Zeros ``[L, N, ...]`` shaped like ``example`` (leaves ``[N, ...]``), empty ring."""

    def alloc(leaf: Any) -> Array:
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            leaf = jnp.asarray(leaf)
        shape = tuple(leaf.shape)
        if len(shape) < 1 or shape[0] != ring.num_envs:
            raise ValueError(
                f"init expects leaves of shape [num_envs={ring.num_envs}, ...], got {shape}"
            )
        return jnp.zeros((ring.num_rows, *shape), leaf.dtype)

    return ReplayState(
        data=jax.tree.map(alloc, example),
        position=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
    )


def ring_add(
    ring: Ring, state: ReplayState, batch: PyTree, priority: PriorityParams | None = None
) -> ReplayState:
    """Writes ``batch`` (leaves ``[T, N, ...]``) at rows ``(position + t) mod L``."""
    num_rows = ring.num_rows
    leaves = jax.tree.leaves(batch)
    if not leaves:
        raise ValueError("add expects a non-empty pytree")
    num_steps = jnp.shape(leaves[0])[0] if jnp.ndim(leaves[0]) else 0
    if not 1 <= num_steps <= num_rows:
        raise ValueError(
            f"add expects leaves [T, N, ...] with 1 <= T <= L = {num_rows}, "
            f"got leading axis {num_steps}"
        )
    rows = (state.position + jnp.arange(num_steps, dtype=jnp.int32)) % num_rows

    def write(stored: Array, new: Any) -> Array:
        new = jnp.asarray(new)
        if new.shape != (num_steps, *stored.shape[1:]):
            raise ValueError(
                f"add expects a leaf of shape {(num_steps, *stored.shape[1:])} "
                f"([T, N, ...] like init's example), got {new.shape}"
            )
        return stored.at[rows].set(
            new.astype(stored.dtype), unique_indices=True, mode="promise_in_bounds"
        )

    return ReplayState(
        data=jax.tree.map(write, state.data, batch),
        position=((state.position + num_steps) % num_rows).astype(jnp.int32),
        size=jnp.minimum(state.size + num_steps, num_rows).astype(jnp.int32),
    )


def ring_gather(ring: Ring, state: ReplayState, time_index: Any, env_index: Any) -> PyTree:
    """The windows (leaves ``[B, window, ...]``) starting at rows ``time_index [B]`` of
    envs ``env_index [B]``."""
    time_index = jnp.asarray(time_index, jnp.int32)
    env_index = jnp.asarray(env_index, jnp.int32)
    offsets = jnp.arange(ring.window, dtype=jnp.int32)
    rows = (time_index[:, None] + offsets) % ring.num_rows  # [B, W]
    return jax.tree.map(lambda x: x[rows, env_index[:, None]], state.data)


def uniform_sample(ring: Ring, batch_size: int, state: ReplayState, key: jax.Array) -> ReplaySample:
    """``batch_size`` windows drawn uniformly over the valid (start, env) pairs."""
    num_envs, num_rows = ring.num_envs, ring.num_rows
    # One draw over all (start offset, env) pairs: uniform over the valid pairs.
    num_starts = jnp.maximum(state.size - ring.window + 1, 1)
    flat = jax.random.randint(key, (batch_size,), 0, num_starts * num_envs, jnp.int32)
    offset, env_index = flat // num_envs, (flat % num_envs).astype(jnp.int32)
    oldest = (state.position - state.size) % num_rows
    time_index = ((oldest + offset) % num_rows).astype(jnp.int32)
    count = jnp.maximum(ring_num_items(ring, state), 1).astype(jnp.float32)
    return ReplaySample(
        experience=ring_gather(ring, state, time_index, env_index),
        time_index=time_index,
        env_index=env_index,
        indices=time_index * num_envs + env_index,
        probabilities=jnp.full((batch_size,), 1.0, jnp.float32) / count,
    )


def ring_can_sample(ring: Ring, state: ReplayState) -> Array:
    """Bool scalar: at least one whole window is written (``size >= window``)."""
    return state.size >= ring.window


def ring_num_items(ring: Ring, state: ReplayState) -> Array:
    """Int32 scalar, the number of valid items ``N max(size - window + 1, 0)``."""
    return (jnp.maximum(state.size - ring.window + 1, 0) * ring.num_envs).astype(jnp.int32)


def unchanged_priorities(state: Any, indices: Any, priorities: Any, priority: Any = None) -> Any:
    """A uniform buffer's ``update_priorities``: ``state`` unchanged."""
    return state
