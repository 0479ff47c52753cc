"""The jaxpr-to-ONNX writer: each lowering against a NumPy reference (run in
onnxruntime), constant folding of a random branch, and the error for a primitive without
an ONNX form."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.export.onnx_graph import to_onnx
from jaxrl.types import ConfigError

ort = pytest.importorskip("onnxruntime")


def run(fn, **inputs):
    """``fn``'s ONNX graph run in onnxruntime on ``inputs`` (NumPy arrays)."""
    outputs = [f"out{i}" for i in range(len(fn(**inputs)))]
    model = to_onnx(fn, inputs, outputs)
    return ort.InferenceSession(model.SerializeToString()).run(None, inputs), model


RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3, 4)).astype(np.float32)
W = RNG.normal(size=(4, 5)).astype(np.float32)


def test_elementwise_reductions_and_shapes_match_numpy():
    def fn(x):
        y = jnp.tanh(x) * 2.0 - jax.nn.sigmoid(x) / 3.0
        z = jnp.maximum(y, -0.5) + jnp.minimum(x, 0.25) ** 2 + jax.lax.rsqrt(jnp.abs(x) + 1.0)
        return (
            z,
            jnp.sum(z, axis=(1, 2)),
            jnp.max(x, axis=1),
            jnp.argmax(x, axis=-1),
            jnp.transpose(x, (2, 0, 1)),
            jnp.clip(x, -0.3, 0.7),
            x[:, 1:3, ::2],
            jnp.concatenate([x, 2 * x], axis=1),
            x.reshape(2, 12),
            jnp.broadcast_to(x[:, :1, :], (2, 3, 4)) + x[0],
            jnp.where(x > 0, x, -x).astype(jnp.int32),
        )

    (z, s, m, a, t, c, sl, cat, r, b, w), model = run(fn, x=X)
    ref = np.maximum(np.tanh(X) * 2 - 1 / (1 + np.exp(-X)) / 3, -0.5)
    ref = ref + np.minimum(X, 0.25) ** 2 + 1 / np.sqrt(np.abs(X) + 1)
    np.testing.assert_allclose(z, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, ref.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_array_equal(m, X.max(axis=1))
    np.testing.assert_array_equal(a, X.argmax(axis=-1))
    assert a.dtype == np.int32
    np.testing.assert_array_equal(t, X.transpose(2, 0, 1))
    np.testing.assert_array_equal(c, np.clip(X, -0.3, 0.7))
    np.testing.assert_array_equal(sl, X[:, 1:3, ::2])
    np.testing.assert_array_equal(cat, np.concatenate([X, 2 * X], axis=1))
    np.testing.assert_array_equal(r, X.reshape(2, 12))
    np.testing.assert_allclose(b, np.broadcast_to(X[:, :1], X.shape) + X[0], rtol=1e-6)
    np.testing.assert_array_equal(w, np.abs(X).astype(np.int32))


def test_dot_general_with_batch_and_contracting_dims_matches_einsum():
    y = RNG.normal(size=(2, 4, 6)).astype(np.float32)

    def fn(x, y):
        return (x @ W, jnp.einsum("bij,bjk->bik", x, y), jnp.einsum("bij,bik->jk", x, x))

    (dense, batched, both), _ = run(fn, x=X, y=y)
    np.testing.assert_allclose(dense, X @ W, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batched, np.einsum("bij,bjk->bik", X, y), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both, np.einsum("bij,bik->jk", X, X), rtol=1e-5, atol=1e-5)


def conv_reference(x, k, stride, pad):
    """NHWC x HWIO convolution with explicit padding ((lo, hi) per spatial axis), by loops."""
    x = np.pad(x, ((0, 0), pad[0], pad[1], (0, 0)))
    kh, kw, _, out = k.shape
    oh = (x.shape[1] - kh) // stride[0] + 1
    ow = (x.shape[2] - kw) // stride[1] + 1
    y = np.zeros((x.shape[0], oh, ow, out), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0] : i * stride[0] + kh, j * stride[1] : j * stride[1] + kw]
            y[:, i, j] = np.einsum("bhwc,hwco->bo", patch, k)
    return y


@pytest.mark.parametrize("stride,padding", [((1, 1), "SAME"), ((2, 1), "VALID")])
def test_conv_nhwc_matches_loops(stride, padding):
    x = RNG.normal(size=(2, 7, 6, 3)).astype(np.float32)
    k = RNG.normal(size=(3, 2, 3, 4)).astype(np.float32)

    def fn(x):
        return (
            jax.lax.conv_general_dilated(
                x, k, stride, padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
            ),
        )

    (y,), _ = run(fn, x=x)
    pad = [(1, 1), (0, 1)] if padding == "SAME" else [(0, 0), (0, 0)]
    np.testing.assert_allclose(y, conv_reference(x, k, stride, pad), rtol=1e-4, atol=1e-5)


def test_random_branch_on_constants_folds_away():
    """``where(uniform(key) < 0, random, greedy)`` with constant key and epsilon leaves no
    random op in the graph, and the graph gives the greedy action."""

    def fn(x):
        greedy = jnp.argmax(x @ W, axis=-1)
        u = jax.random.uniform(jax.random.PRNGKey(3), greedy.shape)
        random = jax.random.randint(jax.random.PRNGKey(4), greedy.shape, 0, 5)
        return (jnp.where(u < 0.0, random, greedy),)

    x = X[:, 0]
    (action,), model = run(fn, x=x)
    np.testing.assert_array_equal(action, (x @ W).argmax(-1))
    assert {n.op_type for n in model.graph.node} <= {"Einsum", "ArgMax", "Cast", "Identity"}


def test_unsupported_primitive_is_named_only_when_an_output_needs_it():
    def dead(x):
        jnp.cumsum(x, axis=0)  # computed, never used
        return (x + 1.0,)

    (y,), _ = run(dead, x=X)
    np.testing.assert_array_equal(y, X + 1)
    with pytest.raises(ConfigError, match="cumsum"):
        run(lambda x: (jnp.cumsum(x, axis=0),), x=X)
