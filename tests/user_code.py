"""A user's module, as ``--import tests.user_code`` imports it (issue 55 part 6): a chain
env ``Chain-v0``, an agent ``always_right`` with one option, a torso ``user_mlp`` that
keeps the contract and three that break it, and ``DictChain-v0``, the chain with a dict
observation whose extra entry no encoder of the ``multi`` torso takes. ``forget()``
undoes the import, as a new process would start."""

import dataclasses
import sys

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp

import jaxrl
from jaxrl.envs import make_vector_env
from jaxrl.networks import register_torso
from jaxrl.types import Agent, ArraySpec, Discrete, Env
from jaxrl.validation import Options, build_config, option

LENGTH = 4


def make_chain(num_envs: int = 1, *, max_episode_steps: int = 20) -> Env:
    """Cells 0..LENGTH-1; action 1 moves right, 0 left; the last cell pays 1 and ends."""

    def reset_fn(key):
        del key
        pos = jnp.zeros((), jnp.int32)
        return pos, jax.nn.one_hot(pos, LENGTH)

    def step_fn(pos, action, key):
        del key
        pos = jnp.clip(pos + jnp.where(action == 1, 1, -1), 0, LENGTH - 1)
        at_end = pos == LENGTH - 1
        return pos, jax.nn.one_hot(pos, LENGTH), at_end.astype(jnp.float32), at_end

    return make_vector_env(
        name="Chain-v0",
        obs_shape=(LENGTH,),
        obs_dtype="float32",
        action_space=Discrete(2),
        max_episode_steps=max_episode_steps,
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
    )


def make_dict_chain(num_envs: int = 1) -> Env:
    """The chain whose observation also holds ``"grid"``, zeros ``[2, 2, 2, 2]`` (rank 4)."""
    env = make_chain(num_envs)
    grid = ArraySpec("grid", (2, 2, 2, 2), "float32")
    with_grid = lambda obs: {"obs": obs, "grid": jnp.zeros((num_envs, *grid.shape))}

    def reset(key):
        state, ts = env.reset(key)
        return state, ts._replace(obs=with_grid(ts.obs))

    def step(state, action, key):
        state, ts = env.step(state, action, key)
        info = {**ts.info, "final_obs": with_grid(ts.info["final_obs"])}
        return state, ts._replace(obs=with_grid(ts.obs), info=info)

    spec = dataclasses.replace(env.spec, name="DictChain-v0", obs_extras=(grid,))
    return Env(spec=spec, reset=reset, step=step)


@dataclasses.dataclass(frozen=True)
class AlwaysRightConfig(Options):
    """Options of always_right.

    Attributes:
      action: the action it always takes.
    """

    action: int = option(1, ge=0)


@flax.struct.dataclass
class _State:
    step: jax.Array


def make_always_right(spec, **overrides) -> Agent:
    config = build_config(AlwaysRightConfig, overrides, "agent 'always_right'")

    def act(state, obs, carry, key, explore=True):
        return jnp.full(obs.shape[0], config.action, jnp.int32), carry, {}

    def update(state, rollout, key):
        return _State(state.step + rollout.reward.size), {}

    return Agent(init=lambda key: _State(jnp.zeros((), jnp.int32)), act=act, update=update)


class _Dense(nn.Module):
    features: int
    squeeze: bool = False
    as_int: bool = False

    @nn.compact
    def __call__(self, x):
        y = nn.Dense(self.features)(x.reshape(x.shape[0], -1))
        y = y[..., 0] if self.squeeze else y
        return (y > 0).astype(jnp.int32) if self.as_int else y


def user_mlp(obs_shape, hidden_sizes):
    return _Dense(hidden_sizes[-1])


def one_argument(obs_shape):  # the signature the README never gave
    return _Dense(8)


def flat_features(obs_shape, hidden_sizes):
    return _Dense(1, squeeze=True)


def int_features(obs_shape, hidden_sizes):
    return _Dense(4, as_int=True)


TORSOS = {
    "user_mlp": user_mlp,
    "one_argument": one_argument,
    "flat_features": flat_features,
    "int_features": int_features,
}
for _name, _fn in TORSOS.items():
    register_torso(_name, _fn)
jaxrl.envs.register("Chain-v0", make_chain, "a chain of 4 cells (tests/user_code.py)")
jaxrl.envs.register("DictChain-v0", make_dict_chain, "the chain with a rank-4 entry")
jaxrl.agents.register(
    "always_right", make_always_right, config=AlwaysRightConfig, description="always one action"
)


def forget() -> None:
    """Un-imports this module and drops what it registered."""
    from jaxrl import agents, envs
    from jaxrl.networks import spec

    sys.modules.pop(__name__, None)
    for name in TORSOS:
        spec._REGISTRY.pop(name, None)
    for name in ("always_right", *BAD_AGENTS):
        agents._REGISTRY.pop(name, None)
    for table in (envs._FACTORIES, envs._DESCRIPTIONS):
        for name in ("Chain-v0", "DictChain-v0", *BAD_ENVS):
            table.pop(name, None)


# Envs that break the contract, each registered here; ``check_env`` names what was expected.
def no_num_envs(length: int = 4) -> Env:
    return make_chain(1)


def not_an_env(num_envs: int = 1):
    return {"reset": None}


def wrong_obs(num_envs: int = 1) -> Env:
    env = make_chain(num_envs)
    return env._replace(spec=dataclasses.replace(env.spec, obs_shape=(LENGTH + 1,)))


BAD_ENVS = {"NoNumEnvs-v0": no_num_envs, "NotAnEnv-v0": not_an_env, "WrongObs-v0": wrong_obs}
for _name, _fn in BAD_ENVS.items():
    jaxrl.envs.register(_name, _fn, "breaks the env contract (tests/user_code.py)")


# Agents that break the contract.
def make_not_an_agent(spec, **overrides):
    return {"act": None}


def make_wrong_actions(spec, **overrides) -> Agent:
    agent = make_always_right(spec)
    return agent._replace(act=lambda s, obs, c, k, e=True: (jnp.zeros((obs.shape[0], 2)), c, {}))


BAD_AGENTS = {"not_an_agent": make_not_an_agent, "wrong_actions": make_wrong_actions}
for _name, _fn in BAD_AGENTS.items():
    jaxrl.agents.register(_name, _fn, description="breaks the agent contract")
