"""Rollout flattening and minibatch shuffling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers.rollout import flatten, shuffled_minibatches


def test_flatten_merges_time_and_env_axes_row_major():
    x = np.arange(2 * 3 * 5).reshape(2, 3, 5)
    out = flatten({"x": jnp.asarray(x), "y": jnp.zeros((2, 3))})
    np.testing.assert_array_equal(out["x"], x.reshape(6, 5))
    assert out["y"].shape == (6,)


def test_shuffled_minibatches_partition_the_batch_and_keep_rows_together():
    x = jnp.arange(12)
    tree = {"a": x, "b": jnp.stack([x, -x], axis=-1)}
    mbs = shuffled_minibatches(jax.random.PRNGKey(0), tree, 3)
    assert mbs["a"].shape == (3, 4) and mbs["b"].shape == (3, 4, 2)
    np.testing.assert_array_equal(np.sort(np.asarray(mbs["a"]).ravel()), np.arange(12))
    np.testing.assert_array_equal(mbs["b"][..., 0], mbs["a"])
    np.testing.assert_array_equal(mbs["b"][..., 1], -mbs["a"])
    assert not np.array_equal(np.asarray(mbs["a"]).ravel(), np.arange(12))  # shuffled
    other = shuffled_minibatches(jax.random.PRNGKey(1), tree, 3)
    assert not np.array_equal(other["a"], mbs["a"])


def test_shuffled_minibatches_rejects_uneven_split():
    with pytest.raises(ValueError, match="does not split"):
        shuffled_minibatches(jax.random.PRNGKey(0), jnp.arange(10), 3)
