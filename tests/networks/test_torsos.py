"""The IMPALA and MinAtar torsos against slow NumPy references, and ``make_torso``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.networks import (
    MLP,
    ImpalaCNN,
    MinAtarCNN,
    NatureCNN,
    ResidualBlock,
    cnn_torso,
    make_torso,
)
from jaxrl.types import ConfigError, Discrete, EnvSpec


def conv(x, kernel, bias, padding):
    """Slow NumPy 3x3 stride-1 convolution: x [H, W, C], kernel [k, k, C, F]; SAME pads
    with zeros (k - 1) / 2 on each side, VALID does not pad."""
    k = kernel.shape[0]
    if padding == "SAME":
        p = (k - 1) // 2
        x = np.pad(x, ((p, p), (p, p), (0, 0)))
    h, w = x.shape[0] - k + 1, x.shape[1] - k + 1
    out = np.zeros((h, w, kernel.shape[3]))
    for i in range(h):
        for j in range(w):
            out[i, j] = np.tensordot(x[i : i + k, j : j + k], kernel, axes=3) + bias
    return out


def max_pool_same(x):
    """Slow NumPy 3x3 stride-2 SAME max pool: output ceil(H / 2), padding with -inf split
    as TensorFlow does (the extra row/column at the end)."""
    h, w = -(-x.shape[0] // 2), -(-x.shape[1] // 2)
    pad_h, pad_w = max((h - 1) * 2 + 3 - x.shape[0], 0), max((w - 1) * 2 + 3 - x.shape[1], 0)
    x = np.pad(
        x,
        ((pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)),
        constant_values=-np.inf,
    )
    return np.array(
        [
            [x[2 * i : 2 * i + 3, 2 * j : 2 * j + 3].max(axis=(0, 1)) for j in range(w)]
            for i in range(h)
        ]
    )


def residual(x, p):
    relu = lambda v: np.maximum(v, 0)
    y = conv(relu(x), np.asarray(p["Conv_0"]["kernel"]), np.asarray(p["Conv_0"]["bias"]), "SAME")
    y = conv(relu(y), np.asarray(p["Conv_1"]["kernel"]), np.asarray(p["Conv_1"]["bias"]), "SAME")
    return x + y


def dense(p, x):
    return x @ np.asarray(p["kernel"]) + np.asarray(p["bias"])


def test_residual_block_matches_numpy():
    x = np.random.default_rng(0).normal(size=(2, 5, 6, 3)).astype(np.float32)
    block = ResidualBlock()
    params = jax.jit(block.init)(jax.random.PRNGKey(0), x)["params"]
    got = np.asarray(jax.jit(block.apply)({"params": params}, x))
    for b in range(2):
        np.testing.assert_allclose(got[b], residual(x[b].astype(np.float64), params), atol=1e-4)


def test_impala_cnn_matches_numpy():
    net = ImpalaCNN(hidden_sizes=(5,), channels=(2, 3))
    obs = np.random.default_rng(1).integers(0, 256, size=(2, 11, 9, 4), dtype=np.uint8)
    params = jax.jit(net.init)(jax.random.PRNGKey(0), obs)["params"]
    got = np.asarray(jax.jit(net.apply)({"params": params}, obs))
    assert got.shape == (2, 5)
    for b in range(2):
        x = obs[b].astype(np.float64) / 255.0
        for stage in range(2):
            p = params[f"Conv_{stage}"]
            x = conv(x, np.asarray(p["kernel"]), np.asarray(p["bias"]), "SAME")
            x = max_pool_same(x)
            x = residual(x, params[f"ResidualBlock_{2 * stage}"])
            x = residual(x, params[f"ResidualBlock_{2 * stage + 1}"])
        assert x.shape == (3, 3, 3)  # 11x9 -> 6x5 -> 3x3
        want = np.maximum(dense(params["Dense_0"], np.maximum(x, 0).reshape(-1)), 0)
        np.testing.assert_allclose(got[b], want, rtol=1e-4, atol=1e-5)


def test_impala_cnn_atari_shapes():
    net = ImpalaCNN()
    obs = jnp.zeros((3, 84, 84, 4), jnp.uint8)
    params = jax.eval_shape(net.init, jax.random.PRNGKey(0), obs)["params"]
    assert params["Dense_0"]["kernel"].shape == (11 * 11 * 32, 256)  # 84 -> 42 -> 21 -> 11
    assert jax.eval_shape(lambda p: net.apply({"params": p}, obs), params).shape == (3, 256)
    # Leading batch axes are kept.
    obs = jnp.zeros((2, 3, 84, 84, 4), jnp.uint8)
    assert jax.eval_shape(lambda p: net.apply({"params": p}, obs), params).shape == (2, 3, 256)


def test_minatar_cnn_matches_numpy():
    net = MinAtarCNN(hidden_sizes=(7,))
    obs = np.random.default_rng(2).integers(0, 2, size=(3, 10, 10, 4)).astype(bool)
    params = jax.jit(net.init)(jax.random.PRNGKey(0), obs)["params"]
    got = np.asarray(jax.jit(net.apply)({"params": params}, obs))
    for b in range(3):
        p = params["Conv_0"]
        x = conv(obs[b].astype(np.float64), np.asarray(p["kernel"]), np.asarray(p["bias"]), "VALID")
        assert x.shape == (8, 8, 16)
        want = np.maximum(dense(params["Dense_0"], np.maximum(x, 0).reshape(-1)), 0)
        np.testing.assert_allclose(got[b], want, rtol=1e-4, atol=1e-5)
    # 0/1 float channels are used as they are; uint8 frames are divided by 255.
    as_float = np.asarray(jax.jit(net.apply)({"params": params}, obs.astype(np.float32)))
    np.testing.assert_allclose(as_float, got, rtol=1e-6)


def layer_norm(x, p):
    """Slow NumPy LayerNorm over the last axis (flax's epsilon 1e-6, biased variance)."""
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-6) * np.asarray(p["scale"]) + np.asarray(p["bias"])


def test_minatar_cnn_with_layer_norm_matches_numpy():
    net = cnn_torso("minatar", (7, 5), layer_norm=True)
    obs = np.random.default_rng(3).integers(0, 2, size=(2, 10, 10, 4)).astype(np.float32)
    params = jax.jit(net.init)(jax.random.PRNGKey(1), obs)["params"]
    got = np.asarray(jax.jit(net.apply)({"params": params}, obs))
    relu = lambda v: np.maximum(v, 0)
    for b in range(2):
        p = params["Conv_0"]
        x = conv(obs[b].astype(np.float64), np.asarray(p["kernel"]), np.asarray(p["bias"]), "VALID")
        x = relu(layer_norm(x, params["LayerNorm_0"])).reshape(-1)  # over the 16 channels
        x = relu(layer_norm(dense(params["Dense_0"], x), params["LayerNorm_1"]))
        want = relu(layer_norm(dense(params["Dense_1"], x), params["LayerNorm_2"]))
        np.testing.assert_allclose(got[b], want, rtol=1e-4, atol=1e-5)
    # Off (the default), the same parameters without the norms give the plain torso.
    plain = {k: v for k, v in params.items() if not k.startswith("LayerNorm")}
    np.testing.assert_array_equal(
        cnn_torso("minatar", (7, 5)).apply({"params": plain}, obs),
        MinAtarCNN((7, 5)).apply({"params": plain}, obs),
    )


def test_nature_cnn_layer_norm_follows_every_layer_and_impala_has_none():
    obs = jnp.zeros((1, 36, 36, 4), jnp.uint8)
    net = cnn_torso("nature", (8,), layer_norm=True)
    params = jax.eval_shape(net.init, jax.random.PRNGKey(0), obs)["params"]
    sizes = [params[f"LayerNorm_{i}"]["scale"].shape for i in range(4)]
    assert sizes == [(32,), (64,), (64,), (8,)]
    assert not any(k.startswith("LayerNorm") for k in jax.eval_shape(
        cnn_torso("nature", (8,)).init, jax.random.PRNGKey(0), obs)["params"])  # fmt: skip
    with pytest.raises(ConfigError, match="torso 'impala' has no layer_norm option"):
        cnn_torso("impala", (8,), layer_norm=True)


def test_make_torso_picks_by_name_and_shape():
    assert isinstance(make_torso("auto", (4,), (8,)), MLP)
    assert isinstance(make_torso("auto", (10, 10, 4), (8,)), MinAtarCNN)
    assert isinstance(make_torso("auto", (84, 84, 4), (8,)), NatureCNN)
    torso = make_torso("impala", (84, 84, 4), (64,))
    assert isinstance(torso, ImpalaCNN) and tuple(torso.hidden_sizes) == (64,)
    assert isinstance(make_torso("nature", (10, 10, 4), (8,)), NatureCNN)
    assert isinstance(make_torso("mlp", (10, 10, 4), (8,)), MLP)
    with pytest.raises(ConfigError, match="needs image observations"):
        make_torso("impala", (4,), (8,))
    with pytest.raises(ConfigError, match="unknown torso"):
        make_torso("resnet", (84, 84, 4), (8,))


@pytest.mark.parametrize("agent", ["dqn", "rainbow"])
def test_agents_take_the_torso_option(agent):
    spec = EnvSpec("Img-v0", (36, 36, 4), "uint8", Discrete(3), 2, 100)
    for torso, module in (("impala", "ResidualBlock_0"), ("nature", "Conv_2")):
        a = agents.make(agent, spec, torso=torso, hidden_sizes=(8,), buffer_size=64)
        params = jax.eval_shape(a.init, jax.random.PRNGKey(0)).params["params"]
        assert module in params["torso"]
    with pytest.raises(ConfigError, match="torso"):
        agents.make(agent, spec, torso="resnet")
