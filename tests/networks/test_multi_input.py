"""``networks.multi_input`` and ``conv.Conv1d``: the 1-D convolution against a slow NumPy
convolution (both backward passes alike), the ``multi`` torso's shapes and its joined
encodings against NumPy, its input rules, and the one image encoder that PPO's actor and
critic share."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.networks.conv import Conv1d
from jaxrl.networks.multi_input import (
    Conv1dEncoder,
    MultiInputTorso,
    input_rules,
    multi_torso,
    network_inputs,
)
from jaxrl.types import ACTION_MASK, ArraySpec, ConfigError, Discrete, EnvSpec


def np_conv1d(x, w, b, stride, padding):
    """Slow NumPy convolution: x [N, T, C], w [k, C, F], b [F] -> [N, OT, F]; ``SAME`` as
    TensorFlow's (output ceil(T / stride), the odd pad at the end) or ``(lo, hi)``."""
    k, t = w.shape[0], x.shape[1]
    if padding == "SAME":
        total = max((-(-t // stride) - 1) * stride + k - t, 0)
        padding = (total // 2, total - total // 2)
    if padding == "VALID":
        padding = (0, 0)
    xp = np.pad(x, ((0, 0), padding, (0, 0)))
    out_t = (xp.shape[1] - k) // stride + 1
    y = np.zeros((x.shape[0], out_t, w.shape[2]))
    for i in range(out_t):
        for n in range(x.shape[0]):
            for f in range(w.shape[2]):
                y[n, i, f] = np.sum(xp[n, i * stride : i * stride + k] * w[:, :, f]) + b[f]
    return y


@pytest.mark.parametrize(
    "k, stride, padding", [(3, 1, "SAME"), (3, 2, "SAME"), (2, 1, "VALID"), (3, 2, (1, 2))]
)
def test_conv1d_matches_numpy_and_both_backward_passes_agree(k, stride, padding):
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 7, 3))
    layer = Conv1d(4, k, stride, padding)
    params = layer.init(jax.random.PRNGKey(1), x)
    w, b = (np.asarray(params["params"][n], np.float64) for n in ("kernel", "bias"))
    b = b + np.arange(4)  # a bias that is not zero
    params = {
        "params": {"kernel": jnp.asarray(w, jnp.float32), "bias": jnp.asarray(b, jnp.float32)}
    }
    y = layer.apply(params, x)
    np.testing.assert_allclose(
        y, np_conv1d(np.asarray(x, np.float64), w, b, stride, padding), rtol=1e-5, atol=1e-5
    )
    # leading batch axes are flattened and restored
    y2 = layer.apply(params, jnp.stack([x, x]))
    assert y2.shape == (2, *y.shape) and np.allclose(y2[1], y)

    def loss(p, x, canonical):
        return jnp.sum(jnp.sin(layer.clone(canonical_backward=canonical).apply(p, x)))

    native = jax.grad(loss, argnums=(0, 1))(params, x, False)
    canonical = jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)(params, x, True)
    for a, c in zip(jax.tree.leaves(native), jax.tree.leaves(canonical), strict=True):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def spec_of(**extras) -> EnvSpec:
    """A spec whose main observation is an image [6, 6, 2] uint8 and ``extras`` more."""
    return EnvSpec(
        name="Dict-v0",
        obs_shape=(6, 6, 2),
        obs_dtype="uint8",
        action_space=Discrete(3),
        num_envs=2,
        max_episode_steps=10,
        obs_extras=tuple(ArraySpec(k, s, d) for k, (s, d) in extras.items()),
    )


SPEC = spec_of(velocity=((3,), "float32"), seq=((5, 4), "float32"), **{ACTION_MASK: ((3,), "bool")})


def obs_of(spec, batch, key=0):
    keys = jax.random.split(jax.random.PRNGKey(key), len(spec.obs_extras) + 1)
    return {
        k: (jax.random.randint(kk, (*batch, *s.shape), 0, 256) if s.dtype == jnp.uint8
            else jax.random.normal(kk, (*batch, *s.shape))).astype(s.dtype)
        for kk, (k, s) in zip(keys, spec.obs_spec.items(), strict=True)
    }  # fmt: skip


def test_rules_by_rank_sorted_by_key_without_the_mask():
    assert input_rules(SPEC) == (
        ("obs", "cnn", (6, 6, 2)),
        ("seq", "conv1d", (5, 4)),
        ("velocity", "mlp", (3,)),
    )
    assert ACTION_MASK not in network_inputs(obs_of(SPEC, (2,)))


@pytest.mark.parametrize(
    "spec, message",
    [
        (spec_of(), "torso 'multi' needs dict observations (an env with obs_extras)"),
        (
            spec_of(stack=((2, 2, 2, 2), "float32")),
            "torso 'multi' has no encoder for observation entry 'stack' of shape [2, 2, 2, 2]; "
            "encoders by rank: rank 1: mlp, rank 2: conv1d, rank 3: cnn",
        ),
        (spec_of(count=((), "int32")), "no encoder for observation entry 'count' of shape []"),
    ],
)
def test_bad_specs_are_one_line_config_errors(spec, message):
    if not spec.obs_extras:
        spec = EnvSpec("Flat-v0", (4,), "float32", Discrete(2), 1, 10)
    with pytest.raises(ConfigError) as e:
        multi_torso(spec, (8,))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_torso_joins_each_encoding_in_key_order_and_keeps_batch_axes():
    torso = multi_torso(SPEC, (8,))
    obs = obs_of(SPEC, (3,))
    params = torso.init(jax.random.PRNGKey(0), obs)
    assert set(params["params"]) == {"encoder_obs", "encoder_seq", "encoder_velocity"}
    out = torso.apply(params, obs)
    assert out.shape == (3, 3 * 8) and out.dtype == jnp.float32
    # each slice is that entry's encoder alone, applied to that entry alone
    for i, (key, _, _) in enumerate(torso.inputs):
        alone = MultiInputTorso(tuple(r for r in torso.inputs if r[0] == key), (8,))
        own = {"params": {f"encoder_{key}": params["params"][f"encoder_{key}"]}}
        np.testing.assert_allclose(out[:, 8 * i : 8 * i + 8], alone.apply(own, obs), rtol=1e-6)
    # the feature vector's encoder is relu(x W + b), against NumPy
    dense = params["params"]["encoder_velocity"]["Dense_0"]
    x = np.asarray(obs["velocity"], np.float64)
    expected = np.maximum(x @ np.asarray(dense["kernel"]) + np.asarray(dense["bias"]), 0.0)
    np.testing.assert_allclose(out[:, 16:24], expected, rtol=1e-5, atol=1e-6)
    # [T, B, ...] observations: the same per row
    deep = jax.tree.map(lambda x: jnp.stack([x, x[::-1]]), obs)
    out2 = torso.apply(params, deep)
    assert out2.shape == (2, 3, 24)
    np.testing.assert_allclose(out2[0], out, rtol=1e-6)
    # joined layers after the encodings
    wide = multi_torso(SPEC, (8, 5, 4))
    assert wide.apply(wide.init(jax.random.PRNGKey(1), obs), obs).shape == (3, 4)


def test_conv1d_encoder_is_its_convolutions_then_dense_against_numpy():
    enc = Conv1dEncoder(channels=(2,), kernel_sizes=(3,), strides=(1,), hidden_sizes=(4,))
    x = jax.random.normal(jax.random.PRNGKey(2), (2, 5, 3))
    params = enc.init(jax.random.PRNGKey(3), x)["params"]
    conv = {k: np.asarray(v, np.float64) for k, v in params["Conv1d_0"].items()}
    h = np.maximum(np_conv1d(np.asarray(x, np.float64), conv["kernel"], conv["bias"], 1, "SAME"), 0)
    dense = {k: np.asarray(v, np.float64) for k, v in params["Dense_0"].items()}
    expected = np.maximum(h.reshape(2, -1) @ dense["kernel"] + dense["bias"], 0)
    np.testing.assert_allclose(enc.apply({"params": params}, x), expected, rtol=1e-5, atol=1e-6)


def test_ppo_shared_encoder_is_one_image_encoder_trained_by_both_losses():
    from jaxrl import agents
    from jaxrl.networks.multi_input import shared_encoders
    from jaxrl.networks.policies import ActorCritic

    spec = spec_of(velocity=((3,), "float32"))
    trees = []
    for shared in (False, True):
        agent = agents.make("ppo", spec, torso="multi", hidden_sizes=(8,), shared_encoder=shared)
        trees.append(jax.eval_shape(agent.init, jax.random.PRNGKey(0)).params["params"])
    assert {"encoder_obs", "encoder_velocity"} == set(trees[0]["actor_torso"])
    assert "images" not in trees[0]
    assert set(trees[1]["actor_torso"]) == set(trees[1]["critic_torso"]) == {"encoder_velocity"}
    assert set(trees[1]["images"]) == {"encoder_obs"}
    net = ActorCritic(3, True, (8,), torso="mlp", torso_module=multi_torso(spec, (8,)))
    net = net.clone(shared_images=shared_encoders(net.torso_module))
    obs = obs_of(spec, (2,))
    p = net.init(jax.random.PRNGKey(0), obs)
    assert jax.tree.map(jnp.shape, p["params"]) == jax.tree.map(lambda s: s.shape, trees[1])
    for method in (ActorCritic.actor, ActorCritic.critic):
        grads = jax.grad(lambda q, m=method: jnp.sum(net.apply(q, obs, method=m)))(p)
        images = jax.tree.leaves(grads["params"]["images"])
        assert all(float(jnp.abs(g).sum()) > 0 for g in images), method.__name__
