"""linear_schedule against a plain-Python reference and optax."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxrl.ops import linear_schedule


def _ref(t, init, end, steps, begin):
    if t <= begin:
        return init
    if t >= begin + steps:
        return end
    return init + (t - begin) / steps * (end - init)


def _rlhive_ref(init, end, steps, num_calls):
    """Successive values of RLHive's LinearSchedule.update(), the first being init."""
    values, value, delta = [], init, (end - init) / steps
    for _ in range(num_calls):
        values.append(value)
        value = value + delta
        if (delta < 0 and value < end) or (delta > 0 and value > end):
            value = end
    return values


@pytest.mark.parametrize(
    "init,end,steps,begin",
    [(1.0, 0.05, 10, 0), (1.0, 0.01, 7, 5), (0.0, 3.0, 1, 2), (2.0, 2.0, 4, 0)],
)
def test_matches_reference_and_optax(init, end, steps, begin):
    ts = np.arange(-3, begin + steps + 10)
    sched = linear_schedule(init, end, steps, begin)
    got = jax.jit(sched)(jnp.asarray(ts))
    ref = np.array([_ref(int(t), init, end, steps, begin) for t in ts])
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    assert got.dtype == jnp.float32
    opt = optax.linear_schedule(init, end, steps, begin)
    np.testing.assert_allclose(got, [opt(int(t)) for t in ts], rtol=1e-6, atol=1e-7)
    # Exact end points.
    assert float(sched(begin)) == np.float32(init) and float(sched(begin + steps)) == np.float32(
        end
    )


def test_matches_rlhive():
    init, end, steps = 1.0, 0.1, 9
    got = linear_schedule(init, end, steps)(jnp.arange(20))
    np.testing.assert_allclose(got, _rlhive_ref(init, end, steps, 20), rtol=1e-5, atol=1e-6)


def test_traced_step_and_values_under_vmap():
    inits = jnp.array([1.0, 0.5, 0.2])
    ends = jnp.array([0.0, 0.1, 0.2])
    steps = jnp.arange(0, 30, 3, dtype=jnp.int32)

    def f(init, end, step):
        return linear_schedule(init, end, 12, 3)(step)

    got = jax.jit(jax.vmap(jax.vmap(f, (None, None, 0)), (0, 0, None)))(inits, ends, steps)
    assert got.shape == (3, 10)
    for i in range(3):
        for j, t in enumerate(np.asarray(steps)):
            ref = _ref(int(t), float(inits[i]), float(ends[i]), 12, 3)
            np.testing.assert_allclose(got[i, j], ref, rtol=1e-6, atol=1e-7)


def test_zero_steps_jumps_and_validation():
    got = linear_schedule(1.0, 0.0, 0, 5)(jnp.arange(10))
    np.testing.assert_array_equal(got, [1.0] * 5 + [0.0] * 5)
    with pytest.raises(ValueError):
        linear_schedule(1.0, 0.0, -1)
    with pytest.raises(ValueError):
        linear_schedule(1.0, 0.0, 10, -2)
