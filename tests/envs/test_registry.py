"""The environment registry: names, aliases, user registration, 'module:attr', errors."""

from __future__ import annotations

import sys
import textwrap
import uuid

import jax.numpy as jnp
import pytest

from jaxrl import envs
from jaxrl.envs import classic
from jaxrl.types import ConfigError, Discrete, Env

BUILTIN = {
    "CartPole": "CartPole-v1",
    "Acrobot": "Acrobot-v1",
    "MountainCar": "MountainCar-v0",
    "Pendulum": "Pendulum-v1",
    "MountainCarContinuous": "MountainCarContinuous-v0",
    "FrozenLake": "FrozenLake-v1",
    "StatelessCartPole": "StatelessCartPole-v1",
    "StatelessPendulum": "StatelessPendulum-v1",
    "MemoryChain": "MemoryChain-v0",
    "MultiInputCartPole": "MultiInputCartPole-v1",
    "MultiInputPendulum": "MultiInputPendulum-v1",
}
# Registered lazily; building them needs mujoco-mjx or brax (tests/envs/test_mujoco.py,
# tests/envs/test_mjx.py). The short names are the MJX envs; ``<Task>-brax`` Brax's.
_TASKS = ("HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid")
MUJOCO = {t: f"{t}-mjx" for t in _TASKS}
BRAX = {f"{t}-brax" for t in _TASKS}


@pytest.fixture(autouse=True)
def _restore_registry(monkeypatch):
    """Each test may register envs; the global registry is put back afterwards."""
    for attr in ("_FACTORIES", "_DESCRIPTIONS", "_ALIASES"):
        monkeypatch.setattr(envs, attr, dict(getattr(envs, attr)))


def _toy_factory(num_envs: int = 1, *, horizon: int = 7) -> Env:
    return envs.make_vector_env(
        name="Toy-v0",
        obs_shape=(1,),
        obs_dtype="float32",
        action_space=Discrete(2),
        max_episode_steps=horizon,
        num_envs=num_envs,
        reset_fn=lambda key: (jnp.zeros(()), jnp.zeros((1,))),
        step_fn=lambda s, a, key: (s, jnp.zeros((1,)), jnp.float32(0), jnp.bool_(False)),
    )


@pytest.fixture
def module_name(tmp_path, monkeypatch):
    """A fresh importable module: ``make_env`` factory, and it registers ``SelfReg-v0``."""
    name = f"jaxrl_test_envmod_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            import jax.numpy as jnp

            import jaxrl.envs
            from jaxrl.types import Discrete

            def make_env(num_envs=1, horizon=3):
                return jaxrl.envs.make_vector_env(
                    name="Toy-v0",
                    obs_shape=(1,),
                    obs_dtype="float32",
                    action_space=Discrete(2),
                    max_episode_steps=horizon,
                    num_envs=num_envs,
                    reset_fn=lambda key: (jnp.zeros(()), jnp.zeros((1,))),
                    step_fn=lambda s, a, key: (s, jnp.zeros((1,)), 0.0, False),
                )

            jaxrl.envs.register("SelfReg-v0", make_env, "registered on import", ("SelfReg",))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _one_line_config_error(fn, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as err:
        fn(*args, **kwargs)
    message = str(err.value)
    assert "\n" not in message and message
    return message


def test_short_and_canonical_names_resolve():
    for short, canonical in BUILTIN.items():
        assert envs.canonical_name(short) == canonical
        assert envs.canonical_name(canonical) == canonical
        assert envs.canonical_name(short.lower()) == canonical  # unique case-insensitive match
        env = envs.make(short, num_envs=3)
        assert env.spec.name == canonical and env.spec.num_envs == 3
    assert envs.make("Pendulum").spec.num_envs == 1


def test_available_lists_builtins_with_descriptions():
    available = envs.available()
    minatar = {f"MinAtar-{g}" for g in ("Breakout", "Asterix", "Freeway", "Seaquest")}
    minatar.add("MinAtar-SpaceInvaders")
    assert set(BUILTIN.values()) | set(MUJOCO.values()) | BRAX | minatar <= set(available)
    for short, canonical in MUJOCO.items():
        assert envs.canonical_name(short) == canonical
    board_games = {"tic_tac_toe", "connect_four"}
    assert board_games <= set(available)
    others = set(available) - set(BUILTIN.values()) - set(MUJOCO.values()) - BRAX - minatar
    assert "hanabi" in available
    others -= board_games | {"mpe:simple_spread", "hanabi"}
    assert all(name.startswith("ALE/") for name in others)
    for description in available.values():
        assert description and "\n" not in description
    available.clear()  # a copy: the registry is unaffected
    assert "CartPole-v1" in envs.available()


def test_factory_kwargs_are_passed_and_checked():
    assert envs.make("CartPole", max_episode_steps=50).spec.max_episode_steps == 50
    message = _one_line_config_error(envs.make, "CartPole", num_envs=2, bogus=1)
    assert "'bogus'" in message and "CartPole-v1" in message and "max_episode_steps" in message
    message = _one_line_config_error(envs.make, "Acrobot", max_episode_steps=0)
    assert "max_episode_steps must be a positive int, got 0" in message


@pytest.mark.parametrize("num_envs", [0, -2, 1.5, "4", None, True])
def test_bad_num_envs(num_envs):
    message = _one_line_config_error(envs.make, "CartPole", num_envs=num_envs)
    assert message == f"num_envs must be a positive int, got {num_envs!r}"


def test_register_custom_env():
    envs.register("Toy-v0", _toy_factory, "a toy", aliases=("Toy",))
    assert envs.available()["Toy-v0"] == "a toy"
    env = envs.make("Toy", num_envs=4, horizon=11)
    assert env.spec.name == "Toy-v0" and env.spec.num_envs == 4
    assert env.spec.max_episode_steps == 11
    assert "Toy-v0" in _one_line_config_error(envs.make, "Nope")  # listed in its family
    message = _one_line_config_error(envs.make, "Toy", max_episode_steps=3)
    assert "'max_episode_steps'" in message and "horizon" in message
    # re-registering the same name replaces it; aliases cannot steal another env's name
    envs.register("Toy-v0", classic.cartpole, "now a cart-pole", aliases=("Toy",))
    assert envs.make("Toy").spec.name == "CartPole-v1"
    assert "CartPole-v1" in _one_line_config_error(
        envs.register, "Other-v0", _toy_factory, aliases=("CartPole-v1",)
    )
    assert "Toy-v0" in _one_line_config_error(
        envs.register, "Other-v0", _toy_factory, aliases=("Toy",)
    )
    assert "Other-v0" not in envs.available()


def test_module_attr_names(module_name):
    env = envs.make(f"{module_name}:make_env", num_envs=2, horizon=5)
    assert env.spec.name == "Toy-v0" and env.spec.max_episode_steps == 5
    assert envs.canonical_name(f"{module_name}:make_env") == f"{module_name}:make_env"
    # importing the module registered SelfReg-v0: usable by name from now on
    assert envs.canonical_name(f"{module_name}:SelfReg") == "SelfReg-v0"
    assert envs.make("SelfReg-v0").spec.max_episode_steps == 3
    assert envs.available()["SelfReg-v0"] == "registered on import"


def test_module_that_registers_itself(module_name):
    assert "SelfReg-v0" not in envs.available()
    assert envs.make(f"{module_name}:SelfReg-v0", num_envs=2).spec.num_envs == 2


def test_lazy_string_factory(module_name):
    envs.register("Lazy-v0", f"{module_name}:make_env", "imported on first use")
    assert module_name not in sys.modules
    assert envs.make("Lazy-v0", horizon=9).spec.max_episode_steps == 9
    assert module_name in sys.modules


def test_unknown_names_are_one_line_config_errors():
    message = _one_line_config_error(envs.make, "CartPoel-v1")
    assert "'CartPoel-v1'" in message
    for short, canonical in BUILTIN.items():
        assert canonical in message and short in message
    assert "module:factory" in message
    assert "'Nope'" in _one_line_config_error(envs.canonical_name, "Nope")
    assert "'no_such_module_xyz'" in _one_line_config_error(envs.make, "no_such_module_xyz:f")
    message = _one_line_config_error(envs.make, "json:no_such_factory")
    assert "'json'" in message and "'no_such_factory'" in message
    assert "':f'" in _one_line_config_error(envs.make, ":f")
