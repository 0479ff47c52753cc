"""CURL's random crop against NumPy's edge padding and slicing, and the bilinear InfoNCE
loss and its gradients against a float64 NumPy reference (``ops/contrastive.py``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops.contrastive import crop_offsets, info_nce_logits, info_nce_loss, random_crop


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_random_crop_is_a_slice_of_the_edge_padded_frame(dtype):
    rng = np.random.default_rng(0)
    b, h, w, c, pad = 16, 7, 6, 2, 2
    x = (rng.random((b, h, w, c)) * 255).astype(dtype)
    key = jax.random.PRNGKey(3)
    out = np.asarray(jax.jit(random_crop, static_argnums=2)(jnp.asarray(x), key, pad))
    offsets = np.asarray(crop_offsets(key, b, pad))
    assert out.shape == x.shape and out.dtype == x.dtype
    assert offsets.min() >= 0 and offsets.max() <= 2 * pad
    assert len({tuple(o) for o in offsets}) > 1  # offsets differ between samples
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    for i, (r, col) in enumerate(offsets):
        np.testing.assert_array_equal(out[i], padded[i, r : r + h, col : col + w])
    np.testing.assert_array_equal(np.asarray(random_crop(jnp.asarray(x), key, 0)), x)


def numpy_info_nce(q, k, w, scale):
    """Float64 loss and gradients (dq, dk, dW) of ``-mean_i log softmax(s q W k^T)_ii``."""
    logits = scale * (q @ w @ k.T)
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    b = q.shape[0]
    loss = -np.mean(np.log(np.diagonal(p)))
    g = scale * (p - np.eye(b)) / b  # d loss / d (q W k^T)
    return loss, g @ k @ w.T, g.T @ q @ w, q.T @ g @ k


@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_info_nce_loss_and_gradients_match_numpy(scale):
    rng = np.random.default_rng(1)
    b, d = 6, 5
    q, k, w = rng.normal(size=(b, d)), rng.normal(size=(b, d)), rng.random((d, d))
    f32 = lambda a: jnp.asarray(a, jnp.float32)
    loss_fn = lambda q, k, w: info_nce_loss(q, k, w, scale)[0]
    loss, grads = jax.value_and_grad(loss_fn, argnums=(0, 1, 2))(f32(q), f32(k), f32(w))
    ref_loss, *ref_grads = numpy_info_nce(q, k, w, scale)
    np.testing.assert_allclose(float(loss), ref_loss, rtol=1e-5)
    for got, want in zip(grads, ref_grads, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6)
    logits = np.asarray(info_nce_logits(f32(q), f32(k), f32(w), scale))
    np.testing.assert_allclose(logits.max(axis=1), 0.0, atol=1e-6)  # max-subtracted


def test_info_nce_accuracy_and_a_perfect_match():
    eye = jnp.eye(4, dtype=jnp.float32)
    loss, accuracy = info_nce_loss(10.0 * eye, 10.0 * eye, eye)
    assert float(accuracy) == 1.0 and float(loss) < 1e-6
    _, accuracy = info_nce_loss(eye, jnp.roll(eye, 1, axis=0), eye)
    assert float(accuracy) == 0.0
