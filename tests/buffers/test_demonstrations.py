"""Demonstration files (save, load, the checks against an env's spec), replay of
dictionary observations, reading a replay ring's valid transitions in order, and mixing
exactly ``round(demo_ratio * B)`` demonstrations into each batch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents.auxiliary import base as auxiliary
from jaxrl.buffers import make_uniform_replay
from jaxrl.buffers.demonstrations import (
    demo_count,
    is_demo,
    load_npz,
    mix_batch,
    replay_transitions,
    sample_demos,
    save_npz,
    to_arrays,
)
from jaxrl.types import ArraySpec, Box, Discrete, EnvSpec, Transition

DICT_SPEC = EnvSpec(
    "Masked",
    (3,),
    "float32",
    Discrete(4),
    2,
    10,
    obs_extras=(ArraySpec("action_mask", (4,), "bool"),),
)
BOX_SPEC = EnvSpec("Box2", (3,), "float32", Box((2,), (-1.0, -2.0), (1.0, 2.0)), 1, 10)


def dict_transitions(shape, seed=0):
    """Transitions of ``DICT_SPEC`` with leaves ``[*shape, ...]``; rewards count up."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    obs = lambda: {
        "obs": rng.normal(size=(*shape, 3)).astype(np.float32),
        "action_mask": rng.random(size=(*shape, 4)) < 0.5,
    }
    return Transition(
        obs=obs(),
        action=rng.integers(0, 4, size=shape).astype(np.int32),
        reward=np.arange(n, dtype=np.float32).reshape(shape),
        next_obs=obs(),
        terminated=rng.random(size=shape) < 0.2,
        truncated=np.zeros(shape, bool),
        extras={},
    )


def assert_same(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(x, y)


def test_dict_observations_round_trip_through_a_file(tmp_path):
    data = dict_transitions((6,))
    save_npz(tmp_path / "d.npz", data)
    with np.load(tmp_path / "d.npz", allow_pickle=False) as f:
        assert sorted(f.files) == sorted(
            ["obs/obs", "obs/action_mask", "next_obs/obs", "next_obs/action_mask", "action",
             "reward", "terminated", "truncated"]
        )  # fmt: skip
    assert_same(load_npz(tmp_path / "d.npz", DICT_SPEC), data)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(reward=None), r"missing \['reward'\]"),
        (dict(obs=np.zeros((6, 3), np.float32)), r"missing \['obs/action_mask'"),
        (dict(action=np.zeros((6, 2), np.int32)), r"'action' has shape \(6, 2\), expected \(6,\)"),
        (dict(action=np.zeros(6, np.float32)), "'action' has dtype float32, expected int32"),
        (dict(reward=np.zeros(5, np.float32)), r"fields of different lengths .*'reward': 5"),
    ],
)
def test_wrong_keys_shapes_and_dtypes_are_named(tmp_path, change, message):
    data = dict_transitions((6,))._replace(**change)
    np.savez(tmp_path / "bad.npz", **to_arrays(data))
    with pytest.raises(ValueError, match=message) as e:
        load_npz(tmp_path / "bad.npz", DICT_SPEC)
    assert "\n" not in str(e.value)


def test_box_actions_outside_the_box_and_unreadable_files(tmp_path):
    rng = np.random.default_rng(0)
    box = Transition(
        obs=rng.normal(size=(4, 3)).astype(np.float32),
        action=np.float32([[0.5, 2.5]] * 4),  # 2.5 > high 2.0
        reward=np.zeros(4, np.float32),
        next_obs=rng.normal(size=(4, 3)).astype(np.float32),
        terminated=np.zeros(4, bool),
        truncated=np.zeros(4, bool),
        extras={},
    )
    save_npz(tmp_path / "box.npz", box)
    with pytest.raises(ValueError, match="outside Box2's box"):
        load_npz(tmp_path / "box.npz", BOX_SPEC)
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_npz(tmp_path / "junk.npz", BOX_SPEC)
    with pytest.raises(ValueError, match="does not exist"):
        load_npz(tmp_path / "missing.npz", BOX_SPEC)


def test_uniform_replay_of_dict_observations_and_its_export_order():
    """Dict observations go through a uniform ring leaf by leaf (it wraps: 7 rows written
    into 4), come back from ``sample`` as stored, and ``replay_transitions`` lists the
    valid rows oldest first, env by env."""
    buffer = make_uniform_replay(capacity=8, num_envs=2, batch_size=5)
    data = dict_transitions((7, 2))
    example = jax.tree.map(lambda x: x[0], data)
    state = buffer.init(example)
    state = buffer.add(state, jax.tree.map(lambda x: x[:3], data))
    state = buffer.add(state, jax.tree.map(lambda x: x[3:], data))
    flat = replay_transitions(state.data, state.position, state.size)
    want = jax.tree.map(lambda x: x[3:].reshape((8, *x.shape[2:])), data)
    assert_same(flat, want)
    sample = buffer.sample(state, jax.random.PRNGKey(0))
    rows = (np.asarray(sample.time_index) - int(state.position)) % 4 + 3  # data's row
    got = jax.tree.map(lambda x: np.asarray(x)[:, 0], sample.experience)
    assert_same(got, jax.tree.map(lambda x: x[rows, np.asarray(sample.env_index)], data))


@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.3, 0.5, 1.0])
def test_mixing_gives_the_asked_ratio(ratio):
    b = 10
    batch = dict_transitions((b,))._replace(reward=np.zeros(b, np.float32))
    demos = dict_transitions((6,), seed=1)._replace(reward=np.full(6, 7.0, np.float32))
    k = demo_count(ratio, b)
    assert k == round(ratio * b)
    aux = auxiliary.Auxiliary((), demos, k)
    state = auxiliary.init(aux, jax.random.PRNGKey(0))
    _, mixed, metrics = jax.jit(lambda s, bt, key: auxiliary.step(aux, s, bt, {}, key))(
        state, jax.tree.map(jnp.asarray, batch), jax.random.PRNGKey(1)
    )
    assert metrics == {}
    demo_rows = np.asarray(mixed.reward) == 7.0
    assert demo_rows.sum() == k
    np.testing.assert_array_equal(demo_rows, is_demo(b, k))
    # Each demo row is one whole demonstration (every field of the same one).
    for row in np.flatnonzero(demo_rows):
        (match,) = np.flatnonzero((demos.obs["obs"] == np.asarray(mixed.obs["obs"][row])).all(1))
        assert np.asarray(mixed.action[row]) == demos.action[match]
        np.testing.assert_array_equal(
            mixed.next_obs["action_mask"][row], demos.next_obs["action_mask"][match]
        )


def test_sample_demos_draws_every_item():
    demos = dict_transitions((5,))
    drawn = sample_demos(jax.tree.map(jnp.asarray, demos), jax.random.PRNGKey(0), 200)
    assert sorted(set(np.asarray(drawn.reward).tolist())) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert mix_batch(demos, jax.tree.map(lambda x: x[:0], demos)) is demos
