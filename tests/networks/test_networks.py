import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.networks import MLP, DuelingHead, NatureCNN, QHead, QNetwork


def dense(p, x):
    return x @ np.asarray(p["kernel"]) + np.asarray(p["bias"])


def test_mlp_matches_numpy_and_scales_uint8():
    net = MLP((5, 3), obs_ndim=2)
    obs = np.arange(2 * 4 * 2, dtype=np.uint8).reshape(2, 4, 2) * 7
    params = net.init(jax.random.PRNGKey(0), obs)["params"]
    x = obs.reshape(2, -1).astype(np.float32) / 255.0
    for name in ("Dense_0", "Dense_1"):
        x = np.maximum(dense(params[name], x), 0.0)
    got = net.apply({"params": params}, obs)
    np.testing.assert_allclose(np.asarray(got), x, rtol=1e-5, atol=1e-6)


def test_dueling_head_matches_equation():
    head = DuelingHead(num_actions=4, hidden_size=6)
    feats = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    params = head.init(jax.random.PRNGKey(1), feats)["params"]
    v = dense(params["Dense_2"], np.maximum(dense(params["Dense_0"], feats), 0))
    a = dense(params["Dense_3"], np.maximum(dense(params["Dense_1"], feats), 0))
    want = v + a - a.mean(axis=1, keepdims=True)
    got = head.apply({"params": params}, feats)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # The mean advantage is removed: Q averages to V.
    np.testing.assert_allclose(np.asarray(got).mean(axis=1), v[:, 0], rtol=1e-5, atol=1e-5)


def test_q_network_shapes():
    net = QNetwork(torso=MLP((16,)), head=QHead(3))
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
    assert net.apply(params, jnp.zeros((7, 4))).shape == (7, 3)


def conv_valid(x, kernel, bias, stride):
    """Slow NumPy VALID convolution: x [H, W, C], kernel [k, k, C, F]."""
    k = kernel.shape[0]
    h = (x.shape[0] - k) // stride + 1
    w = (x.shape[1] - k) // stride + 1
    out = np.zeros((h, w, kernel.shape[3]), np.float64)
    for i in range(h):
        for j in range(w):
            patch = x[i * stride : i * stride + k, j * stride : j * stride + k]
            out[i, j] = np.tensordot(patch, kernel, axes=3) + bias
    return out


def test_nature_cnn_matches_numpy():
    net = NatureCNN(hidden_sizes=(6,))
    obs = np.random.default_rng(0).integers(0, 256, size=(2, 36, 36, 4), dtype=np.uint8)
    params = net.init(jax.random.PRNGKey(0), obs)["params"]
    got = np.asarray(net.apply({"params": params}, obs))
    for b in range(2):
        x = obs[b].astype(np.float64) / 255.0
        for i, stride in enumerate((4, 2, 1)):
            p = params[f"Conv_{i}"]
            x = np.maximum(conv_valid(x, np.asarray(p["kernel"]), np.asarray(p["bias"]), stride), 0)
        assert x.shape == (1, 1, 64)  # 36 -> 8 -> 3 -> 1
        want = np.maximum(dense(params["Dense_0"], x.reshape(-1)), 0)
        np.testing.assert_allclose(got[b], want, rtol=1e-4, atol=1e-5)
