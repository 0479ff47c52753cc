"""``networks.conv``: the convolution and both of its backward passes against slow NumPy
references, ``Conv`` against ``flax.linen.Conv``, and every convolutional torso with and
without the canonical backward pass (outputs and gradients, also inside ``lax.scan``),
torso specs and the conv encoders of SAC, TD3 and DDPG (inside their ``nn.vmap``-ed
critic ensemble) included."""

from __future__ import annotations

import functools
import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.networks import (
    Conv,
    ImpalaCNN,
    MinAtarCNN,
    NatureCNN,
    canonical_backward_default,
    cnn_torso,
    conv2d,
    make_torso,
)
from jaxrl.networks.continuous import CriticEnsemble
from jaxrl.networks.policies import ActorCritic
from jaxrl.networks.spec import SpecTorso, TorsoSpec


def explicit_pads(h, w, k, s, padding):
    """TensorFlow's SAME (output ceil(size / stride), the odd pixel at the end), VALID (no
    padding) or the explicit pairs as they are."""
    if padding == "VALID":
        return ((0, 0), (0, 0))
    if padding == "SAME":
        pads = []
        for size, kk, ss in ((h, k[0], s[0]), (w, k[1], s[1])):
            total = max((-(-size // ss) - 1) * ss + kk - size, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    return padding


def np_conv(x, w, s, padding):
    """Slow NumPy convolution: x [N, H, W, C], w [kh, kw, C, F] -> [N, OH, OW, F]."""
    k = w.shape[:2]
    (t, b), (le, r) = explicit_pads(x.shape[1], x.shape[2], k, s, padding)
    xp = np.pad(x, ((0, 0), (t, b), (le, r), (0, 0)))
    oh, ow = (xp.shape[1] - k[0]) // s[0] + 1, (xp.shape[2] - k[1]) // s[1] + 1
    y = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
            y[:, i, j] = np.einsum("nabc,abcf->nf", patch, w)
    return y


def np_conv_grads(x, w, s, padding, gy):
    """Slow NumPy gradients of ``sum(np_conv(x, w) * gy)``: ``(dx, dw)``, each window's
    contribution added where it was read."""
    k = w.shape[:2]
    (t, b), (le, r) = explicit_pads(x.shape[1], x.shape[2], k, s, padding)
    xp = np.pad(x, ((0, 0), (t, b), (le, r), (0, 0)))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(gy.shape[1]):
        for j in range(gy.shape[2]):
            rows, cols = slice(i * s[0], i * s[0] + k[0]), slice(j * s[1], j * s[1] + k[1])
            dw += np.einsum("nabc,nf->abcf", xp[:, rows, cols], gy[:, i, j])
            dxp[:, rows, cols] += np.einsum("abcf,nf->nabc", w, gy[:, i, j])
    return dxp[:, t : t + x.shape[1], le : le + x.shape[2]], dw


CASES = [  # (x shape [N, H, W, C], kernel (kh, kw), features, strides, padding)
    ((2, 12, 12, 3), (4, 4), 5, (4, 4), "VALID"),  # Nature's first layer in small
    ((2, 9, 8, 3), (4, 4), 4, (2, 2), "VALID"),  # strided, rows left unread
    ((3, 6, 5, 2), (3, 3), 3, (1, 1), "VALID"),  # MinAtar
    ((2, 7, 6, 3), (3, 3), 3, (1, 1), "SAME"),  # IMPALA
    ((2, 7, 8, 2), (3, 2), 3, (2, 3), "SAME"),  # SAME, strided, odd padding
    ((1, 5, 6, 2), (2, 3), 2, (1, 2), ((3, 0), (1, 4))),  # padding wider than the kernel
]


@pytest.mark.parametrize("canonical", [False, True])
@pytest.mark.parametrize("shape,kernel,features,strides,padding", CASES)
def test_conv2d_and_its_gradients_match_numpy(shape, kernel, features, strides, padding, canonical):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    w = rng.normal(size=(*kernel, shape[-1], features)).astype(np.float32)
    y, vjp = jax.vjp(lambda x, w: conv2d(x, w, strides, padding, canonical), x, w)
    want = np_conv(x.astype(np.float64), w.astype(np.float64), strides, padding)
    assert y.shape == want.shape and y.dtype == jnp.float32
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    gy = rng.normal(size=y.shape).astype(np.float32)
    dx, dw = vjp(jnp.asarray(gy))
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want_dx, want_dw = np_conv_grads(x64, w64, strides, padding, gy)
    assert dx.shape == x.shape and dw.shape == w.shape
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,kernel,features,strides,padding", [CASES[1], CASES[5]])
def test_vmapped_members_are_convolved_in_turn_with_their_own_results(
    shape, kernel, features, strides, padding
):
    """Under ``vmap`` over members with their own kernels (``--seeds``), the canonical path
    gives each member its own value and gradients, checked against NumPy, and the
    batched program holds no grouped convolution (XLA:CPU's slow form of it)."""
    rng = np.random.default_rng(1)
    members = 3
    xs = rng.normal(size=(members, *shape)).astype(np.float32)
    ws = rng.normal(size=(members, *kernel, shape[-1], features)).astype(np.float32)

    def value_and_grads(x, w):
        y, vjp = jax.vjp(lambda x, w: conv2d(x, w, strides, padding, True), x, w)
        return (y, *vjp(jnp.cos(y)))

    batched = jax.jit(jax.vmap(value_and_grads))
    hlo = batched.lower(xs, ws).as_text()
    groups = re.findall(r"(?:feature|batch)_group_count = (\d+)", hlo)
    assert "convolution" in hlo and set(groups) <= {"1"}, groups
    y, dx, dw = batched(xs, ws)
    for m in range(members):
        x64, w64 = xs[m].astype(np.float64), ws[m].astype(np.float64)
        want_y = np_conv(x64, w64, strides, padding)
        np.testing.assert_allclose(y[m], want_y, rtol=1e-4, atol=1e-5)
        want_dx, want_dw = np_conv_grads(x64, w64, strides, padding, np.cos(np.asarray(y[m])))
        np.testing.assert_allclose(dx[m], want_dx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(dw[m], want_dw, rtol=1e-4, atol=1e-4)
    # one kernel for every member (a vmap of the inputs only): the batch axis absorbs it
    y_shared = jax.vmap(lambda x: conv2d(x, ws[0], strides, padding, True))(xs)
    for m in range(members):
        np.testing.assert_allclose(
            y_shared[m],
            np_conv(xs[m].astype(np.float64), ws[0], strides, padding),
            rtol=1e-4,
            atol=1e-5,
        )


@pytest.mark.parametrize("padding,strides", [("VALID", (2, 2)), ("SAME", (1, 1))])
def test_conv_layer_is_flax_conv_with_the_same_parameters_and_outputs(padding, strides):
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 3, 9, 9, 3))  # two batch axes
    ref = nn.Conv(4, (3, 3), strides, padding=padding)
    params = ref.init(jax.random.PRNGKey(0), x)
    for canonical in (False, True):
        mine = Conv(4, (3, 3), strides, padding=padding, canonical_backward=canonical)
        ours = mine.init(jax.random.PRNGKey(0), x)
        assert jax.tree.structure(ours) == jax.tree.structure(params)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(params), strict=True):
            np.testing.assert_array_equal(a, b)  # same names, shapes and initial values
        np.testing.assert_array_equal(mine.apply(params, x), ref.apply(params, x))
        np.testing.assert_array_equal(mine.apply(params, x[0, 0]), ref.apply(params, x[0, 0]))


TORSOS = [  # (module class, name, obs shape, dtype, kwargs)
    (NatureCNN, "nature", (2, 36, 36, 4), np.uint8, dict(hidden_sizes=(6,))),
    (ImpalaCNN, "impala", (2, 11, 9, 4), np.uint8, dict(hidden_sizes=(5,), channels=(2,))),
    (MinAtarCNN, "minatar", (3, 10, 10, 4), bool, dict(hidden_sizes=(7,))),
]
# A torso spec as jaxrl/presets/pixels-pendulum-sac.yaml's (4x4 stride-2 convs), smaller,
# with an explicit padding in its second layer.
PIXEL_SPEC = TorsoSpec(channels=(3, 4), kernel_sizes=(4, 4), strides=(2, 2), paddings=(0, 1))
TORSOS.append(
    (functools.partial(SpecTorso, PIXEL_SPEC), "spec", (2, 16, 16, 3), np.uint8,
     dict(hidden_sizes=(5,), obs_ndim=3))
)  # fmt: skip


def _obs(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype is bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


@pytest.mark.parametrize("cls,name,shape,dtype,kwargs", TORSOS)
def test_torsos_same_outputs_and_gradients_with_either_backward_pass(
    cls, name, shape, dtype, kwargs
):
    """Forward and gradients of the loss ``sum(features * cotangent)``, with and without
    the canonical backward pass, inside a ``lax.scan`` of two gradient steps (where
    XLA:CPU's slow path is), rtol 1e-4 (they differ by rounding at most)."""
    obs = _obs(shape, dtype, 0)
    nets = [cls(**kwargs, canonical_backward=c) for c in (False, True)]
    params = jax.jit(nets[0].init)(jax.random.PRNGKey(0), obs)["params"]
    assert jax.tree.structure(jax.eval_shape(nets[1].init, jax.random.PRNGKey(0), obs)) == (
        jax.tree.structure({"params": params})
    )
    shape = jax.eval_shape(nets[0].apply, {"params": params}, obs).shape
    cot = np.random.default_rng(1).normal(size=shape).astype(np.float32)

    def grads(net):
        loss = lambda p: jnp.sum(net.apply({"params": p}, obs) * cot)  # noqa: E731

        def step(p, _):
            g = jax.grad(loss)(p)
            return jax.tree.map(lambda a, b: a - 1e-2 * b, p, g), g

        return net.apply({"params": params}, obs), jax.lax.scan(step, params, None, length=2)[1]

    (y0, g0), (y1, g1) = (jax.jit(lambda n=n: grads(n))() for n in nets)
    np.testing.assert_array_equal(y1, y0)  # the forward pass is the same computation
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert all(np.abs(g).max() > 0 for g in jax.tree.leaves(g0))


def test_nature_cnn_gradients_match_numpy():
    """The first conv layer's kernel gradient through the whole Nature CNN (canonical
    backward pass) against NumPy's chain rule through the slow reference convolutions."""
    net = NatureCNN(hidden_sizes=(3,), canonical_backward=True)
    obs = _obs((2, 36, 36, 4), np.uint8, 1)
    params = jax.jit(net.init)(jax.random.PRNGKey(0), obs)["params"]
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
    cot = np.random.default_rng(2).normal(size=(2, 3))
    got = jax.jit(jax.grad(lambda q: jnp.sum(net.apply({"params": q}, obs) * cot)))(params)
    # NumPy forward, keeping each layer's input and pre-activation
    x, inputs, pre = obs.astype(np.float64) / 255.0, [], []
    for i, s in enumerate((4, 2, 1)):
        inputs.append(x)
        pre.append(np_conv(x, p[f"Conv_{i}"]["kernel"], (s, s), "VALID") + p[f"Conv_{i}"]["bias"])
        x = np.maximum(pre[-1], 0)
    flat = x.reshape(2, -1)
    h = flat @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]
    # NumPy backward
    g = (cot * (h > 0)) @ p["Dense_0"]["kernel"].T
    g = g.reshape(x.shape)
    for i, s in reversed(list(enumerate((4, 2, 1)))):
        g = g * (pre[i] > 0)
        dx, dw = np_conv_grads(inputs[i], p[f"Conv_{i}"]["kernel"], (s, s), "VALID", g)
        np.testing.assert_allclose(got[f"Conv_{i}"]["kernel"], dw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got[f"Conv_{i}"]["bias"], g.sum((0, 1, 2)), rtol=1e-4, atol=1e-6)
        g = dx


def test_the_torso_builders_choose_the_backward_pass_by_backend():
    assert canonical_backward_default("cpu") is True
    assert canonical_backward_default("gpu") is False
    assert canonical_backward_default("tpu") is False
    expected = jax.default_backend() == "cpu"
    assert canonical_backward_default() is expected
    for name in ("nature", "impala", "minatar"):
        assert make_torso(name, (36, 36, 4), (8,)).canonical_backward is expected
        assert cnn_torso(name, (8,)).canonical_backward is expected
        assert cnn_torso(name, (8,), canonical_backward=False).canonical_backward is False
    net = ActorCritic(3, True, (8,), torso="minatar", shared=False)
    obs = jnp.zeros((1, 10, 10, 4))
    bound = net.bind(net.init(jax.random.PRNGKey(0), obs))
    assert bound.actor_torso.canonical_backward is expected
    assert bound.critic_torso.canonical_backward is expected


@pytest.mark.parametrize("agent", ["sac", "td3", "ddpg"])
def test_off_policy_conv_encoders_take_the_backward_pass_the_backend_chooses(agent):
    """SAC's, TD3's and DDPG's encoders built from a torso spec (``make_encoder``) use the
    canonical backward pass exactly where the torso builders do (on the CPU)."""
    from jaxrl import agents
    from jaxrl.agents.off_policy.core import make_encoder
    from jaxrl.types import Box, EnvSpec
    from jaxrl.validation import build_config

    spec = EnvSpec("img", (16, 16, 3), "uint8", Box((1,), (-1.0,), (1.0,)), 1, 10)
    torso = {"channels": [3, 4], "kernel_sizes": [4, 4], "strides": [2, 2]}
    config = agents.entry(agent).config
    cfg = build_config(config, {"torso": torso, "feature_dim": 6}, agent)
    encoder = make_encoder(cfg, spec)()
    assert isinstance(encoder, SpecTorso)
    assert encoder.canonical_backward is (jax.default_backend() == "cpu")


def test_critic_ensemble_with_a_conv_encoder_same_gradients_with_either_backward_pass():
    """The twin critics' conv encoders (``nn.vmap`` over stacked parameters, so the custom
    VJP runs batched, its members convolved in turn) give XLA's outputs (rtol 1e-5: XLA's
    grouped convolution rounds differently) and gradients with the canonical backward
    pass, inside a ``lax.scan`` of two gradient steps, rtol 1e-4."""
    obs = _obs((3, 16, 16, 3), np.uint8, 3)
    action = np.random.default_rng(2).normal(size=(3, 1)).astype(np.float32)
    nets = [
        CriticEnsemble(
            2, (6,), obs_ndim=3, encoder=functools.partial(SpecTorso, PIXEL_SPEC, (5,), 3, c)
        )
        for c in (False, True)
    ]
    params = jax.jit(nets[0].init)(jax.random.PRNGKey(0), obs, action)
    assert jax.tree.structure(jax.eval_shape(nets[1].init, jax.random.PRNGKey(0), obs, action)) == (
        jax.tree.structure(params)
    )

    def grads(net):
        loss = lambda p: jnp.sum(net.apply(p, obs, action) ** 2)  # noqa: E731

        def step(p, _):
            g = jax.grad(loss)(p)
            return jax.tree.map(lambda a, b: a - 1e-2 * b, p, g), g

        return net.apply(params, obs, action), jax.lax.scan(step, params, None, length=2)[1]

    (q0, g0), (q1, g1) = (jax.jit(lambda n=n: grads(n))() for n in nets)
    assert q0.shape == (2, 3)
    np.testing.assert_allclose(q1, q0, rtol=1e-5, atol=1e-7)
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert all(np.abs(g).max() > 0 for g in jax.tree.leaves(g0))
