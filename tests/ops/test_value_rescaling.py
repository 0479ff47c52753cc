"""R2D2's value rescaling and its inverse against NumPy (float64)."""

import numpy as np
import pytest

from jaxrl.ops import inverse_value_rescale, value_rescale

X = np.concatenate([-np.logspace(-6, 5, 60), [0.0], np.logspace(-6, 5, 60)])


def h(x, eps):
    return np.sign(x) * (np.sqrt(np.abs(x) + 1) - 1) + eps * x


@pytest.mark.parametrize("eps", [1e-3, 1e-1])
def test_value_rescale_and_inverse(eps):
    y = np.asarray(value_rescale(X.astype(np.float32), eps))
    np.testing.assert_allclose(y, h(X, eps), rtol=2e-6, atol=1e-7)
    # the inverse undoes h (NumPy: bisection on the increasing h, float64)
    lo, hi = np.full_like(X, -2e5), np.full_like(X, 2e5)
    target = h(X, eps)
    for _ in range(200):
        mid = (lo + hi) / 2
        below = h(mid, eps) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    np.testing.assert_allclose(lo, X, rtol=1e-9, atol=1e-12)  # the reference is sound
    back = np.asarray(inverse_value_rescale(target.astype(np.float32), eps))
    np.testing.assert_allclose(back, X, rtol=2e-6, atol=2e-6)
    round_trip = np.asarray(inverse_value_rescale(value_rescale(X.astype(np.float32), eps), eps))
    np.testing.assert_allclose(round_trip, X, rtol=2e-6, atol=2e-6)
