"""MBPO's ops against NumPy: the ensemble's Gaussian NLL with learned log-variance bounds,
the soft bounds, the rollout-length schedule and the real/model split of a minibatch."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops.model_based import bound_log_var, gaussian_nll, real_batch_size, rollout_length


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def np_bound(v, hi, lo):
    v = hi - softplus(hi - v)
    return lo + softplus(v - lo)


def test_bound_log_var_matches_numpy_and_stays_inside():
    rng = np.random.default_rng(0)
    v = rng.normal(0, 8, (3, 5, 4))
    hi, lo = rng.normal(0.5, 0.1, 4), rng.normal(-10, 0.1, 4)
    got = np.asarray(bound_log_var(*(jnp.asarray(a, jnp.float32) for a in (v, hi, lo))))
    np.testing.assert_allclose(got, np_bound(v, hi, lo), rtol=1e-5, atol=1e-5)
    assert (got <= hi + 1e-4).all() and (got >= lo - 1e-4).all()


def test_gaussian_nll_matches_numpy():
    rng = np.random.default_rng(1)
    e, b, d = 3, 6, 4
    mean, target = rng.normal(size=(e, b, d)), rng.normal(size=(e, b, d))
    log_var = rng.normal(-1, 1, (e, b, d))
    hi, lo = rng.normal(0.5, 0.1, d), rng.normal(-10, 0.1, d)
    args = (jnp.asarray(a, jnp.float32) for a in (mean, log_var, target, hi, lo))
    loss, per_member = gaussian_nll(*args)
    want = np.zeros(e)
    for k in range(e):  # a loop over members, rows and dims: the slow, obvious form
        total = 0.0
        for i in range(b):
            for j in range(d):
                total += (mean[k, i, j] - target[k, i, j]) ** 2 / np.exp(log_var[k, i, j])
                total += log_var[k, i, j]
        want[k] = total / (b * d)
    np.testing.assert_allclose(np.asarray(per_member), want, rtol=1e-5)
    np.testing.assert_allclose(float(loss), want.sum() + 0.01 * (hi.sum() - lo.sum()), rtol=1e-5)
    # Twice the mean Gaussian NLL per dimension, less log(2 pi).
    nll = 0.5 * ((mean - target) ** 2 / np.exp(log_var) + log_var + np.log(2 * np.pi))
    np.testing.assert_allclose(np.asarray(per_member), 2 * nll.mean((1, 2)) - np.log(2 * np.pi),
                               rtol=1e-5)  # fmt: skip


def np_rollout_length(epoch, a, b, x, y):
    """mbpo.py's _set_rollout_length, line for line."""
    length = min(max(x + (epoch - a) / (b - a) * (y - x), x), y)
    return int(length)


@pytest.mark.parametrize("schedule", [(20, 100, 1, 15), (2, 8, 1, 5), (0, 3, 1, 4), (1, 50, 3, 3)])
def test_rollout_length_matches_the_reference_schedule(schedule):
    epochs = np.arange(0, 120)
    got = np.asarray(rollout_length(jnp.asarray(epochs), *schedule))
    want = [np_rollout_length(e, *schedule) for e in epochs]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32 and got[0] == schedule[2] and got[-1] == schedule[3]


def test_real_batch_size_is_the_reference_split():
    assert real_batch_size(256, 0.05) == 12  # int(12.8), as mbpo.py's env_batch_size
    assert [real_batch_size(100, r) for r in (0.0, 0.25, 1.0)] == [0, 25, 100]
