"""Torso specs: the presets reproduce the built-in torsos (same parameter trees, same
outputs from the same parameters), initializers by name reach the layers, registered
torsos, and one-line errors for specs that do not fit."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.networks import PRESETS, SpecTorso, TorsoSpec, make_torso, register_torso
from jaxrl.networks.spec import registered, spec_torso
from jaxrl.networks.torsos import MLP, MinAtarCNN, NatureCNN
from jaxrl.types import ConfigError
from jaxrl.validation import build_config, config_to_dict

KEY = jax.random.PRNGKey(0)

CASES = {
    "nature": (NatureCNN((512,)), (2, 44, 44, 4), jnp.uint8, (512,)),
    "minatar": (MinAtarCNN((128,)), (2, 10, 10, 4), jnp.bool_, (128,)),
    "mlp": (MLP((32, 16), obs_ndim=1), (2, 7), jnp.float32, (32, 16)),
}


def _obs(shape, dtype):
    x = jax.random.uniform(KEY, shape, minval=0, maxval=255)
    return (x > 128) if dtype == jnp.bool_ else x.astype(dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_preset_reproduces_builtin_torso(name):
    builtin, shape, dtype, hidden = CASES[name]
    obs = _obs(shape, dtype)
    params = jax.jit(builtin.init)(KEY, obs)
    spec = SpecTorso(PRESETS[name], hidden, obs_ndim=len(shape) - 1)
    spec_params = jax.eval_shape(spec.init, KEY, obs)
    shapes = lambda p: jax.tree.map(lambda x: x.shape, p)  # noqa: E731
    assert shapes(spec_params) == shapes(params)  # same names, same shapes
    np.testing.assert_array_equal(
        jax.jit(spec.apply)(params, obs), jax.jit(builtin.apply)(params, obs)
    )


def test_mlp_preset_with_layer_norm_reproduces_mlp():
    obs = _obs((3, 5), jnp.float32)
    builtin = MLP((8, 8), layer_norm=True)
    params = builtin.init(KEY, obs)
    spec = SpecTorso(TorsoSpec(layer_norm=True), (8, 8))
    assert jax.tree.structure(spec.init(KEY, obs)) == jax.tree.structure(params)
    np.testing.assert_array_equal(spec.apply(params, obs), builtin.apply(params, obs))


def test_builtin_names_keep_their_modules():
    assert isinstance(make_torso("nature", (84, 84, 4), (512,)), NatureCNN)
    assert isinstance(make_torso("auto", (10, 10, 4), (128,)), MinAtarCNN)
    assert isinstance(make_torso("mlp", (4,), (64,)), MLP)


def test_spec_from_yaml_mapping_with_seed_names_and_init():
    spec = build_config(
        TorsoSpec,
        {
            "channels": [8, 16],
            "kernel_sizes": [3, 3],
            "strides": [2, 1],
            "paddings": [1, 0],
            "hidden_sizes": [24],
            "activation": "tanh",
            "init_fn": "ortho_init_",  # Emote's name
            "init_scale": 2.0,
        },
        "torso",
    )
    torso = spec_torso(spec, (9, 9, 3), (99,))  # the spec's own hidden_sizes win
    obs = _obs((2, 9, 9, 3), jnp.uint8)
    params = torso.init(KEY, obs)["params"]
    # 9 -> (9 + 2 - 3) // 2 + 1 = 5 -> 3: a 3x3x16 flat input to Dense(24).
    assert params["Conv_0"]["kernel"].shape == (3, 3, 3, 8)
    assert params["Dense_0"]["kernel"].shape == (3 * 3 * 16, 24)
    w = np.asarray(params["Dense_0"]["kernel"], np.float64)
    np.testing.assert_allclose(w.T @ w, 4.0 * np.eye(24), atol=1e-4)  # orthogonal, scale 2
    out = torso.apply({"params": params}, obs)
    assert out.shape == (2, 24) and float(jnp.abs(out).max()) <= 1.0  # tanh
    assert config_to_dict(spec)["channels"] == [8, 16]


@pytest.mark.parametrize(
    "given,obs_shape,match",
    [
        ({"init_fn": "glorious"}, (4,), "unknown initializer 'glorious'"),
        ({"channels": [8], "kernel_sizes": [3]}, (4,), "not an image"),
        ({"channels": [8], "kernel_sizes": [12]}, (10, 10, 3), "kernel 12 is larger"),
        ({"channels": [8, 8], "kernel_sizes": [3, 3], "strides": [3, 3]}, (8, 8, 1), "layer 1"),
        ({"channels": [8, 8], "kernel_sizes": [3]}, (8, 8, 1), "kernel_sizes needs one entry"),
        ({"channel": [8]}, (8, 8, 1), "unknown option 'channel'"),
    ],
)
def test_bad_specs_are_one_line_config_errors(given, obs_shape, match):
    with pytest.raises(ConfigError, match=match) as e:
        make_torso(build_config(TorsoSpec, given, "agent 'sac' option 'torso'"), obs_shape, (8,))
    assert "\n" not in str(e.value)


class Tiny(nn.Module):
    width: int

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(self.width, name="mine")(obs.reshape(obs.shape[:-1] + (-1,)))


def test_registered_torso_is_built_by_name():
    register_torso("tiny_test", lambda obs_shape, hidden: Tiny(hidden[-1]))
    try:
        torso = make_torso("tiny_test", (5,), (3,))
        assert isinstance(torso, Tiny) and torso.width == 3
        with pytest.raises(ConfigError, match="tiny_test"):
            make_torso("tiny_tset", (5,), (3,))  # the valid names include it
    finally:
        from jaxrl.networks import spec

        spec._REGISTRY.pop("tiny_test")
    with pytest.raises(ConfigError, match="built-in"):
        register_torso("nature", lambda obs_shape, hidden: Tiny(1))
    assert "tiny_test" not in registered()


def test_import_modules_runs_a_users_registration(tmp_path, monkeypatch):
    from jaxrl.networks import spec

    (tmp_path / "my_torsos_t20.py").write_text(
        "from jaxrl.networks import MLP, register_torso\n"
        "register_torso('mine_t20', lambda obs_shape, hidden: MLP(hidden))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        spec.import_modules(["my_torsos_t20"])
        assert isinstance(make_torso("mine_t20", (4,), (5,)), MLP)
    finally:
        spec._REGISTRY.pop("mine_t20", None)


@pytest.mark.parametrize("name", ["dqn", "rainbow", "ppo", "pqn", "sac", "td3", "ddpg"])
def test_every_agent_takes_a_torso_spec(name):
    from jaxrl import agents
    from jaxrl.types import Box, Discrete, EnvSpec

    continuous = name in ("sac", "td3", "ddpg")
    space = Box((1,), (-1.0,), (1.0,)) if continuous else Discrete(3)
    spec = EnvSpec("img", (12, 12, 2), "uint8", space, 2, 10)
    torso = {"channels": [4], "kernel_sizes": [3], "init_fn": "xavier_uniform_"}
    state = jax.eval_shape(agents.make(name, spec, torso=torso, hidden_sizes=[8]).init, KEY)
    kernels = [
        v.shape
        for k, v in jax.tree_util.tree_leaves_with_path(state)
        if "Conv_0" in jax.tree_util.keystr(k) and "kernel" in jax.tree_util.keystr(k)
    ]
    assert kernels and all(s[-4:] == (3, 3, 2, 4) for s in kernels)
