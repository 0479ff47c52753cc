"""The one replay-buffer protocol: validity rules against NumPy references (no buffer
built), the shared sample type, and pytree observations with an action mask through
every buffer (uniform, prioritized, compact)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import (
    PriorityParams,
    ReplayBuffer,
    ReplaySample,
    compact_valid,
    make_compact_replay,
    make_prioritized_replay,
    make_uniform_replay,
    window_valid,
)
from jaxrl.types import Transition

PRIORITY = PriorityParams(jnp.float32(0.5), jnp.float32(1e-6))


def _window_valid_ref(position, size, L, window):
    oldest = (position - size) % L
    valid = np.zeros(L, bool)
    for offset in range(size - window + 1):  # starts whose window ends before the head
        valid[(oldest + offset) % L] = True
    return valid


@pytest.mark.parametrize("L, window", [(5, 1), (6, 3), (4, 4)])
def test_window_valid_matches_reference(L, window):
    rows = jnp.arange(L, dtype=jnp.int32)
    for size in range(L + 1):
        for position in range(L) if size == L else [size % L]:
            got = np.asarray(window_valid(jnp.int32(position), jnp.int32(size), rows, L, window))
            np.testing.assert_array_equal(got, _window_valid_ref(position, size, L, window))


def _compact_valid_ref(term, trunc, position, size, n, stack):
    L, N = term.shape
    S = max(stack, 1)
    oldest = (position - size) % L
    ended = term | trunc
    out = np.zeros((L, N), bool)
    for t in range(L):
        offset = (t - oldest) % L
        for e in range(N):
            ok = offset + n <= size - 1  # window and bootstrap row stored behind the head
            for k in range(n):  # the first episode end must not be a truncation
                r = (t + k) % L
                if ended[r, e]:
                    ok &= bool(term[r, e])
                    break
            for k in range(1, S):  # the stack's frames back to the episode start stored
                if k > offset:
                    ok = False
                    break
                if ended[(t - k) % L, e]:
                    break
            out[t, e] = ok
    return out


@pytest.mark.parametrize("n, stack", [(1, 0), (3, 0), (1, 4), (2, 3)])
def test_compact_valid_matches_reference(n, stack):
    rng = np.random.default_rng(n * 10 + stack)
    L, N = 9, 3
    rows = jnp.arange(L, dtype=jnp.int32)
    checked_valid = 0
    valid = jax.jit(compact_valid, static_argnums=(5, 6))
    for trial in range(12):
        ended = rng.random((L, N)) < 0.3
        term = ended & (rng.random((L, N)) < 0.5)
        trunc = ended & ~term
        size = int(rng.integers(0, L + 1))
        position = int(rng.integers(0, L)) if size == L else size
        got = valid(
            jnp.asarray(term), jnp.asarray(trunc), jnp.int32(position), jnp.int32(size), rows,
            n, stack,
        )  # fmt: skip
        ref = _compact_valid_ref(term, trunc, position, size, n, stack)
        np.testing.assert_array_equal(np.asarray(got), ref, err_msg=f"trial {trial}")
        checked_valid += ref.sum()
    assert checked_valid > 0  # the reference is not trivially all-invalid


# ---------------------------------------------------------------- pytree observations

N, T, A, STACK, FRAME = 2, 7, 3, 2, (2, 2)


def _dict_rollout(stacked: bool) -> Transition:
    """``T`` steps of ``N`` envs of dict observations {"obs", "action_mask"}; no episode
    ends, the main obs of step ``t`` is the stack of frames ``t-S+1 .. t`` (frame value =
    step id), so compact storage can rebuild it."""
    rng = np.random.default_rng(0)
    g = np.arange(T + 1)[:, None] * N + np.arange(N)  # [T+1, N] step ids
    if stacked:  # frame of step t = its id + 1; stacks zero-padded before step 0
        k = np.arange(STACK - 1, -1, -1)  # frames t-S+1 .. t, newest last
        frames = np.where(np.arange(T + 1)[:, None, None] >= k, g[..., None] - k * N + 1, 0)
        main = np.broadcast_to(frames[:, :, None, None, :], (T + 1, N, *FRAME, STACK))
        main = main.astype(np.uint8)
    else:
        main = rng.normal(size=(T + 1, N, 3)).astype(np.float32)
    mask = rng.random((T + 1, N, A)) < 0.5
    mask[..., 0] = True
    obs = {"obs": main, "action_mask": mask}
    return Transition(
        obs=jax.tree.map(lambda x: jnp.asarray(x[:T]), obs),
        action=jnp.asarray(rng.integers(0, A, (T, N)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(T, N)), jnp.float32),
        next_obs=jax.tree.map(lambda x: jnp.asarray(x[1:]), obs),
        terminated=jnp.zeros((T, N), bool),
        truncated=jnp.zeros((T, N), bool),
        extras={},
    )


def _buffers():
    mask_spec = {"action_mask": ((A,), "bool")}
    return {
        "uniform": (make_uniform_replay(64, N, 8, window=2), False),
        "prioritized": (make_prioritized_replay(64, N, 8, window=2), False),
        "compact": (
            make_compact_replay(
                64,
                N,
                8,
                (*FRAME, STACK),
                "uint8",
                window=2,
                stack=STACK,
                mode="prioritized",
                obs_extras=mask_spec,
            ),
            True,
        ),  # fmt: skip
        "compact_flat": (
            make_compact_replay(64, N, 8, (3,), "float32", window=2, stack=0, obs_extras=mask_spec),
            False,
        ),
    }


@pytest.mark.parametrize("name", ["uniform", "prioritized", "compact", "compact_flat"])
def test_dict_observation_with_action_mask_comes_back_equal(name):
    buffer, stacked = _buffers()[name]
    assert isinstance(buffer, ReplayBuffer)
    rollout = _dict_rollout(stacked)
    state = buffer.init(jax.tree.map(lambda x: x[0], rollout))
    state = jax.jit(buffer.add)(state, rollout, PRIORITY)
    sample = jax.jit(buffer.sample)(state, jax.random.key(1))
    assert isinstance(sample, ReplaySample)
    assert int(buffer.num_items(state)) > 0
    exp = sample.experience
    assert set(exp.obs) == {"obs", "action_mask"} and exp.obs["action_mask"].dtype == jnp.bool_
    t = np.asarray(sample.time_index)[:, None] + np.arange(2)  # no wrap: 7 rows < L
    e = np.asarray(sample.env_index)[:, None]
    for key in ("obs", "action_mask"):
        np.testing.assert_array_equal(exp.obs[key], np.asarray(rollout.obs[key])[t, e])
        # next_obs of a step that did not end is the next row's observation.
        np.testing.assert_array_equal(exp.next_obs[key], np.asarray(rollout.next_obs[key])[t, e])
    np.testing.assert_array_equal(exp.action, np.asarray(rollout.action)[t, e])
    np.testing.assert_array_equal(
        sample.indices, np.asarray(sample.time_index) * N + np.asarray(sample.env_index)
    )
    # Priority updates keep the tree consistent; a uniform buffer ignores them.
    new = buffer.update_priorities(state, sample.indices, jnp.ones(8) * 5.0, PRIORITY)
    if name in ("uniform", "compact_flat"):
        assert new is state


def test_uniform_reports_equal_probabilities():
    buffer = make_uniform_replay(40, 2, 16, window=3)
    rollout = _dict_rollout(False)

    def fill_and_sample(key):  # one program, not one per op
        state = buffer.add(buffer.init(jax.tree.map(lambda x: x[0], rollout)), rollout)
        sample = buffer.sample(state, key)
        valid = window_valid(state.position, state.size, sample.time_index, 20, 3)
        return buffer.num_items(state), sample.probabilities, valid

    num_items, probabilities, valid = jax.jit(fill_and_sample)(jax.random.key(0))
    assert int(num_items) == 2 * (T - 3 + 1)
    np.testing.assert_allclose(probabilities, 1.0 / (2 * (T - 3 + 1)), rtol=1e-6)
    assert bool(np.all(valid))
