"""The v2 contracts' helpers against slow NumPy references: observation specs, the
legal-action mask, masked argmax, and resetting a per-env carry."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.types import (
    ACTION_MASK,
    ArraySpec,
    Discrete,
    EnvSpec,
    action_mask,
    batched_spec,
    main_obs,
    masked_argmax,
    reset_carry,
)

PLAIN = EnvSpec("X-v0", (4,), "float32", Discrete(3), 2, 10)
MASKED = EnvSpec(
    "X-v0", (4,), "float32", Discrete(3), 2, 10, obs_extras=(ArraySpec(ACTION_MASK, (3,), "bool"),)
)


def test_obs_spec_is_an_array_or_a_dict():
    assert PLAIN.obs_spec == jax.ShapeDtypeStruct((4,), jnp.float32)
    assert not PLAIN.has_action_mask and MASKED.has_action_mask
    spec = batched_spec(MASKED.obs_spec, 7, 2)
    assert spec["obs"].shape == (7, 2, 4) and spec["obs"].dtype == jnp.float32
    assert spec[ACTION_MASK].shape == (7, 2, 3) and spec[ACTION_MASK].dtype == jnp.bool_
    assert PLAIN.num_players == 1 and not PLAIN.turn_based
    hash(MASKED)  # static under jit


def test_main_obs_and_action_mask():
    x, m = jnp.ones((2, 4)), jnp.array([[True, False, True], [False, False, True]])
    assert main_obs(x) is x and action_mask(x) is None
    assert main_obs({"obs": x, ACTION_MASK: m}) is x
    assert action_mask({"obs": x, ACTION_MASK: m}) is m


def test_masked_argmax_matches_numpy():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(50, 5)).astype(np.float32)
    mask = rng.random((50, 5)) < 0.4
    mask[np.arange(50), rng.integers(0, 5, 50)] = True  # at least one legal action
    got = np.asarray(masked_argmax(jnp.asarray(values), jnp.asarray(mask)))
    want = [
        max((v, a) for a, v in enumerate(row) if legal[a])[1]
        for row, legal in zip(values, mask, strict=True)
    ]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32 and mask[np.arange(50), got].all()
    np.testing.assert_array_equal(masked_argmax(jnp.asarray(values), None), values.argmax(-1))


def test_reset_carry_matches_numpy():
    rng = np.random.default_rng(1)
    normal = lambda *shape: rng.normal(size=shape).astype(np.float32)
    carry = {"h": normal(4, 3), "c": normal(4, 2, 2), "t": np.arange(4, dtype=np.int32)}
    initial = {"h": normal(4, 3), "c": normal(4, 2, 2), "t": np.zeros(4, np.int32)}
    done = np.array([True, False, False, True])
    got = reset_carry(jax.tree.map(jnp.asarray, carry), initial, jnp.asarray(done))
    for name in carry:
        want = np.array(carry[name])
        for i in range(4):
            if done[i]:
                want[i] = initial[name][i]
        np.testing.assert_array_equal(got[name], want)
    assert reset_carry((), (), jnp.asarray(done)) == ()


def test_member_axes_keep_shared_fields_unbatched():
    import flax.struct
    import optax

    from jaxrl.types import member_axes, shared_field, take_member

    @flax.struct.dataclass
    class Inner:
        rows: jax.Array
        size: jax.Array = shared_field()

    @flax.struct.dataclass
    class State:
        params: dict
        inner: Inner
        nothing: object
        step: jax.Array = shared_field()

    state = State(
        params={"w": jnp.arange(6.0).reshape(3, 2), "opt": optax.EmptyState()},
        inner=Inner(rows=jnp.arange(3), size=jnp.int32(7)),
        nothing=None,
        step=jnp.int32(5),
    )
    axes = member_axes(state)
    assert axes.step is None and axes.inner.size is None and axes.nothing is None
    assert axes.params["w"] == 0 and axes.inner.rows == 0
    assert axes.params["opt"] == optax.EmptyState()  # no leaves: nothing to map
    # The axes are what vmap takes: shared leaves arrive unbatched.
    out = jax.vmap(lambda s: s.params["w"].sum() + s.step, in_axes=(axes,))(state)
    np.testing.assert_array_equal(out, [6.0, 10.0, 14.0])
    second = take_member(state, 1)
    np.testing.assert_array_equal(second.params["w"], [2.0, 3.0])
    assert int(second.inner.rows) == 1 and int(second.inner.size) == 7 and int(second.step) == 5
