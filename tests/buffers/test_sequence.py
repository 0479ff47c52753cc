"""Sequence replay (R2D2) against a slow NumPy record of every step ever added."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import PriorityParams
from jaxrl.buffers.sequence import make_sequence_replay
from jaxrl.ops import sequence_priority

N, L, PERIOD, LENGTH, T, B = 2, 12, 3, 5, 4, 16
WINDOW = LENGTH + 1
KNOBS = PriorityParams(alpha=0.6, eps=1e-3)


def reference_starts(total: int) -> list[int]:
    """Env steps ``g`` that start a sequence still wholly stored after ``total`` steps."""
    return [g for g in range(max(0, total - L), total - WINDOW + 1) if g % PERIOD == 0]


def step_value(g: int, e: int) -> float:
    return 10.0 * g + e


@pytest.fixture(scope="module")
def run():
    buffer = make_sequence_replay(L * N, N, B, LENGTH, PERIOD)
    add = jax.jit(lambda s, b: buffer.add(s, b, KNOBS))
    state = buffer.init({"x": jnp.zeros((N,)), "carry": jnp.zeros((N, 3))})
    return buffer, add, state


def test_valid_starts_overlap_and_wrap_match_the_reference(run):
    buffer, add, state = run
    sample = jax.jit(buffer.sample)
    for k in range(7):  # 28 steps through a ring of 12 rows: it wraps twice
        g = np.arange(k * T, (k + 1) * T)
        x = step_value(g[:, None], np.arange(N)[None])
        carry = np.repeat(x[..., None], 3, -1) + 0.5
        state = add(state, {"x": jnp.asarray(x), "carry": jnp.asarray(carry)})
        total = (k + 1) * T
        starts = reference_starts(total)
        items = {(g0 % L) // PERIOD * N + e for g0 in starts for e in range(N)}
        leaves = np.asarray(sum_tree.levels(state.tree)[0])[: (L // PERIOD) * N]
        assert {int(i) for i in np.flatnonzero(leaves)} == items
        assert int(buffer.num_items(state)) == len(items)
        assert bool(buffer.can_sample(state)) == bool(items)
        if not items:
            continue
        s = sample(state, jax.random.key(k))
        for b in range(B):
            row, e = int(s.time_index[b]), int(s.env_index[b])
            (g0,) = [g for g in starts if g % L == row]  # the step that row holds
            want = [step_value(g, e) for g in range(g0, g0 + WINDOW)]
            np.testing.assert_array_equal(np.asarray(s.experience["x"][b]), want)
            # the stored carry at the sequence's start: its first row's
            np.testing.assert_array_equal(np.asarray(s.experience["carry"][b, 0]), want[0] + 0.5)
            np.testing.assert_allclose(
                float(s.probabilities[b]), leaves[int(s.indices[b])] / leaves.sum(), rtol=1e-5
            )
    # overlap: starts PERIOD apart share LENGTH + 1 - PERIOD rows
    both = buffer.gather(state, jnp.array([0, PERIOD]), jnp.array([1, 1]))["x"]
    np.testing.assert_array_equal(both[0, PERIOD:], both[1, : WINDOW - PERIOD])


def test_priority_mix_written_back_matches_the_reference(run):
    buffer, add, state = run
    for k in range(4):
        g = np.arange(k * T, (k + 1) * T)
        x = jnp.asarray(step_value(g[:, None], np.arange(N)[None]), jnp.float32)
        state = add(state, {"x": x, "carry": jnp.zeros((T, N, 3))})
    s = jax.jit(buffer.sample)(state, jax.random.key(0))
    rng = np.random.default_rng(0)
    td = rng.normal(size=(B, LENGTH)).astype(np.float32)
    mask = rng.random((B, LENGTH)) < 0.7
    mask[:, 0] = True
    want = np.array(
        [
            0.9 * np.abs(t[m]).max() + 0.1 * np.abs(t[m]).mean()
            for t, m in zip(td, mask, strict=True)
        ]
    )
    priority = sequence_priority(td, mask, 0.9)
    np.testing.assert_allclose(np.asarray(priority), want, rtol=1e-6)
    update = jax.jit(lambda s, i, p: buffer.update_priorities(s, i, p, KNOBS))
    new = update(state, s.indices, priority)
    last = {int(i): p for i, p in zip(np.asarray(s.indices), want, strict=True)}  # last write wins
    leaves = np.asarray(sum_tree.levels(new.tree)[0])
    for i, p in last.items():
        np.testing.assert_allclose(leaves[i], (p + 1e-3) ** 0.6, rtol=1e-5)
    np.testing.assert_allclose(
        float(new.max_priority), max(1.0, max(last.values()) + 1e-3), rtol=1e-6
    )
    # an invalid start (the newest rows) is never written
    newest = (4 * T - 1) % L // PERIOD * N
    stale = update(new, jnp.full((B,), newest), jnp.full((B,), 5.0))
    assert float(sum_tree.get(stale.tree, newest)) == 0.0


@pytest.mark.parametrize(
    "kwargs", [dict(period=6), dict(period=0), dict(capacity=N * 13), dict(capacity=N * 5)]
)
def test_bad_sizes_are_refused(kwargs):
    args = dict(capacity=L * N, num_envs=N, batch_size=B, length=LENGTH, period=PERIOD)
    with pytest.raises(ValueError, match="sequence replay needs|period must be"):
        make_sequence_replay(**{**args, **kwargs})
