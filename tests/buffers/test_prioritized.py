"""Prioritized replay against a NumPy reference of the ring, validity and priorities."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import ReplaySample
from jaxrl.buffers.prioritized import PrioritizedReplayState, make_prioritized_replay
from tests.helpers import bind_priority


class _Ref:
    """Rows written one at a time; per-item weights kept by the rules of the docstring."""

    def __init__(self, capacity, num_envs, window, alpha, eps):
        self.L, self.N, self.W = capacity // num_envs, num_envs, window
        self.alpha, self.eps = np.float32(alpha), np.float32(eps)
        self.t = np.full((self.L, self.N), -1, np.int64)
        self.position = self.size = 0
        self.weight = np.zeros(self.L * self.N, np.float32)
        self.max_priority = np.float32(1.0)

    def valid_items(self):
        row = np.arange(self.L * self.N) // self.N
        d = (self.position - row) % self.L
        d = np.where(d == 0, self.L, d)
        return (d >= self.W) & (d <= self.size)

    def add(self, t):  # t: [T, N] global step ids
        before = self.valid_items()
        overwritten = np.zeros(self.L * self.N, bool)
        for row in t:
            self.t[self.position] = row
            overwritten[self.position * self.N : (self.position + 1) * self.N] = True
            self.position = (self.position + 1) % self.L
            self.size = min(self.size + 1, self.L)
        after = self.valid_items()
        fresh = after & (~before | overwritten)
        self.weight[fresh] = self.max_priority**self.alpha
        self.weight[~after] = 0

    def update(self, indices, priorities):
        valid = self.valid_items()
        last = {}
        for i, p in zip(indices, priorities, strict=True):
            if 0 <= i < self.L * self.N and valid[i]:
                last[int(i)] = np.float32(abs(p)) + self.eps
        for i, p in last.items():
            self.weight[i] = p**self.alpha
            self.max_priority = max(self.max_priority, p)


def _example(num_envs):
    return {"t": np.zeros((num_envs,), np.int32), "obs": np.zeros((num_envs, 2), np.float32)}


def _steps(t0, T, num_envs):
    t = (np.arange(t0, t0 + T)[:, None] * num_envs + np.arange(num_envs)).astype(np.int32)
    return {"t": t, "obs": np.stack([t, -t], -1).astype(np.float32)}


def _check(buffer, state, ref):
    leaves = np.asarray(sum_tree.get(state.tree, np.arange(ref.L * ref.N)))
    np.testing.assert_array_equal(leaves == 0, ref.weight == 0)
    np.testing.assert_allclose(leaves, ref.weight, rtol=2e-6)
    np.testing.assert_allclose(state.max_priority, ref.max_priority, rtol=1e-7)
    assert int(buffer.num_items(state)) == ref.valid_items().sum()
    assert bool(buffer.can_sample(state)) == (ref.size >= ref.W)
    np.testing.assert_array_equal(state.storage.data["t"], ref.t.clip(0))


def _check_sample(sample, ref, total_steps):
    t = np.asarray(sample.experience["t"])  # [B, W]
    B, W = t.shape
    assert W == ref.W and sample.indices.dtype == jnp.int32
    assert sample.probabilities.dtype == jnp.float32
    env = t % ref.N
    step = t // ref.N
    # Consecutive steps of one env, in order, all still stored, none past the head.
    np.testing.assert_array_equal(step, step[:, :1] + np.arange(W))
    np.testing.assert_array_equal(env, np.broadcast_to(sample.env_index[:, None], (B, W)))
    assert (step[:, -1] < total_steps).all() and (step[:, 0] >= total_steps - ref.size).all()
    np.testing.assert_array_equal(sample.time_index, step[:, 0] % ref.L)
    np.testing.assert_array_equal(sample.indices, sample.time_index * ref.N + sample.env_index)
    assert ref.valid_items()[np.asarray(sample.indices)].all()
    assert (ref.weight[np.asarray(sample.indices)] > 0).all()
    np.testing.assert_allclose(
        sample.probabilities, ref.weight[np.asarray(sample.indices)] / ref.weight.sum(), rtol=1e-5
    )
    np.testing.assert_array_equal(sample.experience["obs"][..., 0], t)


@pytest.mark.parametrize(
    "capacity,num_envs,window,sizes",
    [
        (23, 2, 3, [1, 4, 1, 11, 4, 1, 1, 4, 4, 11, 1]),  # L = 11, T = L included
        (40, 4, 1, [4, 1, 10, 4, 4, 1, 10]),  # L = 10, one-step items
        (12, 1, 5, [1, 4, 12, 1, 4, 4, 1, 1]),  # L = 12, long windows
    ],
)
def test_matches_reference_through_adds_updates_and_wraparound(capacity, num_envs, window, sizes):
    alpha, eps = 0.7, 0.01
    buffer = bind_priority(make_prioritized_replay(capacity, num_envs, 64, window), alpha, eps)
    ref = _Ref(capacity, num_envs, window, alpha, eps)
    state = buffer.init(_example(num_envs))
    assert isinstance(state, PrioritizedReplayState)
    assert state.max_priority.dtype == jnp.float32 and float(state.max_priority) == 1.0
    add, sample = jax.jit(buffer.add), jax.jit(buffer.sample)
    update = jax.jit(buffer.update_priorities)
    rng = np.random.default_rng(capacity)
    _check(buffer, state, ref)
    t0 = 0
    for i, T in enumerate(sizes):
        batch = _steps(t0, T, num_envs)
        state = add(state, batch)
        ref.add(batch["t"])
        t0 += T
        _check(buffer, state, ref)
        if ref.size >= window:
            for k in range(2):
                s = sample(state, jax.random.key(10 * i + k))
                assert isinstance(s, ReplaySample)
                _check_sample(s, ref, t0)
            # New priorities for the sample, plus duplicates, invalid and out-of-range
            # items: the invalid ones must stay at 0.
            indices = np.concatenate(
                [np.asarray(s.indices)[:10], rng.integers(-2, ref.L * ref.N + 2, size=6)]
            ).astype(np.int32)
            indices[1] = indices[0]
            priorities = rng.normal(size=16).astype(np.float32) * (3.0 if i % 3 else 0.1)
            state = update(state, indices, priorities)
            ref.update(indices, priorities)
            _check(buffer, state, ref)


def test_new_items_enter_at_the_running_max_priority():
    buffer = bind_priority(make_prioritized_replay(16, 1, 8, window=2), 0.5, 0.0)
    state = jax.jit(buffer.add)(buffer.init(_example(1)), _steps(0, 6, 1))
    leaves = lambda s: np.asarray(sum_tree.get(s.tree, np.arange(16)))  # noqa: E731
    # Starts 0..4 have complete windows; 5 waits for the next row; 6.. are unwritten.
    np.testing.assert_array_equal(leaves(state), [1.0] * 5 + [0.0] * 11)
    update = jax.jit(buffer.update_priorities)
    state = update(state, np.array([2, 3], np.int32), np.array([9.0, -4.0], np.float32))
    np.testing.assert_allclose(leaves(state)[:5], [1, 1, 3, 2, 1])  # (|p| + 0) ** 0.5
    assert float(state.max_priority) == 9.0
    state = jax.jit(buffer.add)(state, _steps(6, 3, 1))
    # 5, 6, 7 became valid and enter at max_priority ** alpha = 3; 8 waits.
    np.testing.assert_allclose(leaves(state)[:9], [1, 1, 3, 2, 1, 3, 3, 3, 0])
    # A smaller write does not lower the running maximum.
    state = update(state, np.array([0, 0], np.int32), np.array([1.0, 1.0], np.float32))
    assert float(state.max_priority) == 9.0


def test_duplicate_indices_last_write_wins():
    buffer = bind_priority(make_prioritized_replay(16, 1, 8, window=1), 1.0, 0.0)
    state = jax.jit(buffer.add)(buffer.init(_example(1)), _steps(0, 10, 1))
    indices = np.array([3, 4, 3, 5, 3, 4], np.int32)
    priorities = np.array([100.0, 7.0, 50.0, 2.0, 0.5, 0.25], np.float32)
    state = jax.jit(buffer.update_priorities)(state, indices, priorities)
    got = np.asarray(sum_tree.get(state.tree, np.arange(10)))
    np.testing.assert_array_equal(got, [1, 1, 1, 0.5, 0.25, 2, 1, 1, 1, 1])
    # Overridden writes never happened: the running max counts only the last ones.
    assert float(state.max_priority) == 2.0


def test_update_priorities_cannot_resurrect_invalid_items():
    buffer = bind_priority(make_prioritized_replay(10, 1, 4, window=3), 1.0, 0.1)
    add = jax.jit(buffer.add)
    state = add(add(buffer.init(_example(1)), _steps(0, 8, 1)), _steps(8, 4, 1))  # wrapped
    # position = 2: rows 0 and 1 (the newest two) cannot start a window of 3.
    invalid = np.array([0, 1, 1, 0], np.int32)
    state = jax.jit(buffer.update_priorities)(state, invalid, np.full(4, 1e3, np.float32))
    got = np.asarray(sum_tree.get(state.tree, np.arange(10)))
    np.testing.assert_array_equal(got[[0, 1]], [0, 0])
    assert float(state.max_priority) == 1.0 and (got[2:] == 1.0).all()


def test_priorities_set_sampling_frequencies():
    capacity, num_envs, batch, keys = 64, 4, 32, 1500
    buffer = bind_priority(make_prioritized_replay(capacity, num_envs, batch, window=2), 1.0, 0.0)
    state = jax.jit(buffer.add)(buffer.init(_example(num_envs)), _steps(0, 16, num_envs))
    ref = _Ref(capacity, num_envs, 2, 1.0, 0.0)
    ref.add(_steps(0, 16, num_envs)["t"])
    rng = np.random.default_rng(0)
    items = np.arange(capacity, dtype=np.int32)
    priorities = rng.exponential(size=capacity).astype(np.float32)
    priorities[5] = 40.0  # one item much more likely
    priorities[rng.uniform(size=capacity) < 0.2] = 0.0  # eps = 0: never drawn
    state = jax.jit(buffer.update_priorities)(state, items, priorities)
    ref.update(items, priorities)
    sample = jax.jit(jax.vmap(buffer.sample, in_axes=(None, 0)))(
        state, jax.random.split(jax.random.key(1), keys)
    )
    drawn = np.asarray(sample.indices).reshape(-1)
    counts = np.bincount(drawn, minlength=capacity)
    w = ref.weight.astype(np.float64)
    assert counts[w == 0].sum() == 0 and counts[5] > 0.2 * len(drawn)
    expected = len(drawn) * w[w > 0] / w.sum()
    chi2 = np.sum((counts[w > 0] - expected) ** 2 / expected)
    df = (w > 0).sum() - 1
    # Wilson-Hilferty 0.999 quantile of chi-square(df); stratified draws have less
    # variance than multinomial ones, so the bound is conservative.
    assert chi2 < df * (1 - 2 / (9 * df) + 3.0902 * math.sqrt(2 / (9 * df))) ** 3, chi2


def _train_like(buffer, num_envs, key, steps=40):
    """add one step, sample, write back priorities: inside one lax.scan."""

    def body(state, xs):
        i, key = xs
        t = (i * num_envs + jnp.arange(num_envs)).astype(jnp.int32)
        batch = {"t": t[None], "obs": jnp.stack([t, -t], -1).astype(jnp.float32)[None]}
        state = buffer.add(state, batch)
        sample = buffer.sample(state, key)
        td = jnp.sin(sample.experience["obs"][:, 0, 0]) * (i % 5)
        new = buffer.update_priorities(state, sample.indices, td)
        state = jax.tree.map(lambda a, b: jnp.where(buffer.can_sample(state), a, b), new, state)
        return state, (sample.indices, sample.probabilities, sample.experience["t"])

    xs = (jnp.arange(steps), jax.random.split(key, steps))
    return jax.lax.scan(body, buffer.init(_example(num_envs)), xs)


def test_jit_scan_and_vmap_over_seeds():
    num_envs, window = 3, 2
    buffer = bind_priority(make_prioritized_replay(30, num_envs, 8, window=window), 0.6)
    keys = jax.random.split(jax.random.key(2), 2)
    run = jax.jit(lambda k: _train_like(buffer, num_envs, k))
    states, outs = jax.jit(jax.vmap(lambda k: _train_like(buffer, num_envs, k)))(keys)
    assert states.tree.nodes.shape[0] == 2 and states.max_priority.shape == (2,)
    for s in range(2):
        state, out = run(keys[s])
        for got, want in zip(
            jax.tree.leaves((states, outs)), jax.tree.leaves((state, out)), strict=True
        ):
            np.testing.assert_array_equal(got[s], want)
        # Every window sampled once the buffer could sample was consecutive and complete.
        t = np.asarray(out[2])[window - 1 :]
        np.testing.assert_array_equal(t[..., 1] - t[..., 0], num_envs)
        assert (t // num_envs <= np.arange(window - 1, 40)[:, None, None]).all()
        assert float(state.max_priority) > 1.0  # priorities were written back


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        make_prioritized_replay(10, 2, 4, window=6)  # capacity < num_envs * window
    with pytest.raises(ValueError):
        make_prioritized_replay(10, 2, 4, branching=3)
    unbound = make_prioritized_replay(10, 2, 4)
    state = unbound.init(_example(2))
    with pytest.raises(ValueError, match="PriorityParams"):
        unbound.update_priorities(state, np.zeros(4, np.int32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="PriorityParams"):
        jax.eval_shape(unbound.add, state, _steps(0, 2, 2))
    buffer = bind_priority(unbound)
    with pytest.raises(ValueError):
        buffer.update_priorities(state, np.zeros(3, np.int32), np.zeros(4, np.float32))
