"""HL-Gauss ops against a NumPy/math.erf reference (Farebrother et al. 2024, Listing 1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops import hl_gauss_centers, hl_gauss_loss, hl_gauss_target
from tests.references import hl_gauss_target as hl_gauss_target_ref


@pytest.mark.parametrize("sigma", [0.3, 1.5])
def test_target_histogram_matches_reference(sigma):
    ys = np.array([-7.0, -2.2, 0.0, 0.4, 3.9, 5.0, 12.0], np.float32)  # beyond both ends too
    got = np.asarray(
        jax.jit(hl_gauss_target, static_argnums=(1, 2, 3, 4))(ys, -5.0, 5.0, 11, sigma)
    )
    for y, row in zip(ys, got, strict=True):
        np.testing.assert_allclose(
            row, hl_gauss_target_ref(float(y), -5.0, 5.0, 11, sigma), atol=1e-6
        )
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-6)


def test_histogram_mean_recovers_an_interior_target():
    centers = np.asarray(hl_gauss_centers(-5.0, 5.0, 41))
    probs = np.asarray(hl_gauss_target(jnp.array([1.3]), -5.0, 5.0, 41, 0.75 * 10 / 41))
    np.testing.assert_allclose((probs * centers).sum(), 1.3, atol=1e-3)


def test_loss_is_cross_entropy_to_the_target():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 11)).astype(np.float32)
    y = np.array([-1.0, 0.5, 4.0], np.float32)
    got = np.asarray(hl_gauss_loss(logits, y, -5.0, 5.0, 11, 0.7))
    for b in range(3):
        p = np.array(hl_gauss_target_ref(float(y[b]), -5.0, 5.0, 11, 0.7))
        log_q = logits[b] - np.log(np.exp(logits[b]).sum())
        np.testing.assert_allclose(got[b], -(p * log_q).sum(), rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError):
        hl_gauss_target(0.0, 1.0, -1.0, 11, 0.5)
    with pytest.raises(ValueError):
        hl_gauss_target(0.0, -1.0, 1.0, 11, 0.0)
