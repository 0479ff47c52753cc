"""A sum tree over fixed-size arrays, as pure functions: the sampler of prioritized replay.

A sum tree (Schaul et al. 2016, "Prioritized Experience Replay", ICLR, Appendix B.2.1)
stores ``capacity`` non-negative priorities ``p_0 .. p_{capacity-1}`` in its leaves; every
internal node holds the sum of its children, so the root is the total mass
``T = sum_i p_i``, and drawing leaf ``i`` with probability ``p_i / T`` is one walk down
from the root.

Layout
------
The tree has branching factor ``b`` (a power of two; 8 by default, 2 is a binary tree).
Its levels, leaves first, have sizes (:func:`level_sizes`)

* ``n_0 = capacity`` rounded up to a multiple of ``b``: leaf ``i`` holds ``p_i``, and the
  padding leaves ``capacity .. n_0 - 1`` stay 0;
* ``n_{k+1} = n_k / b`` rounded up to a multiple of ``b`` (the extra nodes stay 0), until
  a level has exactly ``b`` nodes; node ``j`` of level ``k + 1`` is the sum of its ``b``
  children ``b j .. b j + b - 1`` of level ``k``;
* the root, the sum of that last level of ``b`` nodes.

They are stored one after another in one flat float32 array ``nodes`` (the root's level
padded to ``b`` slots), so ``nodes.reshape(-1, b)`` has every block of ``b`` siblings as
one row; :func:`levels` returns views of the levels. A sum is ``S``: ``b`` float32
numbers added pairwise by halves, ``S(x) = S(x[:b/2] + x[b/2:])`` elementwise until one
number is left, and every internal node is exactly this float32 expression of its
children (a NumPy reference reproduces the tree bit for bit).

A wide node makes the tree shallow: ``depth = ceil(log_b capacity)`` levels below the
root (6 for 100,000 leaves with ``b = 8``, 7 for a million, instead of 17 and 20 for a
binary tree), and on a CPU or GPU an update or a sample costs about one dependent gather
(and, for an update, one scatter) per level, whatever the ``b`` contiguous floats each one
moves. Memory: ``4 n_0`` bytes for the leaves plus about ``4 n_0 / (b - 1)`` for the
internal nodes.

Exactness
---------
``update`` never adds deltas to internal nodes: it writes the new leaves and recomputes
every ancestor of a touched leaf from its children, level by level, so after any sequence
of updates every internal node equals ``S`` of its children exactly, as if the whole tree
had been rebuilt from its leaves: floating error cannot accumulate over millions of
updates. A node is positive if and only if one of its children is (a float32 sum of
non-negative numbers is 0 only if they all are). ``sample`` walks down from the root and
only ever steps into a child of positive mass (when rounding would run a target past the
last child with mass, it takes that child), so it never returns a leaf of priority zero
while the total is positive. XLA flushes subnormal floats to zero, so ``update`` stores
priorities below the smallest normal float32 (about ``1.2e-38``) as 0.

All functions are pure, jittable, and work inside ``lax.scan`` and under ``jax.vmap``
(e.g. one tree per seed: ``nodes`` gets a leading ``[S]`` axis). ``update`` of ``K``
leaves costs ``O(K log K + K b log_b C)`` and ``sample`` of ``B`` leaves ``O(B b log_b
C)``; nothing touches all ``C`` leaves, and nothing leaves the device.
"""

from __future__ import annotations

import dataclasses
import itertools

import flax.struct
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.validation import check_int

Array = jax.Array

_INT32_MAX = 2**31 - 1


@flax.struct.dataclass
class SumTree:
    """A ``b``-ary sum tree; a pytree whose only array is ``nodes``.

    Attributes:
      nodes: ``[M]`` float32, every level of the tree one after another, leaves first
        (see :func:`levels` for the views and the module docstring for the invariant).
      capacity: static Python int, the number of usable leaves; indices outside
        ``[0, capacity)`` are ignored by :func:`update` and never returned by
        :func:`sample`.
      branching: static Python int ``b``, the number of children of an internal node.
    """

    nodes: Array
    capacity: int = flax.struct.field(pytree_node=False)
    branching: int = flax.struct.field(pytree_node=False)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def level_sizes(capacity: int, branching: int = 8) -> tuple[int, ...]:
    """The sizes ``(n_0, n_1, ..., b, 1)`` of the levels of a tree, leaves first.

    ``n_0 = capacity`` rounded up to a multiple of ``b``; ``n_{k+1} = n_k / b`` rounded up
    to a multiple of ``b`` while ``n_k > b``; then the root, 1.
    """
    sizes = [_round_up(capacity, branching)]
    while sizes[-1] > branching:
        sizes.append(_round_up(sizes[-1] // branching, branching))
    return (*sizes, 1)


def _offsets(tree: SumTree) -> tuple[int, ...]:
    """Where each level starts in ``nodes``; every level but the root's is padded to ``b``
    slots, so each level, and each block of ``b`` siblings, starts at a multiple of ``b``."""
    offsets, start = [], 0
    for n in level_sizes(tree.capacity, tree.branching):
        offsets.append(start)
        start += _round_up(n, tree.branching)
    return tuple(offsets)


def levels(tree: SumTree) -> tuple[Array, ...]:
    """Views of the levels of the tree, leaves (``[n_0]``) first, root (``[1]``) last.

    ``levels(tree)[k + 1][j]`` is the sum :math:`S` of ``levels(tree)[k][b j : b j + b]``.
    """
    sizes = level_sizes(tree.capacity, tree.branching)
    return tuple(tree.nodes[..., o : o + n] for o, n in zip(_offsets(tree), sizes, strict=True))


def _block_sum(x: Array) -> Array:
    """``S``: the sum over the last axis (a power of two) by halves, in a fixed order."""
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        x = x[..., :half] + x[..., half:]
    return x[..., 0]


def init(capacity: int, branching: int = 8) -> SumTree:
    """An empty tree (all priorities 0) with ``capacity`` leaves.

    Args:
      capacity: static Python int ``>= 1``, the number of leaves.
      branching: static Python int ``b``, a power of two ``>= 2``: the number of children
        of each internal node (2 gives a binary tree; wider is shallower, see the module
        docstring).

    Returns:
      A ``SumTree`` whose nodes are all zeros.
    """
    capacity = check_int("capacity", capacity)
    branching = check_int("branching", branching)
    if branching < 2 or branching & (branching - 1):
        raise ValueError(f"branching must be a power of two >= 2, got {branching}")
    size = sum(_round_up(n, branching) for n in level_sizes(capacity, branching))
    return SumTree(nodes=jnp.zeros((size,), jnp.float32), capacity=capacity, branching=branching)


def total(tree: SumTree) -> Array:
    """The total mass ``T = sum_i p_i`` (the root), a float32 scalar."""
    return tree.nodes[_offsets(tree)[-1]]


def get(tree: SumTree, indices: ArrayLike) -> Array:
    """The priorities ``p[indices]`` of the given leaves.

    Args:
      tree: a ``SumTree``.
      indices: int array of any shape, values in ``[0, capacity)``.

    Returns:
      float32 array of the shape of ``indices``.
    """
    return tree.nodes[jnp.asarray(indices, jnp.int32)]


def deduplicate(indices: ArrayLike, values: ArrayLike, capacity: int) -> tuple[Array, Array]:
    """Resolve a batch of writes to ``capacity`` slots so that the last write wins.

    Returns the ``K`` writes, reordered, with the index of every write that is not the
    last one to its index (``indices[j] == indices[k]`` for some ``j > k``) and of every
    out-of-range write (``indices[k]`` outside ``[0, capacity)``) replaced by ``-1``; the
    writes left then have distinct indices. Applying them in any order has the effect of
    applying the original writes one after another. ``O(K log K)``: one sort of int32
    keys ``index * K + k`` (an argsort when ``capacity * K`` does not fit in int32).

    Args:
      indices: ``[K]`` int array.
      values: ``[K]`` array, the value written by each entry.
      capacity: static Python int, the number of slots.

    Returns:
      ``(indices, values)``, both ``[K]``: int32 indices in ``[-1, capacity)`` and the
      values of the same dtype, permuted alike.
    """
    indices = jnp.asarray(indices, jnp.int32)
    values = jnp.asarray(values)
    num = indices.shape[0]
    indices = jnp.where((indices >= 0) & (indices < capacity), indices, -1)
    if num <= 1:
        return indices, values
    position = jnp.arange(num, dtype=jnp.int32)
    if (capacity + 1) * num <= _INT32_MAX:
        key = jnp.sort(indices * num + position)  # by index, ties by position
        order = key - jnp.floor_divide(key, num) * num
    else:
        order = jnp.argsort(indices, stable=True).astype(jnp.int32)
    indices, values = indices[order], values[order]
    is_last = jnp.concatenate([indices[:-1] != indices[1:], jnp.ones((1,), bool)])
    return jnp.where(is_last, indices, -1), values


def index_value_batch(indices: ArrayLike, values: ArrayLike, what: str) -> tuple[Array, Array]:
    """``indices`` int32 and ``values`` float32, both flattened to ``[K]``; a ValueError
    names ``what`` and both shapes when they differ."""
    indices = jnp.asarray(indices, jnp.int32).reshape(-1)
    values = jnp.asarray(values, jnp.float32).reshape(-1)
    if indices.shape != values.shape:
        raise ValueError(
            f"{what} expects indices and priorities of the same shape [K], got "
            f"{indices.shape} and {values.shape}"
        )
    return indices, values


def update(
    tree: SumTree,
    indices: ArrayLike,
    priorities: ArrayLike,
    *,
    assume_unique: bool = False,
) -> SumTree:
    """Set ``p[indices[k]] = priorities[k]`` for a whole batch at once.

    When an index appears more than once in ``indices`` the last write wins: the result
    is exactly that of writing the ``K`` entries one after another, in order. Entries with
    an index outside ``[0, capacity)`` (e.g. ``-1`` used as a mask) are ignored. Then every
    ancestor of a written leaf is recomputed from its children, bottom up (parent ``j`` of
    level ``k + 1`` gets :math:`S` of its ``b`` children ``b j .. b j + b - 1`` of level
    ``k``, in float32), so afterwards every internal node equals the sum of its children
    exactly (see the module docstring). Cost: ``O(K log K)`` to resolve duplicates (see
    :func:`deduplicate`), one scatter of ``K`` leaves, then per level a gather of ``K``
    blocks of ``b`` children and a scatter of ``K`` sums.

    Args:
      tree: a ``SumTree``.
      indices: ``[K]`` int array (static ``K``), the leaves to write.
      priorities: ``[K]`` float array, the new priorities (cast to float32); must be
        finite and ``>= 0``, and their total must stay finite in float32. Values below
        the smallest normal float32 (``1.2e-38``: subnormals, which XLA flushes to zero,
        and 0) are stored as 0, and so are negative and NaN values.
      assume_unique: static; if True, the caller promises that no index in
        ``[0, capacity)`` appears twice in ``indices`` (out-of-range entries may repeat),
        which skips the duplicate resolution.

    Returns:
      The updated ``SumTree``.
    """
    indices, priorities = index_value_batch(indices, priorities, "update")
    if indices.shape[0] == 0:
        return tree
    # XLA flushes subnormal floats to zero on CPU and GPU, so a subnormal priority would
    # be positive in memory but 0 to every comparison: store it as 0 (likewise negative
    # and NaN priorities, which are invalid).
    priorities = jnp.where(priorities >= jnp.finfo(jnp.float32).tiny, priorities, 0.0)
    if assume_unique:
        keep = (indices >= 0) & (indices < tree.capacity)
    else:
        indices, priorities = deduplicate(indices, priorities, tree.capacity)
        keep = indices >= 0
    b, offsets = tree.branching, _offsets(tree)
    dropped = tree.nodes.shape[0]  # a scatter index past the end writes nothing
    node = jnp.where(keep, indices, 0)  # node index within its level
    nodes = tree.nodes.at[jnp.where(keep, node, dropped)].set(priorities, mode="drop")
    # Unrolled: each level's gather reads the previous level's scatter, so XLA keeps the
    # levels apart (two kernels per level) and updates the tree in place.
    for start, parent_start in itertools.pairwise(offsets):
        node = node // b
        block = nodes.reshape(-1, b)[start // b + node]  # [K, b], the siblings
        # Siblings share a parent and write the same sum, so duplicates are harmless.
        parent = jnp.where(keep, parent_start + node, dropped)
        nodes = nodes.at[parent].set(_block_sum(block), mode="drop")
    return dataclasses.replace(tree, nodes=nodes)


def sample(tree: SumTree, key: jax.Array, batch_size: int) -> tuple[Array, Array]:
    r"""Draw ``batch_size`` leaves, stratified, each with probability proportional to it.

    Stratified sampling (Schaul et al. 2016, Appendix B.2.1): the mass ``[0, T)``,
    ``T = total(tree)``, is cut into ``B`` equal slices and one target is drawn uniformly
    in each,

    .. math::
        u_b = \frac{b + U_b}{B}\,T, \qquad U_b \sim \mathcal U[0, 1)\ \text{i.i.d.},

    and draw ``b`` is the leaf ``i`` with :math:`\sum_{j<i} p_j \le u_b < \sum_{j\le i}
    p_j`: from the root, each step takes the first child whose inclusive prefix sum of
    the children's masses exceeds ``u`` and subtracts the mass before it. So draw ``b``
    alone follows :math:`p_i / T` restricted to slice ``b``, and over the batch leaf ``i``
    is drawn ``B p_i / T`` times in expectation, with less variance than from ``B``
    independent draws. A step never enters a child of zero mass (see the module
    docstring), so a leaf with ``p_i = 0`` is never returned while ``T > 0``.

    Args:
      tree: a ``SumTree``.
      key: a PRNG key.
      batch_size: static Python int ``B >= 1``.

    Returns:
      ``(indices, priorities)``: ``indices`` ``[B]`` int32 in ``[0, capacity)``, the drawn
      leaves, in the order of the slices; ``priorities`` ``[B]`` float32, their priorities
      ``p[indices]`` (so ``priorities / total(tree)`` is the probability of each). If the
      tree is empty (``T = 0``) every index is 0 with priority 0.
    """
    indices, priorities, _ = sample_with_total(tree, key, batch_size)
    return indices, priorities


def sample_with_total(tree: SumTree, key: jax.Array, batch_size: int) -> tuple[Array, Array, Array]:
    """:func:`sample`, also returning the total mass ``T`` (so ``priorities / T`` are the
    probabilities of the draws).

    Prefer this ``T`` to ``total(tree)`` when the tree is updated in place afterwards (as
    after sampling a replay batch): it is computed inside the descent, from the same
    read of the top level as the root, so it is bit-identical to ``total(tree)``, and a
    later use of it does not keep the tree's buffer alive past the update. A read of
    ``total(tree)`` that XLA cannot order before the update (e.g. one feeding only
    importance weights or a logged metric) makes it copy the whole tree first.

    Returns:
      ``(indices, priorities, total)``: as :func:`sample`, and a float32 scalar.
    """
    strata = jnp.arange(batch_size, dtype=jnp.float32)
    uniform = jax.random.uniform(key, (batch_size,), jnp.float32)
    return _descend(tree, (strata + uniform) / batch_size * total(tree))


def _descend(tree: SumTree, target: Array) -> tuple[Array, Array, Array]:
    """The leaves holding the targets ``[B]`` (mass coordinates in ``[0, T)``), their
    priorities, and the total ``T`` read from the top level inside the loop."""
    b, offsets = tree.branching, _offsets(tree)
    rows = tree.nodes.reshape(-1, b)
    starts = jnp.asarray(offsets, jnp.int32) // b
    depth = len(offsets) - 1

    def level_down(t, carry):
        node, _, target, mass = carry
        children = rows[starts[depth - 1 - t] + node]  # [B, b]
        # At the top, children are the root's, the same row for every draw.
        mass = jnp.where(t == 0, _block_sum(children[0]), mass)
        return (*_pick_child(children, node, target), mass)

    node = jnp.zeros(target.shape, jnp.int32)
    value = jnp.zeros(target.shape, jnp.float32)
    # A loop rather than unrolled levels: XLA would fuse each level's index arithmetic
    # into the next level's gather and recompute all earlier levels there.
    node, value, _, mass = jax.lax.fori_loop(
        0, depth, level_down, (node, value, target.astype(jnp.float32), jnp.zeros((), jnp.float32))
    )
    return node, value, mass


def _pick_child(children: Array, node: Array, target: Array) -> tuple[Array, Array, Array]:
    """One step down: the child of ``node`` (children ``[B, b]``) holding ``target``.

    Returns the child's index in the level below, its mass, and the target within it.
    Written column by column on ``[B]`` vectors, so that XLA fuses the whole step into one
    elementwise loop (reductions over a short axis would each be a separate kernel).
    """
    b = children.shape[-1]
    column = [children[:, j] for j in range(b)]
    # Inclusive prefix sums, accumulated left to right: prefix[j] = fl(prefix[j-1] + c_j),
    # so prefix is non-decreasing and prefix[j] == prefix[j-1] whenever c_j == 0.
    prefix = [column[0]]
    for j in range(1, b):
        prefix.append(prefix[-1] + column[j])
    # The first child whose prefix exceeds the target has positive mass (its prefix differs
    # from the one before); if none does among the first b - 1, the last child, unless
    # rounding let the target run past the total and the last child is empty: then the
    # last child with mass.
    pick = jnp.zeros_like(node)
    for j in range(b - 1):
        pick = pick + (prefix[j] <= target).astype(jnp.int32)
    last_with_mass = jnp.zeros_like(node)
    for j in range(1, b):
        last_with_mass = jnp.where(column[j] > 0, j, last_with_mass)
    pick = jnp.where((pick == b - 1) & (column[b - 1] <= 0), last_with_mass, pick)
    value, before = column[0], jnp.zeros_like(target)
    for j in range(1, b):
        value = jnp.where(pick == j, column[j], value)
        before = jnp.where(pick == j, prefix[j - 1], before)
    return node * b + pick, value, jnp.clip(target - before, 0, value)
