"""Categorical heads, noisy heads and torsos, and QNetwork's deterministic path vs NumPy."""

import functools

import flax.linen as nn
import jax
import numpy as np

from jaxrl.networks import (
    MLP,
    CategoricalHead,
    DuelingCategoricalHead,
    DuelingHead,
    QHead,
    QNetwork,
)

KEY = jax.random.PRNGKey(0)
NOISE = {"noise": jax.random.PRNGKey(1)}


def _dense(p, x):
    """A linear layer from its params, Dense (kernel, bias) or NoisyLinear means, by loops."""
    w = np.asarray(p["kernel"] if "kernel" in p else p["mu_w"], np.float64)
    b = np.asarray(p["bias"] if "bias" in p else p["mu_b"], np.float64)
    y = np.zeros((x.shape[0], w.shape[1]))
    for n in range(x.shape[0]):
        for j in range(w.shape[1]):
            y[n, j] = sum(x[n, i] * w[i, j] for i in range(w.shape[0])) + b[j]
    return y


def _relu(x):
    return np.maximum(x, 0.0)


def _features(n=3, f=8, seed=0):
    return np.random.default_rng(seed).normal(size=(n, f)).astype(np.float32)


def _categorical_ref(params, x, num_actions, num_atoms, layer="Dense"):
    flat = _dense(params[f"{layer}_0"], x)
    out = np.zeros((x.shape[0], num_actions, num_atoms))
    for n in range(x.shape[0]):
        for a in range(num_actions):
            for k in range(num_atoms):
                out[n, a, k] = flat[n, a * num_atoms + k]
    return out


def _dueling_categorical_ref(params, x, num_actions, num_atoms, hidden, layer="Dense"):
    names = [f"{layer}_{i}" for i in range(4 if hidden else 2)]
    v_in, a_in = x, x
    if hidden:
        v_in, a_in = _relu(_dense(params[names[0]], x)), _relu(_dense(params[names[1]], x))
        names = names[2:]
    value = _dense(params[names[0]], v_in)  # [N, K]
    adv = _dense(params[names[1]], a_in)  # [N, A * K]
    out = np.zeros((x.shape[0], num_actions, num_atoms))
    for n in range(x.shape[0]):
        for k in range(num_atoms):
            mean = sum(adv[n, a * num_atoms + k] for a in range(num_actions)) / num_actions
            for a in range(num_actions):
                out[n, a, k] = value[n, k] + adv[n, a * num_atoms + k] - mean
    return out


def test_default_param_names_unchanged():
    x = _features()

    def names(module):
        return set(jax.eval_shape(module.init, KEY, x)["params"])  # no compilation

    assert names(QHead(3)) == {"Dense_0"}
    assert names(DuelingHead(3, hidden_size=4)) == {"Dense_0", "Dense_1", "Dense_2", "Dense_3"}
    assert names(MLP((5, 4))) == {"Dense_0", "Dense_1"}
    assert names(CategoricalHead(3, 5)) == {"Dense_0"}


def test_categorical_head_matches_numpy():
    x = _features()
    head = CategoricalHead(num_actions=4, num_atoms=5)
    params = head.init(KEY, x)["params"]
    assert params["Dense_0"]["kernel"].shape == (8, 20)
    got = np.asarray(head.apply({"params": params}, x))
    assert got.shape == (3, 4, 5)
    np.testing.assert_allclose(got, _categorical_ref(params, x, 4, 5), rtol=1e-5, atol=1e-5)


def test_dueling_categorical_head_matches_numpy():
    x = _features()
    for hidden in (0, 6):
        head = DuelingCategoricalHead(num_actions=4, num_atoms=5, hidden_size=hidden)
        params = head.init(KEY, x)["params"]
        got = np.asarray(head.apply({"params": params}, x))
        want = _dueling_categorical_ref(params, x, 4, 5, hidden)
        assert got.shape == (3, 4, 5)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The mean advantage is removed per atom: logits average over actions to the value.
    value = _dense(params["Dense_2"], _relu(_dense(params["Dense_0"], x)))
    np.testing.assert_allclose(got.mean(axis=1), value, rtol=1e-5, atol=1e-5)


def test_noisy_heads_and_torso():
    x = _features()
    cases = [
        (QHead(3, noisy=True), lambda p: _dense(p["NoisyLinear_0"], x), 1),
        (
            DuelingHead(3, hidden_size=4, noisy=True, sigma0=0.2),
            lambda p: (lambda v, a: v + a - a.mean(axis=1, keepdims=True))(
                _dense(p["NoisyLinear_2"], _relu(_dense(p["NoisyLinear_0"], x))),
                _dense(p["NoisyLinear_3"], _relu(_dense(p["NoisyLinear_1"], x))),
            ),
            4,
        ),
        (
            CategoricalHead(3, 5, noisy=True),
            lambda p: _categorical_ref(p, x, 3, 5, "NoisyLinear"),
            1,
        ),
        (
            DuelingCategoricalHead(3, 5, hidden_size=4, noisy=True),
            lambda p: _dueling_categorical_ref(p, x, 3, 5, 4, "NoisyLinear"),
            4,
        ),
        (
            MLP((6, 4), noisy=True),
            lambda p: _relu(_dense(p["NoisyLinear_1"], _relu(_dense(p["NoisyLinear_0"], x)))),
            2,
        ),
    ]
    for module, reference, num_layers in cases:
        init = jax.jit(functools.partial(module.init, deterministic=True))
        params = init(KEY, x)["params"]
        assert set(params) == {f"NoisyLinear_{i}" for i in range(num_layers)}, module
        apply = jax.jit(module.apply, static_argnames="deterministic")
        mean = np.asarray(apply({"params": params}, x, deterministic=True))
        np.testing.assert_allclose(mean, reference(params), rtol=1e-5, atol=1e-5)
        noisy = np.asarray(apply({"params": params}, x, rngs=NOISE))
        again = np.asarray(apply({"params": params}, x, rngs=NOISE))
        assert noisy.shape == mean.shape
        np.testing.assert_array_equal(noisy, again)
        assert np.abs(noisy - mean).max() > 1e-3, module
    # sigma0 reaches the layers.
    assert float(params["NoisyLinear_0"]["sigma_w"][0, 0]) == np.float32(0.5 / np.sqrt(8))
    dueling = DuelingHead(3, hidden_size=4, noisy=True, sigma0=0.2).init(KEY, x)["params"]
    assert float(dueling["NoisyLinear_3"]["sigma_b"][0]) == np.float32(0.2 / 2)


class _PlainTorso(nn.Module):
    """A torso whose __call__ has no `deterministic` argument."""

    @nn.compact
    def __call__(self, obs):
        return nn.relu(nn.Dense(6)(obs))


def test_q_network_passes_deterministic_on():
    obs = _features(n=2, f=4)
    net = QNetwork(MLP((6,), noisy=True), DuelingCategoricalHead(3, 5, noisy=True))
    params = net.init(KEY, obs, deterministic=True)["params"]
    got = np.asarray(net.apply({"params": params}, obs, deterministic=True))  # no rng needed
    feats = _relu(_dense(params["torso"]["NoisyLinear_0"], obs))
    want = _dueling_categorical_ref(params["head"], feats, 3, 5, 0, "NoisyLinear")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    noisy = np.asarray(net.apply({"params": params}, obs, rngs=NOISE))
    assert noisy.shape == (2, 3, 5) and np.abs(noisy - got).max() > 1e-3

    # A torso without the argument still works; only the head gets it.
    net = QNetwork(_PlainTorso(), CategoricalHead(3, 5, noisy=True))
    params = net.init(KEY, obs, deterministic=True)["params"]
    got = np.asarray(net.apply({"params": params}, obs, deterministic=True))
    feats = _relu(_dense(params["torso"]["Dense_0"], obs))
    np.testing.assert_allclose(
        got, _categorical_ref(params["head"], feats, 3, 5, "NoisyLinear"), rtol=1e-5, atol=1e-5
    )

    # Without noisy layers, deterministic changes nothing.
    net = QNetwork(MLP((6,)), QHead(3))
    params = net.init(KEY, obs)
    np.testing.assert_array_equal(
        np.asarray(net.apply(params, obs, deterministic=True)), np.asarray(net.apply(params, obs))
    )
