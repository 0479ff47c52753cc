"""Uniform replay buffer against a NumPy ring-buffer reference."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import ReplaySample, ReplayState, make_uniform_replay


class _RingRef:
    """A plain ring buffer of rows, written one row at a time."""

    def __init__(self, capacity, num_envs, example):
        self.L = capacity // num_envs
        self.data = {k: np.zeros((self.L, *v.shape), v.dtype) for k, v in example.items()}
        self.position = 0
        self.size = 0

    def add(self, batch):
        T = next(iter(batch.values())).shape[0]
        for t in range(T):
            for k, v in batch.items():
                self.data[k][self.position] = v[t]
            self.position = (self.position + 1) % self.L
            self.size = min(self.size + 1, self.L)


def _example(num_envs):
    return {
        "obs": np.zeros((num_envs, 2), np.float32),
        "flag": np.zeros((num_envs,), bool),
        "step": np.zeros((num_envs,), np.int32),
    }


def _batch(rng, T, num_envs, t0):
    """Steps t0..t0+T-1; 'step' stores a global counter * num_envs + env id."""
    t = np.arange(t0, t0 + T)[:, None]
    return {
        "obs": rng.normal(size=(T, num_envs, 2)).astype(np.float32),
        "flag": rng.uniform(size=(T, num_envs)) < 0.5,
        "step": (t * num_envs + np.arange(num_envs)[None, :]).astype(np.int32),
    }


def _fill(buffer, num_envs, sizes, seed=0):
    rng = np.random.default_rng(seed)
    state, t0 = buffer.init(_example(num_envs)), 0
    add = jax.jit(buffer.add)
    for T in sizes:
        state = add(state, _batch(rng, T, num_envs, t0))
        t0 += T
    return state, t0


@pytest.mark.parametrize(
    "capacity,num_envs,sizes",
    [
        (10, 3, [2, 3, 2, 2, 3]),  # L = 3, uneven division
        (17, 2, [3, 5, 3, 8, 5, 3]),  # L = 8
        (7, 1, [3, 7, 3, 3, 3]),  # L = 7, T = L
        (23, 4, [4, 3, 4, 3, 4]),  # L = 5
    ],
)
def test_add_matches_ring_reference(capacity, num_envs, sizes):
    buffer = make_uniform_replay(capacity, num_envs, batch_size=4)
    rng = np.random.default_rng(capacity)
    state = buffer.init(_example(num_envs))
    ref = _RingRef(capacity, num_envs, _example(num_envs))
    assert state.position.dtype == jnp.int32 and state.size.dtype == jnp.int32
    for k, v in state.data.items():
        assert v.shape == ref.data[k].shape and v.dtype == ref.data[k].dtype
    add = jax.jit(buffer.add)
    t0 = 0
    for T in sizes:
        batch = _batch(rng, T, num_envs, t0)
        t0 += T
        state = add(state, batch)
        ref.add(batch)
        assert int(state.position) == ref.position and int(state.size) == ref.size
        for k in ref.data:
            np.testing.assert_array_equal(state.data[k], ref.data[k])
        assert bool(buffer.can_sample(state)) == (ref.size >= 1)


@pytest.mark.parametrize(
    "capacity,num_envs,window,sizes",
    [
        (12, 3, 2, [1]),  # L = 4, size 1 < window
        (12, 3, 3, [1, 2]),  # partially filled, exactly one valid start
        (26, 4, 3, [2, 3, 2, 3, 3, 2, 3, 2, 3]),  # L = 6, wrapped several times
        (9, 1, 4, [5, 3, 5, 3, 5]),  # L = 9
        (20, 2, 1, [7, 7]),  # window 1
    ],
)
def test_sampled_windows_are_consecutive_and_behind_write_head(capacity, num_envs, window, sizes):
    buffer = make_uniform_replay(capacity, num_envs, batch_size=256, window=window)
    L = capacity // num_envs
    state, total = _fill(buffer, num_envs, sizes)
    size = min(total, L)
    assert bool(buffer.can_sample(state)) == (size >= window)
    if size < window:
        return
    sample = jax.jit(buffer.sample)
    for seed in range(4):
        out = sample(state, jax.random.key(seed))
        assert isinstance(out, ReplaySample)
        assert out.time_index.dtype == jnp.int32 and out.env_index.dtype == jnp.int32
        assert out.experience["obs"].shape == (256, window, 2)
        assert out.experience["flag"].shape == (256, window)
        steps = np.asarray(out.experience["step"])
        t, env = steps // num_envs, steps % num_envs
        np.testing.assert_array_equal(env, np.broadcast_to(out.env_index[:, None], env.shape))
        np.testing.assert_array_equal(np.diff(t, axis=1), 1)  # consecutive, in order
        assert (t[:, 0] >= total - size).all() and (t[:, -1] <= total - 1).all()
        np.testing.assert_array_equal(out.time_index, t[:, 0] % L)
        # The other leaves come from the same rows.
        obs, stored = np.asarray(out.experience["obs"]), np.asarray(state.data["obs"])
        time_index, env_index = np.asarray(out.time_index), np.asarray(out.env_index)
        for b in range(0, 256, 7):
            for j in range(window):
                row = (time_index[b] + j) % L
                np.testing.assert_array_equal(obs[b, j], stored[row, env_index[b]])


@pytest.mark.parametrize("sizes", [[3], [4, 5, 4]])  # partially filled; full and wrapped
def test_coverage_and_uniformity(sizes):
    num_envs, window, L = 3, 2, 5
    buffer = make_uniform_replay(L * num_envs + 2, num_envs, batch_size=6000, window=window)
    state, total = _fill(buffer, num_envs, sizes)
    size = min(total, L)
    oldest = (total - size) % L
    valid = {(e, (oldest + o) % L) for e in range(num_envs) for o in range(size - window + 1)}
    out = jax.jit(buffer.sample)(state, jax.random.key(0))
    env_index, time_index = np.asarray(out.env_index).tolist(), np.asarray(out.time_index).tolist()
    pairs = list(zip(env_index, time_index, strict=True))
    assert set(pairs) == valid  # every valid start is drawn, nothing else is
    counts = np.array([pairs.count(p) for p in sorted(valid)], np.float64)
    expected = len(pairs) / len(valid)
    chi2 = np.sum((counts - expected) ** 2 / expected)
    # df <= 11: P(chi2 > 31.3) = 0.001 for df = 11. Omitting one start of 12 gives ~ 550.
    assert chi2 < 31.3, counts


def test_inside_scan_matches_sequential():
    num_envs, T = 2, 3
    buffer = make_uniform_replay(14, num_envs, batch_size=8, window=2)  # L = 7
    rng = np.random.default_rng(5)
    batches = [_batch(rng, T, num_envs, T * i) for i in range(6)]
    stacked = jax.tree.map(lambda *x: np.stack(x), *batches)
    keys = jax.random.split(jax.random.key(1), 6)

    def body(state, inp):
        batch, key = inp
        state = buffer.add(state, batch)
        out = buffer.sample(state, key)
        return state, (out, buffer.can_sample(state))

    init = buffer.init(_example(num_envs))
    final, (outs, can) = jax.jit(lambda s: jax.lax.scan(body, s, (stacked, keys)))(init)
    state, add, sample = init, jax.jit(buffer.add), jax.jit(buffer.sample)
    for i, batch in enumerate(batches):
        state = add(state, batch)
        out = sample(state, keys[i])
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(outs), strict=True):
            np.testing.assert_array_equal(a, b[i])
    assert bool(can.all())
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(final), strict=True):
        np.testing.assert_array_equal(a, b)


def test_vmap_over_buffer_states():
    num_envs, K = 3, 4
    buffer = make_uniform_replay(15, num_envs, batch_size=16, window=2)  # L = 5
    rng = np.random.default_rng(9)
    # K members that hold different amounts of data.
    members = [_fill(buffer, num_envs, [2] * (k + 1), seed=k)[0] for k in range(K)]
    states = jax.tree.map(lambda *x: jnp.stack(x), *members)
    assert isinstance(states, ReplayState) and states.position.shape == (K,)
    batches = [_batch(rng, 2, num_envs, 100 + 10 * k) for k in range(K)]
    stacked = jax.tree.map(lambda *x: np.stack(x), *batches)
    keys = jax.random.split(jax.random.key(2), K)

    new = jax.jit(jax.vmap(buffer.add))(states, stacked)
    out = jax.jit(jax.vmap(buffer.sample))(new, keys)
    can = jax.vmap(buffer.can_sample)(new)
    add, sample = jax.jit(buffer.add), jax.jit(buffer.sample)
    for k in range(K):
        ref_state = add(members[k], batches[k])
        ref_out = sample(ref_state, keys[k])
        for a, b in zip(jax.tree.leaves(ref_state), jax.tree.leaves(new), strict=True):
            np.testing.assert_array_equal(a, b[k])
        for a, b in zip(jax.tree.leaves(ref_out), jax.tree.leaves(out), strict=True):
            np.testing.assert_array_equal(a, b[k])
        assert bool(can[k]) == bool(buffer.can_sample(ref_state))


def test_vmap_with_shared_batch_and_key():
    buffer = make_uniform_replay(8, 2, batch_size=4)
    states = jax.jit(jax.vmap(lambda _: buffer.init(_example(2))))(jnp.arange(3))
    batch = _batch(np.random.default_rng(0), 3, 2, 0)
    new = jax.jit(jax.vmap(buffer.add, in_axes=(0, None)))(states, batch)
    np.testing.assert_array_equal(new.size, [3, 3, 3])
    out = jax.jit(jax.vmap(buffer.sample, in_axes=(0, None)))(new, jax.random.key(0))
    np.testing.assert_array_equal(out.experience["step"][0], out.experience["step"][2])
    assert out.experience["obs"].shape == (3, 4, 1, 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(capacity=5, num_envs=3, batch_size=2, window=2),  # capacity < N * window
        dict(capacity=0, num_envs=1, batch_size=2),
        dict(capacity=10, num_envs=0, batch_size=2),
        dict(capacity=10, num_envs=2, batch_size=0),
        dict(capacity=10, num_envs=2, batch_size=2, window=0),
        dict(capacity=10.0, num_envs=2, batch_size=2),
    ],
)
def test_invalid_construction(kwargs):
    with pytest.raises(ValueError):
        make_uniform_replay(**kwargs)


def test_invalid_shapes():
    buffer = make_uniform_replay(8, 2, batch_size=2)  # L = 4
    with pytest.raises(ValueError):
        buffer.init({"x": np.zeros((3,))})  # wrong num_envs
    state = buffer.init({"x": np.zeros((2, 5))})
    for bad in (np.zeros((5, 2, 5)), np.zeros((2, 3, 5)), np.zeros((2, 2, 4))):
        with pytest.raises(ValueError):
            buffer.add(state, {"x": bad})  # T > L, wrong N, wrong trailing shape


def test_init_from_shape_dtype_structs():
    buffer = make_uniform_replay(8, 2, batch_size=2)
    example = jax.eval_shape(lambda: _example(2))
    state = buffer.init(example)
    assert state.data["step"].shape == (4, 2) and state.data["step"].dtype == jnp.int32
    assert state.data["flag"].dtype == jnp.bool_


def test_every_capacity_fits_in_rows():
    for capacity, num_envs, window in itertools.product([6, 7, 11], [1, 2, 3], [1, 2]):
        if capacity < num_envs * window:
            continue
        buffer = make_uniform_replay(capacity, num_envs, batch_size=1, window=window)
        assert buffer.init(_example(num_envs)).data["step"].shape[0] == capacity // num_envs
