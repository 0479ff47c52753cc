"""Compact replay (frames stored once) against brute-force Python references.

A synthetic vectorized environment with random episode ends (terminations and
truncations, episodes as short as one step) emits observations whose frames carry a
unique id (env, global step), stacked as the environment would stack them. The
references below work from that full per-env history, one item at a time, and never
look at the buffer's storage.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import ReplaySample
from jaxrl.buffers.compact import CompactReplayState, make_compact_replay
from jaxrl.ops import n_step_bootstrap
from jaxrl.types import Transition
from tests.helpers import bind_priority

FRAME = (2, 3)
EXTRAS = {"gid": ((), "int32"), "vec": ((2,), "float32")}


class _History:
    """``steps`` steps of ``num_envs`` envs; every array is ``[steps, num_envs, ...]``.

    ``stack = 0``: float vector observations ``[3]``, not stacked. Otherwise uint8
    frames ``FRAME`` whose pixels encode (step, env), never 0, stacked along
    ``stack_axis`` newest last, padded before an episode's first frame with zeros or
    with that first frame (``padding="repeat"``), as the environment would emit them.
    """

    def __init__(self, num_envs, steps, stack, seed, p_end=0.25, padding="zero", stack_axis=-1):
        rng = np.random.default_rng(seed)
        N = self.num_envs = num_envs
        self.steps, self.stack = steps, stack
        ended = rng.random((steps, N)) < p_end
        as_truncation = rng.random((steps, N)) < 0.5
        self.terminated = ended & ~as_truncation
        self.truncated = ended & as_truncation
        self.ended = ended
        self.action = rng.integers(0, 7, (steps, N)).astype(np.int32)
        self.reward = rng.normal(size=(steps, N)).astype(np.float32)
        self.gid = (np.arange(steps)[:, None] * N + np.arange(N)).astype(np.int32)
        self.vec = rng.normal(size=(steps, N, 2)).astype(np.float32)
        # ep_start[g, e]: the first step of the episode containing step g.
        self.ep_start = np.zeros((steps, N), np.int64)
        for g in range(1, steps):
            self.ep_start[g] = np.where(ended[g - 1], g, self.ep_start[g - 1])
        g = np.arange(steps)[:, None]
        e = np.arange(N)[None, :]
        if stack == 0:
            self.obs = np.stack([g + 0.5 * e, 1.0 + 0 * g * e, -g - e], -1).astype(np.float32)
            return
        frames = np.zeros((steps, N, *FRAME), np.uint8)
        frames[..., 0, 0] = 1 + g % 251
        frames[..., 0, 1] = 1 + (g // 251) % 251
        frames[..., 0, 2] = 1 + e
        frames[..., 1, :] = 1 + (7 * g[..., None] + 3 * e[..., None] + np.arange(3)) % 250
        self.frames = frames
        obs = np.zeros((steps, N, stack, *FRAME), np.uint8)
        for gg in range(steps):
            for ee in range(N):
                start = self.ep_start[gg, ee]
                for s in range(stack):
                    h = gg - stack + 1 + s
                    if h >= start:
                        obs[gg, ee, s] = frames[h, ee]
                    elif padding == "repeat":
                        obs[gg, ee, s] = frames[start, ee]
        axis = stack_axis % (len(FRAME) + 1)
        self.obs = np.moveaxis(obs, 2, 2 + axis)

    @property
    def obs_shape(self):
        return self.obs.shape[2:]

    def rollout(self, t0, T, seed=0):
        """Steps ``t0 .. t0+T-1`` as a Transition; ``next_obs`` is junk (not stored)."""
        sl = slice(t0, t0 + T)
        junk = np.random.default_rng(seed).integers(0, 255, self.obs[sl].shape)
        return Transition(
            obs=self.obs[sl],
            action=self.action[sl],
            reward=self.reward[sl],
            next_obs=junk.astype(self.obs.dtype),
            terminated=self.terminated[sl],
            truncated=self.truncated[sl],
            extras={"gid": self.gid[sl], "vec": self.vec[sl], "undeclared": self.reward[sl]},
        )


# ---------------------------------------------------------------- references


def _step_of(total, L, row):
    """The global step stored at ``row`` after ``total`` steps were added, or None."""
    lo = total - min(total, L)
    g = lo + (row - lo) % L
    return g if g < total else None


def _ref_valid(h, total, L, n, stack, g, e):
    """Validity of the item holding step ``g`` of env ``e``, straight from the rules."""
    lo = total - min(total, L)
    if g is None or g < lo or g + n > total - 1:  # rows g .. g+n stored, behind the head
        return False
    for k in range(n):  # first episode end in the window must not be a truncation
        if h.terminated[g + k, e]:
            break
        if h.truncated[g + k, e]:
            return False
    for k in range(1, max(stack, 1)):  # every frame the stack uses is stored
        if g - k >= lo and h.ended[g - k, e]:  # a *stored* episode end: not needed
            break
        if g - k < lo:
            return False
    return True


def _ref_valid_mask(h, total, L, n, stack):
    return np.array(
        [
            [_ref_valid(h, total, L, n, stack, _step_of(total, L, r), e) for e in range(h.num_envs)]
            for r in range(L)
        ]
    )


def _ref_window(h, g, e, n):
    """The n-step window starting at step ``g`` of env ``e``, as the env saw it."""
    next_obs = []
    for j in range(n):
        if h.ended[g + j, e]:
            next_obs.append(np.zeros_like(h.obs[0, 0]))  # true final obs is not stored
        else:
            next_obs.append(h.obs[g + j + 1, e])
    sl = slice(g, g + n)
    return {
        "obs": h.obs[sl, e],
        "next_obs": np.stack(next_obs),
        "action": h.action[sl, e],
        "reward": h.reward[sl, e],
        "terminated": h.terminated[sl, e],
        "truncated": h.truncated[sl, e],
        "gid": h.gid[sl, e],
        "vec": h.vec[sl, e],
    }


def _numpy(tree):
    return jax.tree.map(np.asarray, tree)


def _make(h, capacity, n, **kw):
    return make_compact_replay(
        capacity,
        h.num_envs,
        batch_size=kw.pop("batch_size", 64),
        obs_shape=h.obs_shape,
        obs_dtype=h.obs.dtype,
        window=n,
        stack=h.stack,
        extras=EXTRAS,
        **kw,
    )


def _leaves(state, L, N):
    return np.asarray(sum_tree.get(state.tree, jnp.arange(L * N))).reshape(L, N)


# ---------------------------------------------------------------- storage, gather, validity

CASES = [
    # capacity, num_envs, window, stack, chunk sizes T, p_end, padding, stack_axis
    (24, 2, 3, 4, [1, 5, 1, 1, 5, 2, 5, 1, 2, 5, 1, 2], 0.25, "zero", -1),  # L = 12
    (25, 3, 1, 4, [3, 8, 3, 1, 3, 8, 1, 3], 0.15, "zero", -1),  # L = 8, uneven division
    (20, 2, 2, 3, [10, 3, 10, 3, 10, 10], 0.35, "repeat", -1),  # T = L
    (33, 3, 2, 2, [2, 5, 2, 5, 5, 2, 5], 0.3, "zero", 0),  # channel-first stack
    (21, 1, 3, 4, [4, 9, 4, 9, 4, 1, 9], 0.2, "repeat", 0),  # one env
    (18, 3, 2, 0, [2, 6, 2, 6, 1, 2, 6], 0.3, "zero", -1),  # vector obs, not stacked
    (14, 2, 4, 1, [3, 7, 3, 3, 7, 7], 0.25, "zero", -1),  # stack of one frame
]


@pytest.mark.parametrize("capacity,N,n,stack,sizes,p_end,padding,stack_axis", CASES)
def test_storage_validity_and_gather_match_reference(
    capacity, N, n, stack, sizes, p_end, padding, stack_axis
):
    h = _History(N, sum(sizes), stack, capacity, p_end, padding, stack_axis)
    buffer = _make(h, capacity, n, stack_axis=stack_axis, stack_padding=padding)
    L = capacity // N
    state = jax.jit(buffer.init)()
    add, gather = jax.jit(buffer.add), jax.jit(buffer.gather)
    rows, envs = np.divmod(np.arange(L * N), N)
    total = 0
    saw_valid = saw_invalid_stored = 0
    for i, T in enumerate(sizes):
        state = add(state, h.rollout(total, T, seed=i))
        total += T
        assert int(state.position) == total % L and int(state.size) == min(total, L)
        # Stored fields, one row per step, flags kept apart.
        stored = _numpy(state)
        for r in range(L):
            g = _step_of(total, L, r)
            if g is None:
                continue
            np.testing.assert_array_equal(stored.terminated[r], h.terminated[g])
            np.testing.assert_array_equal(stored.truncated[r], h.truncated[g])
            np.testing.assert_array_equal(stored.action[r], h.action[g])
            np.testing.assert_array_equal(stored.reward[r], h.reward[g])
            np.testing.assert_array_equal(stored.extras["gid"][r], h.gid[g])
            np.testing.assert_array_equal(stored.extras["vec"][r], h.vec[g])
        assert "undeclared" not in state.extras
        # Validity, maintained incrementally, equals the brute-force rules everywhere.
        want = _ref_valid_mask(h, total, L, n, stack)
        np.testing.assert_array_equal(_leaves(state, L, N) > 0, want)
        assert int(buffer.num_items(state)) == want.sum()
        assert bool(buffer.can_sample(state)) == bool(want.any())
        np.testing.assert_array_equal(_leaves(state, L, N), want.astype(np.float32))
        saw_valid += want.sum()
        stored_rows = np.array([_step_of(total, L, r) is not None for r in range(L)])
        saw_invalid_stored += (stored_rows[:, None] & ~want).sum()
        # Gathered windows of every valid item equal what the environment emitted.
        out = _numpy(gather(state, rows, envs))
        assert out.obs.shape == (L * N, n, *h.obs_shape) and out.obs.dtype == h.obs.dtype
        assert out.next_obs.shape == out.obs.shape
        assert out.reward.shape == (L * N, n) and out.extras["vec"].shape == (L * N, n, 2)
        for b in np.flatnonzero(want.reshape(-1)):
            ref = _ref_window(h, _step_of(total, L, rows[b]), envs[b], n)
            for key in ("obs", "next_obs", "action", "reward", "terminated", "truncated"):
                np.testing.assert_array_equal(getattr(out, key)[b], ref[key], err_msg=key)
            for key in ("gid", "vec"):
                np.testing.assert_array_equal(out.extras[key][b], ref[key], err_msg=key)
    assert saw_valid > 0 and saw_invalid_stored > 0


def test_stack_padding_is_visible():
    """The synthetic env really pads, and episode starts inside stacks are common."""
    h = _History(2, 40, 4, seed=0, p_end=0.3)
    assert (h.obs[..., :3] == 0).any() and (h.obs[..., 3] != 0).all()
    r = _History(2, 40, 4, seed=0, p_end=0.3, padding="repeat")
    assert (r.obs != 0).all()


@pytest.mark.parametrize("n,stack", [(3, 4), (1, 2), (4, 0)])
def test_n_step_targets_never_bootstrap_from_a_missing_state(n, stack):
    N, capacity, gamma = 3, 3 * 15, 0.9
    h = _History(N, 60, stack, seed=n, p_end=0.3)
    buffer = _make(h, capacity, n)
    L = capacity // N
    state, add = buffer.init(), jax.jit(buffer.add)
    rows, envs = np.divmod(np.arange(L * N), N)

    @jax.jit
    def targets(state):
        out = buffer.gather(state, rows, envs)
        return out, n_step_bootstrap(out.reward, out.terminated, out.truncated, gamma)

    total, checked, cut = 0, 0, 0
    for T in [7, 5, 7, 7, 5, 5, 7, 5]:
        state = add(state, h.rollout(total, T))
        total += T
        out, target = _numpy(targets(state))
        boot = target.bootstrap_index
        for b in np.flatnonzero(_leaves(state, L, N) > 0):
            r, e = rows[b], envs[b]
            g = _step_of(total, L, r)
            # Brute force: walk the episode from g for at most n steps.
            ret, m, terminal = 0.0, 0, False
            while m < n:
                ret += gamma**m * h.reward[g + m, e]
                m += 1
                if h.ended[g + m - 1, e]:
                    assert h.terminated[g + m - 1, e]  # valid windows never end truncated
                    terminal = True
                    break
            cut += terminal
            np.testing.assert_allclose(target.reward_sum[b], ret, rtol=1e-5, atol=1e-6)
            want_discount = 0.0 if terminal else gamma**m
            np.testing.assert_allclose(target.bootstrap_discount[b], want_discount, rtol=1e-6)
            assert boot[b] == m - 1
            if not terminal:
                # The bootstrap observation is the true next state, in the same episode.
                assert h.ep_start[g + m, e] == h.ep_start[g, e]
                np.testing.assert_array_equal(out.next_obs[b, m - 1], h.obs[g + m, e])
            checked += 1
    assert checked > 50 and cut > 5


# ---------------------------------------------------------------- sampling


@pytest.mark.parametrize("sizes", [[6], [5, 7, 5, 7, 7, 5]])  # partially filled; wrapped
def test_uniform_sampling_covers_valid_items_only_and_evenly(sizes):
    N, capacity, n, B = 3, 36, 2, 3000
    h = _History(N, sum(sizes), 4, seed=len(sizes), p_end=0.3)
    buffer = _make(h, capacity, n, batch_size=B)
    L = capacity // N
    state, add = buffer.init(), jax.jit(buffer.add)
    total = 0
    for T in sizes:
        state = add(state, h.rollout(total, T))
        total += T
    want = _ref_valid_mask(h, total, L, n, 4).reshape(-1)
    M = want.sum()
    assert 0 < M < L * N
    out = jax.jit(buffer.sample)(state, jax.random.key(0))
    assert isinstance(out, ReplaySample)
    for x in (out.indices, out.time_index, out.env_index):
        assert x.dtype == jnp.int32 and x.shape == (B,)
    idx = np.asarray(out.indices)
    np.testing.assert_array_equal(idx, np.asarray(out.time_index) * N + np.asarray(out.env_index))
    assert want[idx].all()  # never an invalid item
    counts = np.bincount(idx, minlength=L * N)
    assert (counts[want] > 0).all()  # every valid item is drawn
    # Stratified draws of equal weights: each item B / M times, up to one slice each end.
    assert np.abs(counts[want] - B / M).max() <= 2
    np.testing.assert_allclose(out.probabilities, 1.0 / M, rtol=1e-6)
    # The experience is the gathered window of the drawn item.
    ref = jax.jit(buffer.gather)(state, out.time_index, out.env_index)
    for a, b in zip(jax.tree.leaves(out.experience), jax.tree.leaves(ref), strict=True):
        np.testing.assert_array_equal(a, b)
    assert out.experience.obs.shape == (B, n, *h.obs_shape)


def test_empty_buffer_cannot_sample():
    h = _History(2, 3, 4, seed=0)
    buffer = _make(h, 20, 2)
    state = buffer.init()
    assert not bool(buffer.can_sample(state)) and int(buffer.num_items(state)) == 0
    state = jax.jit(buffer.add)(state, h.rollout(0, 3))  # 3 rows: no window with stack 4 yet
    assert not bool(buffer.can_sample(state))
    out = jax.jit(buffer.sample)(state, jax.random.key(0))  # does not fail
    assert out.experience.obs.shape == (64, 2, *h.obs_shape)


# ---------------------------------------------------------------- prioritized


def test_prioritized_weights_follow_the_rules():
    N, capacity, n, alpha, eps = 2, 2 * 14, 2, 0.7, 0.01
    h = _History(N, 120, 3, seed=3, p_end=0.2)
    buffer = bind_priority(_make(h, capacity, n, mode="prioritized", batch_size=16), alpha, eps)
    L = capacity // N
    rng = np.random.default_rng(0)
    state = buffer.init()
    add, update = jax.jit(buffer.add), jax.jit(buffer.update_priorities)
    expected = np.zeros((L, N))  # reference leaves
    steps_before = np.full((L, N), None, dtype=object)
    max_p = 1.0
    total = 0
    for i, T in enumerate([5, 3, 6, 3, 5, 6, 6, 3, 5, 5, 6]):
        state = add(state, h.rollout(total, T))
        total += T
        valid = _ref_valid_mask(h, total, L, n, 3)
        steps = np.array([[_step_of(total, L, r)] * N for r in range(L)], dtype=object)
        for r in range(L):
            for e in range(N):
                keep = expected[r, e] > 0 and steps[r, e] == steps_before[r, e]
                if not valid[r, e]:
                    expected[r, e] = 0.0
                elif not keep:  # newly valid, or new data: the running max priority
                    expected[r, e] = max_p**alpha
        np.testing.assert_allclose(_leaves(state, L, N), expected, rtol=1e-5)
        assert int(buffer.num_items(state)) == valid.sum()
        # Set priorities of a random subset of all items (invalid ones included, with
        # duplicates: the last one wins).
        idx = rng.integers(0, L * N, 12)
        pri = rng.normal(size=12) * (3.0 if i % 3 == 0 else 0.5)
        state = update(state, idx, pri)
        for k, p in zip(idx, pri, strict=True):
            r, e = divmod(int(k), N)
            if valid[r, e]:
                expected[r, e] = (abs(p) + eps) ** alpha
                max_p = max(max_p, abs(p) + eps)
        np.testing.assert_allclose(_leaves(state, L, N), expected, rtol=1e-5)
        np.testing.assert_allclose(state.max_priority, max_p, rtol=1e-6)
        assert (_leaves(state, L, N)[~valid] == 0).all()  # never resurrected
        steps_before = steps
    assert max_p > 1.0


def test_update_priorities_changes_sampling_frequencies():
    N, capacity, n, B = 2, 2 * 16, 1, 4000
    h = _History(N, 40, 4, seed=5, p_end=0.15)
    buffer = bind_priority(_make(h, capacity, n, mode="prioritized", batch_size=B), 1.0, 0.0)
    L = capacity // N
    state, add = buffer.init(), jax.jit(buffer.add)
    for t0 in range(0, 40, 8):
        state = add(state, h.rollout(t0, 8))
    valid = (_leaves(state, L, N) > 0).reshape(-1)
    items = np.flatnonzero(valid)
    invalid = np.flatnonzero(~valid)
    assert len(items) > 10 and len(invalid) > 0
    pri = np.linspace(0.5, 5.0, len(items))
    update = jax.jit(buffer.update_priorities)
    state = update(state, items, pri)
    # Huge priorities for invalid items: ignored, they stay unsampleable.
    state = update(state, invalid, np.full(len(invalid), 1e6))
    assert float(state.max_priority) == pytest.approx(5.0)
    out = jax.jit(buffer.sample)(state, jax.random.key(1))
    idx = np.asarray(out.indices)
    assert valid[idx].all()
    counts = np.bincount(idx, minlength=L * N)[items]
    expected = B * pri / pri.sum()
    assert np.abs(counts - expected).max() <= 2  # stratified: within a slice each end
    want = pri[np.searchsorted(items, idx)] / pri.sum()
    np.testing.assert_allclose(out.probabilities, want, rtol=1e-5)
    assert counts[-1] > 5 * counts[0]


def test_zero_priority_keeps_an_item_valid_but_practically_never_drawn():
    N, L = 2, 10
    h = _History(N, 20, 2, seed=2, p_end=0.0)  # one long episode per env
    buffer = bind_priority(_make(h, N * L, 1, mode="prioritized", batch_size=256), 0.5, 0.0)
    state = jax.jit(buffer.add)(buffer.init(), h.rollout(0, 8))
    items = np.flatnonzero(_leaves(state, L, N) > 0)
    count = int(buffer.num_items(state))
    assert count == len(items) == 2 * 6  # rows 1..6: stack of 2, bootstrap row stored
    state = jax.jit(buffer.update_priorities)(state, items[:3], np.zeros(3))
    leaves = _leaves(state, L, N).reshape(-1)
    assert (leaves[items] > 0).all() and (leaves[items[:3]] < 1e-30).all()
    state = jax.jit(buffer.add)(state, h.rollout(8, 1))  # items kept, count unchanged + 2
    assert int(buffer.num_items(state)) == count + 2
    assert (_leaves(state, L, N).reshape(-1)[items[:3]] < 1e-30).all()
    out = jax.jit(buffer.sample)(state, jax.random.key(0))
    assert not np.isin(np.asarray(out.indices), items[:3]).any()


def test_uniform_mode_ignores_update_priorities():
    h = _History(2, 20, 2, seed=1)
    buffer = _make(h, 20, 1)
    state = jax.jit(buffer.add)(buffer.init(), h.rollout(0, 10))
    new = buffer.update_priorities(state, jnp.arange(4), jnp.full(4, 7.0))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(new), strict=True):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- jit, scan, vmap


def _assert_trees_equal(a, b, index=None):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y if index is None else np.asarray(y)[index])


def test_inside_scan_matches_sequential():
    N, T, chunks = 2, 3, 7
    h = _History(N, T * chunks, 2, seed=7, p_end=0.3)
    buffer = bind_priority(_make(h, 2 * 8, 2, mode="prioritized", batch_size=8))
    rollouts = [h.rollout(T * i, T) for i in range(chunks)]
    stacked = jax.tree.map(lambda *x: np.stack(x), *rollouts)
    keys = jax.random.split(jax.random.key(1), chunks)

    def body(state, inp):
        rollout, key = inp
        state = buffer.add(state, rollout)
        out = buffer.sample(state, key)
        state = buffer.update_priorities(state, out.indices, out.experience.reward[:, 0])
        return state, out

    init = buffer.init()
    final, outs = jax.jit(lambda s: jax.lax.scan(body, s, (stacked, keys)))(init)
    state, step = init, jax.jit(body)
    for i in range(chunks):
        state, out = step(state, (rollouts[i], keys[i]))
        _assert_trees_equal(out, outs, i)
    _assert_trees_equal(state, final)
    assert isinstance(final, CompactReplayState)


def test_vmap_over_buffer_states():
    N, K = 2, 3
    h = _History(N, 40, 3, seed=11, p_end=0.25)
    buffer = bind_priority(_make(h, 2 * 9, 2, mode="prioritized", batch_size=8))
    add = jax.jit(buffer.add)
    members = []
    for k in range(K):  # members holding different amounts of data
        state = buffer.init()
        for i in range(k + 2):
            state = add(state, h.rollout(4 * i + k, 4))
        members.append(state)
    states = jax.tree.map(lambda *x: jnp.stack(x), *members)
    rollouts = [h.rollout(20 + 5 * k, 5) for k in range(K)]
    stacked = jax.tree.map(lambda *x: np.stack(x), *rollouts)
    keys = jax.random.split(jax.random.key(2), K)
    new = jax.jit(jax.vmap(buffer.add))(states, stacked)
    out = jax.jit(jax.vmap(buffer.sample))(new, keys)
    sample = jax.jit(buffer.sample)
    for k in range(K):
        ref = add(members[k], rollouts[k])
        _assert_trees_equal(ref, new, k)
        _assert_trees_equal(sample(ref, keys[k]), out, k)


# ---------------------------------------------------------------- memory, arguments


@pytest.mark.parametrize("mode", ["uniform", "prioritized"])
def test_add_and_update_priorities_work_in_place(mode):
    """No op of the compiled programs copies a capacity-sized array (e.g. the tree)."""

    N, T, capacity = 4, 3, 4 * 50_000
    buffer = bind_priority(
        make_compact_replay(capacity, N, 8, (2, 2, 4), "uint8", window=3, mode=mode)
    )
    state = jax.eval_shape(buffer.init)
    rollout = Transition(
        obs=jax.ShapeDtypeStruct((T, N, 2, 2, 4), jnp.uint8),
        action=jax.ShapeDtypeStruct((T, N), jnp.int32),
        reward=jax.ShapeDtypeStruct((T, N), jnp.float32),
        next_obs=None,
        terminated=jax.ShapeDtypeStruct((T, N), bool),
        truncated=jax.ShapeDtypeStruct((T, N), bool),
        extras={},
    )
    idx, pri = jax.ShapeDtypeStruct((8,), jnp.int32), jax.ShapeDtypeStruct((8,), jnp.float32)
    for fn, args in [(buffer.add, (state, rollout)), (buffer.update_priorities, (state, idx, pri))]:
        hlo = jax.jit(fn, donate_argnums=0).lower(*args).compile().as_text()
        copies = [
            line
            for line in hlo.splitlines()
            if re.search(r"= \w+\[(\d+)[,\]].* copy\(", line)
            and int(re.search(r"= \w+\[(\d+)", line).group(1)) >= capacity // N
        ]
        assert not copies, copies


def test_one_million_atari_transitions_fit_in_7_5_gb():
    capacity, frame, stack = 1_000_000, (84, 84), 4
    for num_envs in (1, 8):
        buffer = make_compact_replay(
            capacity, num_envs, 32, (*frame, stack), "uint8", window=3, stack=stack
        )
        shapes = jax.eval_shape(buffer.init)  # nothing is allocated
        nbytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))
        assert nbytes <= 7.5e9, nbytes
        assert shapes.frames.shape == (capacity // num_envs, num_envs, *frame)
    # The naive layout keeps stacked obs and next_obs for every transition.
    naive = capacity * 2 * stack * frame[0] * frame[1]
    assert naive == pytest.approx(56e9, rel=0.01)
    assert nbytes < naive / 7.5


def test_extras_in_rlhive_order_and_bad_arguments():
    buffer = make_compact_replay(
        20, 2, 4, (3,), "float32", stack=0, extras={"logp": ("float32", ()), "h": ((4,), "int8")}
    )
    state = buffer.init()
    assert state.extras["logp"].shape == (10, 2) and state.extras["logp"].dtype == jnp.float32
    assert state.extras["h"].shape == (10, 2, 4) and state.extras["h"].dtype == jnp.int8
    ok = dict(capacity=20, num_envs=2, batch_size=4, obs_shape=(4, 4, 4))
    for bad, match in [
        (dict(obs_shape=(4, 4, 3)), "stack"),
        (dict(capacity=9), "rows"),
        (dict(mode="rank"), "mode"),
        (dict(stack_padding="edge"), "stack_padding"),
        (dict(window=0), "window"),
        (dict(extras={"x": 3}), "extras"),
        (dict(branching=3), "branching"),
    ]:
        with pytest.raises(ValueError, match=match):
            make_compact_replay(**{**ok, **bad})
    buffer = make_compact_replay(**ok)
    rollout = Transition(
        obs=np.zeros((3, 2, 4, 4, 4), np.uint8),
        action=np.zeros((3, 2), np.int32),
        reward=np.zeros((3, 2), np.float32),
        next_obs=None,
        terminated=np.zeros((3, 2), bool),
        truncated=np.zeros((3, 2), bool),
        extras={},
    )
    jax.eval_shape(buffer.add, buffer.init(), rollout)
    with pytest.raises(ValueError, match="action"):
        jax.eval_shape(buffer.add, buffer.init(), rollout._replace(action=np.zeros((3, 3))))
    with pytest.raises(ValueError, match="example.obs"):
        buffer.init(rollout._replace(obs=np.zeros((2, 4, 4, 3))))
    buffer.init(jax.tree.map(lambda x: x[0], rollout))
    extra = make_compact_replay(**ok, extras={"v": ((), "float32")})
    with pytest.raises(ValueError, match="lacks declared extras"):
        jax.eval_shape(extra.add, extra.init(), rollout)
