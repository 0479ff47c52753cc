"""Initializers by name: each one's statistics against its definition (large draws, a few
percent of tolerance), the seeds' aliases, and one-line errors."""

import jax
import numpy as np
import pytest

from jaxrl.networks.initializers import make, orthogonal
from jaxrl.types import ConfigError

KEY = jax.random.PRNGKey(0)
DENSE = (400, 300)  # fan_in 400, fan_out 300
CONV = (3, 3, 16, 32)  # fan_in 144, fan_out 288


def draw(spec, shape=DENSE):
    return np.asarray(make(spec)(KEY, shape), np.float64)


def test_orthogonal_columns_are_orthonormal_times_scale():
    w = draw({"name": "orthogonal", "scale": 2.0}, (64, 32))
    np.testing.assert_allclose(w.T @ w, 4.0 * np.eye(32), atol=1e-4)


def test_vmapped_orthogonal_is_jaxs_numbers_without_a_batched_qr():
    """Under ``vmap`` (players, seeds) ``orthogonal`` gives jax's numbers bit for bit, one
    key at a time, and its program has no batched LAPACK QR (``num_batch_dims = "1"``): the
    one that waits on XLA:CPU's intra-op pool from inside it (the ``--agent ippo`` hang)."""
    keys = jax.random.split(KEY, 3)
    ours = jax.jit(jax.vmap(lambda k: orthogonal(1.5)(k, (12, 5))))
    got = np.asarray(ours(keys))
    theirs = jax.nn.initializers.orthogonal(1.5)
    each = np.stack([np.asarray(jax.jit(lambda k: theirs(k, (12, 5)))(k)) for k in keys])
    np.testing.assert_array_equal(got, each)
    for w in got.astype(np.float64):
        np.testing.assert_allclose(w.T @ w, 2.25 * np.eye(5), atol=1e-5)
    text = ours.lower(keys).as_text()
    assert "lapack_sgeqrf" in text and 'num_batch_dims = "1"' not in text


@pytest.mark.parametrize(
    "spec,shape,limit",
    [
        ("glorot_uniform", DENSE, np.sqrt(6 / 700)),
        ({"name": "glorot_uniform", "scale": 2.0}, DENSE, np.sqrt(12 / 700)),
        ("he_uniform", CONV, np.sqrt(6 / 144)),
        ("variance_scaling", CONV, np.sqrt(3 / 144)),  # RLHive's defaults
        ({"name": "variance_scaling", "mode": "fan_out", "scale": 0.5}, CONV, np.sqrt(1.5 / 288)),
    ],
)
def test_uniform_initializers_fill_their_interval(spec, shape, limit):
    w = draw(spec, shape)
    assert np.abs(w).max() <= limit
    assert np.abs(w).max() > 0.98 * limit
    assert w.std() == pytest.approx(limit / np.sqrt(3), rel=0.03)
    assert abs(w.mean()) < 4 * w.std() / np.sqrt(w.size)  # four standard errors


@pytest.mark.parametrize(
    "spec,shape,std,cut",
    [
        ("glorot_normal", DENSE, np.sqrt(2 / 700), True),
        ("he_normal", CONV, np.sqrt(2 / 144), True),
        ("lecun_normal", DENSE, np.sqrt(1 / 400), True),
        ({"name": "variance_scaling", "distribution": "normal"}, DENSE, np.sqrt(1 / 400), False),
        ({"name": "normal", "stddev": 0.05}, DENSE, 0.05, False),
        ({"name": "truncated_normal", "stddev": 0.05}, DENSE, 0.05, True),
    ],
)
def test_normal_initializers_have_their_standard_deviation(spec, shape, std, cut):
    w = draw(spec, shape)
    assert w.std() == pytest.approx(std, rel=0.03)
    assert abs(w.mean()) < 4 * std / np.sqrt(w.size)  # four standard errors
    if cut:  # a unit normal cut at +-2, rescaled to std: |w| <= 2 std / 0.8796
        assert np.abs(w).max() <= 2 * std / 0.87962566 * (1 + 1e-6)
    else:
        assert np.abs(w).max() > 3 * std


def test_zeros_and_aliases():
    assert not draw("zeros").any()
    for alias, name in [("xavier_uniform_", "glorot_uniform"), ("ortho_init_", "orthogonal"),
                        ("variance_scaling_", "variance_scaling"),
                        ("truncated_normal_init", "truncated_normal")]:  # fmt: skip
        np.testing.assert_array_equal(draw(alias), draw(name))


@pytest.mark.parametrize(
    "spec,message",
    [
        ("glorot", "unknown initializer 'glorot'; valid: orthogonal"),
        ({"name": "orthogonal", "gain": 2}, "has no option 'gain'; its options: scale"),
        ({"name": "normal", "stddev": -1}, "stddev must be a positive number"),
        ({"name": "variance_scaling", "mode": "fan"}, "mode must be one of fan_in"),
        ({"name": "variance_scaling", "distribution": "cauchy"}, "distribution must be"),
    ],
)
def test_bad_specs_are_one_line(spec, message):
    with pytest.raises(ConfigError, match=message):
        make(spec)
