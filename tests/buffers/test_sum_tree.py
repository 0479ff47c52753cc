"""Sum tree against a NumPy reference: exact sums, last write wins, sampling law, no zeros."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import sum_tree

_update = jax.jit(sum_tree.update)  # one program per shape, not one per op


def _block_sum_ref(x):
    """S: pairwise by halves over the last axis, in float32, one add at a time."""
    x = np.asarray(x, np.float32)
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        x = (x[..., :half] + x[..., half:]).astype(np.float32)
    return x[..., 0]


def _tree_ref(leaves, capacity, b):
    """Every level rebuilt bottom-up from the leaves, then laid out like ``nodes``."""
    sizes = sum_tree.level_sizes(capacity, b)
    level = np.zeros(sizes[0], np.float32)
    level[:capacity] = leaves
    levels = [level]
    for n in sizes[1:]:
        sums = _block_sum_ref(levels[-1].reshape(-1, b))
        nxt = np.zeros(n, np.float32)
        nxt[: len(sums)] = sums
        levels.append(nxt)
    padded = [np.pad(lv, (0, -len(lv) % b)) for lv in levels]
    return np.concatenate(padded), levels


def _write_ref(leaves, indices, values, capacity):
    """Writes one after another; out-of-range ones ignored."""
    leaves = leaves.copy()
    for i, v in zip(np.asarray(indices), np.asarray(values, np.float32), strict=True):
        if 0 <= i < capacity:
            leaves[i] = v
    return leaves


def _chi2_critical(df, z=3.0902):
    """Wilson-Hilferty approximation of the chi-square quantile; z = 3.0902 is the
    standard normal 0.999 quantile, so a correct sampler fails with probability ~0.001
    (the approximation is within 1% of the exact quantile for df >= 5)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


@pytest.mark.parametrize("capacity,b", [(1, 8), (7, 2), (8, 8), (9, 8), (100, 4), (1000, 8)])
def test_init_layout(capacity, b):
    tree = sum_tree.init(capacity, b)
    ref, levels = _tree_ref(np.zeros(capacity, np.float32), capacity, b)
    assert tree.nodes.dtype == jnp.float32 and tree.nodes.shape == ref.shape
    assert [lv.shape for lv in sum_tree.levels(tree)] == [lv.shape for lv in levels]
    assert sum_tree.levels(tree)[-1].shape == (1,) and sum_tree.level_sizes(capacity, b)[-2] == b
    assert float(sum_tree.total(tree)) == 0.0


def test_init_rejects_bad_arguments():
    for capacity, b in [(0, 8), (10, 3), (10, 1), (10, 0), (2.0, 8), (True, 8)]:
        with pytest.raises(ValueError):
            sum_tree.init(capacity, b)


@pytest.mark.parametrize("capacity,b", [(37, 2), (37, 8), (300, 4)])
def test_update_last_write_wins_and_sums_are_exact(capacity, b):
    rng = np.random.default_rng(capacity + b)
    update = jax.jit(sum_tree.update)
    tree = sum_tree.init(capacity, b)
    leaves = np.zeros(capacity, np.float32)
    for step in range(12):
        # K = 64 writes into few slots: many duplicates; some out of range (ignored).
        indices = rng.integers(-3, capacity + 3, size=64).astype(np.int32)
        indices[:8] = indices[8:16]  # certainly duplicated
        values = (rng.exponential(size=64) * (rng.uniform(size=64) > 0.3)).astype(np.float32)
        if step % 4 == 3:
            values = np.zeros(64, np.float32)  # zero some out again
        tree = update(tree, indices, values)
        leaves = _write_ref(leaves, indices, values, capacity)
        ref, levels = _tree_ref(leaves, capacity, b)
        # Bit for bit: every node is S of its children, as if rebuilt from the leaves.
        np.testing.assert_array_equal(np.asarray(tree.nodes), ref)
        got = sum_tree.levels(tree)
        for k in range(len(levels) - 1):
            np.testing.assert_array_equal(
                _block_sum_ref(np.asarray(got[k]).reshape(-1, b))[: len(got[k + 1])],
                np.asarray(got[k + 1])[: len(got[k]) // b],
            )
        np.testing.assert_array_equal(sum_tree.get(tree, np.arange(capacity)), leaves)
        assert sum_tree.total(tree) == levels[-1][0]


def test_update_assume_unique_matches_general_path():
    capacity, b = 200, 8
    rng = np.random.default_rng(0)
    indices = rng.permutation(capacity)[:50].astype(np.int32)
    indices[-3:] = [-1, capacity, -1]  # out of range: ignored, may repeat
    values = rng.uniform(size=50).astype(np.float32)
    base = _update(sum_tree.init(capacity, b), np.arange(capacity), np.ones(capacity))
    fast = jax.jit(lambda t, i, v: sum_tree.update(t, i, v, assume_unique=True))(
        base, indices, values
    )
    slow = jax.jit(sum_tree.update)(base, indices, values)
    np.testing.assert_array_equal(fast.nodes, slow.nodes)
    ref, _ = _tree_ref(
        _write_ref(np.ones(capacity, np.float32), indices, values, capacity), capacity, b
    )
    np.testing.assert_array_equal(fast.nodes, ref)


@pytest.mark.parametrize("capacity", [50, 2**31 // 16])  # packed-key sort / argsort path
def test_deduplicate_keeps_last_write(capacity):
    rng = np.random.default_rng(1)
    indices = rng.integers(-2, 52, size=16).astype(np.int32)
    indices[3] = indices[9] = indices[15] = 7
    values = np.arange(16, dtype=np.float32)
    got_i, got_v = jax.jit(sum_tree.deduplicate, static_argnums=2)(indices, values, capacity)
    got_i, got_v = np.asarray(got_i), np.asarray(got_v)
    last = {}
    for i, v in zip(indices, values, strict=True):
        if 0 <= i < capacity:
            last[int(i)] = float(v)
    kept = got_i >= 0
    assert (got_i[~kept] == -1).all()
    assert dict(zip(got_i[kept].tolist(), got_v[kept].tolist(), strict=True)) == last
    assert kept.sum() == len(last) and last[7] == 15.0
    assert sorted(got_v.tolist()) == values.tolist()  # a permutation of the writes


_sample_batches = jax.jit(
    jax.vmap(sum_tree.sample, in_axes=(None, 0, None)), static_argnums=2
)  # one compilation per tree shape and batch size


def _sample_many(tree, num_keys, batch_size, seed=0):
    keys = jax.random.split(jax.random.key(seed), num_keys)
    indices, priorities = _sample_batches(tree, keys, batch_size)
    return np.asarray(indices).reshape(-1), np.asarray(priorities).reshape(-1)


@pytest.mark.parametrize("batch_size,num_keys", [(1, 40_000), (64, 600)])
def test_sampling_frequencies_chi_square(batch_size, num_keys):
    capacity, b = 60, 8
    rng = np.random.default_rng(2)
    p = rng.exponential(size=capacity).astype(np.float32)
    p[rng.uniform(size=capacity) < 0.25] = 0
    p[[0, capacity - 1]] = [0.0, 3.0]
    tree = _update(sum_tree.init(capacity, b), np.arange(capacity), p)
    indices, priorities = _sample_many(tree, num_keys, batch_size)
    assert indices.dtype == np.int32 and priorities.dtype == np.float32
    np.testing.assert_array_equal(priorities, p[indices])
    counts = np.bincount(indices, minlength=capacity)
    assert counts.shape == (capacity,) and counts[p == 0].sum() == 0
    nonzero = p > 0
    expected = len(indices) * p[nonzero].astype(np.float64) / p.astype(np.float64).sum()
    chi2 = np.sum((counts[nonzero] - expected) ** 2 / expected)
    # With batch_size 1 the counts are multinomial, chi-square with df = #nonzero - 1
    # degrees of freedom. Stratified batches only lower the variance of the counts, so
    # the same bound is conservative for them. A sampler off by one leaf, or drawing
    # uniformly, scores in the thousands here.
    assert chi2 < _chi2_critical(nonzero.sum() - 1), chi2


def test_sampling_is_stratified():
    capacity, b, batch_size = 500, 8, 128
    p = np.random.default_rng(3).exponential(size=capacity).astype(np.float32)
    tree = _update(sum_tree.init(capacity, b), np.arange(capacity), p)
    indices, _ = _sample_many(tree, 20, batch_size, seed=4)
    indices = indices.reshape(20, batch_size)
    cum = np.concatenate([[0.0], np.cumsum(p.astype(np.float64))])
    total = cum[-1]
    for row in indices:
        lo, hi = cum[row], cum[row + 1]  # the mass interval of each drawn leaf
        stratum_lo = np.arange(batch_size) / batch_size * total
        stratum_hi = (np.arange(batch_size) + 1) / batch_size * total
        slack = 1e-5 * total
        assert (lo <= stratum_hi + slack).all() and (hi >= stratum_lo - slack).all()
        assert (np.diff(row) >= 0).all()


def _adversarial_leaves(capacity):
    rng = np.random.default_rng(5)
    cases = {}
    for pos in (0, capacity // 2 + 1, capacity - 1):
        single = np.zeros(capacity, np.float32)
        single[pos] = 1.0
        cases[f"single@{pos}"] = single
    tiny = np.zeros(capacity, np.float32)
    tiny[capacity // 3] = np.finfo(np.float32).tiny  # the smallest normal float32
    cases["single tiny"] = tiny
    mixed = np.zeros(capacity, np.float32)
    mixed[0::7] = 1e30
    mixed[1::7] = 1e-30
    cases["huge next to tiny"] = mixed
    # Large leaves swallow small ones in float32 sums, so a node's prefix sums and its
    # stored total disagree by rounding, with empty children at the end of blocks.
    absorbing = np.where(rng.uniform(size=capacity) < 0.5, 1.0, 0.0).astype(np.float32)
    absorbing[0::16] = 3e7
    absorbing[7::8] = 0.0
    cases["absorbing rounding"] = absorbing
    return cases


@pytest.mark.parametrize("name", list(_adversarial_leaves(1000)))
def test_zero_priority_leaves_are_never_sampled(name):
    capacity, b = 1000, 8
    p = _adversarial_leaves(capacity)[name]
    # Set everything, then zero out what should be empty: a tree that has changed.
    tree = sum_tree.init(capacity, b)
    tree = _update(tree, np.arange(capacity), np.full(capacity, 5.0, np.float32))
    tree = _update(tree, np.arange(capacity), p)
    indices, priorities = _sample_many(tree, 200, 256)
    assert (priorities > 0).all() and (p[indices] > 0).all(), np.unique(indices[p[indices] == 0])
    if name.startswith("single"):
        assert (indices == np.flatnonzero(p)[0]).all()


def test_subnormal_negative_and_nan_priorities_are_stored_as_zero():
    values = np.array([1e-45, 1e-39, -1.0, np.nan, np.finfo(np.float32).tiny, 2.0], np.float32)
    tree = jax.jit(sum_tree.update)(sum_tree.init(6, 2), np.arange(6), values)
    np.testing.assert_array_equal(sum_tree.get(tree, np.arange(6)), [0, 0, 0, 0, values[4], 2])
    assert sum_tree.total(tree) == 2.0


def test_pick_child_guard_when_target_runs_past_the_children():
    # The target is past every prefix sum and the last children are empty: the step must
    # take the last child with mass, never an empty one.
    children = jnp.array([[1.0, 2.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0]] * 3, jnp.float32)
    node = jnp.array([0, 1, 2], jnp.int32)
    target = jnp.array([7.0, 7.5, 100.0], jnp.float32)
    new_node, value, new_target = sum_tree._pick_child(children, node, target)
    np.testing.assert_array_equal(new_node, node * 8 + 3)
    np.testing.assert_array_equal(value, [4.0, 4.0, 4.0])
    assert (new_target >= 0).all() and (new_target <= value).all()
    # Targets within the mass pick the child whose prefix interval holds them.
    target = jnp.array([0.5, 1.0, 6.99], jnp.float32)
    new_node, value, new_target = sum_tree._pick_child(children, node, target)
    np.testing.assert_array_equal(new_node, node * 8 + jnp.array([0, 1, 3]))
    np.testing.assert_allclose(new_target, [0.5, 0.0, 3.99], rtol=1e-6)


@pytest.mark.parametrize("capacity", [8, 512])
def test_descent_at_the_rounded_top_of_the_mass_never_ends_on_zero(capacity):
    """1 + 1 + ... is absorbed by 2^24 when summed left to right but not when summed by
    halves (the tree's order), so the stored totals exceed the prefix sums the descent
    computes; a target in that gap runs past every child, whose last one is empty."""
    block = np.array([2**24, 1, 1, 1, 1, 1, 1, 0], np.float32)
    p = np.tile(block, capacity // 8)
    tree = _update(sum_tree.init(capacity, 8), np.arange(capacity), p)
    mass = sum_tree.total(tree)
    prefix = np.cumsum(p, dtype=np.float32)[-1]
    assert mass > prefix  # the gap exists
    targets = jnp.array([mass, np.nextafter(mass, 0), (mass + prefix) / 2, prefix], jnp.float32)
    leaves, priorities, total = jax.jit(sum_tree._descend)(tree, targets)
    assert total == mass
    np.testing.assert_array_equal(priorities, p[np.asarray(leaves)])
    assert (priorities > 0).all(), leaves


def test_no_drift_after_a_million_updates():
    """1.6 million writes (100,000 batches of 16) in one jitted scan, with a sample after
    every batch: the tree still equals its rebuild from the leaves, bit for bit, and no
    draw ever hit a zero leaf."""
    capacity, b, steps, k = 1000, 8, 100_000, 16

    def body(carry, key):
        tree, bad = carry
        ikey, vkey, zkey, skey = jax.random.split(key, 4)
        indices = jax.random.randint(ikey, (k,), 0, capacity)
        values = jnp.exp(jax.random.uniform(vkey, (k,), minval=-20.0, maxval=20.0))
        values = jnp.where(jax.random.uniform(zkey, (k,)) < 0.3, 0.0, values)
        tree = sum_tree.update(tree, indices, values)
        drawn, priority = sum_tree.sample(tree, skey, 8)
        bad += jnp.sum((sum_tree.get(tree, drawn) <= 0) | (priority <= 0))
        return (tree, bad), None

    @jax.jit
    def run(key):
        tree = sum_tree.update(sum_tree.init(capacity, b), jnp.arange(capacity), jnp.ones(capacity))
        return jax.lax.scan(body, (tree, jnp.int32(0)), jax.random.split(key, steps))[0]

    tree, bad = run(jax.random.key(6))
    assert int(bad) == 0
    leaves = np.asarray(sum_tree.levels(tree)[0])[:capacity]
    assert (leaves == 0).sum() > 100  # the zero leaves are really there
    ref, _ = _tree_ref(leaves, capacity, b)
    np.testing.assert_array_equal(np.asarray(tree.nodes), ref)
    indices, _ = _sample_many(tree, 100, 256)
    assert (leaves[indices] > 0).all()


def test_under_vmap_matches_unbatched():
    capacity, b, seeds = 100, 4, 3
    rng = np.random.default_rng(7)
    indices = rng.integers(0, capacity, size=(seeds, 40)).astype(np.int32)
    values = rng.exponential(size=(seeds, 40)).astype(np.float32)
    keys = jax.random.split(jax.random.key(8), seeds)

    def one(i, v, key):
        tree = sum_tree.update(sum_tree.init(capacity, b), i, v)
        drawn, priority, mass = sum_tree.sample_with_total(tree, key, 16)
        return tree, drawn, priority, mass

    batched = jax.jit(jax.vmap(one))(indices, values, keys)
    assert batched[0].nodes.shape[0] == seeds
    one_jit = jax.jit(one)
    for s in range(seeds):
        single = one_jit(indices[s], values[s], keys[s])
        np.testing.assert_array_equal(batched[0].nodes[s], single[0].nodes)
        for got, want in zip(batched[1:], single[1:], strict=True):
            np.testing.assert_array_equal(got[s], want)
        assert single[3] == sum_tree.total(single[0])  # bit-identical to the root
        ref, _ = _tree_ref(
            _write_ref(np.zeros(capacity, np.float32), indices[s], values[s], capacity), capacity, b
        )
        np.testing.assert_array_equal(single[0].nodes, ref)
