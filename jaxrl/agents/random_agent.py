"""The random agent: uniformly random actions, no learning.

The smallest complete example of the ``Agent`` contract: ``init`` returns a state with no
parameters, ``act`` samples uniformly from the action space (``Discrete`` or ``Box``), and
``update`` only counts the environment steps it was shown.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import (
    Agent,
    Box,
    EnvSpec,
    Obs,
    Transition,
    action_mask,
    main_obs,
    shared_field,
)
from jaxrl.validation import build_config


@dataclasses.dataclass(frozen=True)
class RandomConfig:
    """The random agent has no options."""


@flax.struct.dataclass
class RandomState:
    step: jax.Array = shared_field()  # int32 env steps seen by update


def make_random(spec: EnvSpec, **overrides: Any) -> Agent:
    """Returns an agent acting uniformly at random in ``spec.action_space``."""
    build_config(RandomConfig, overrides, "agent 'random'")
    space = spec.action_space

    def init(key: jax.Array) -> RandomState:
        del key
        return RandomState(step=jnp.zeros((), jnp.int32))

    def act(state: RandomState, obs: Obs, carry, key: jax.Array, explore: bool = True):
        del state, explore
        n = main_obs(obs).shape[0]
        mask = action_mask(obs)
        if isinstance(space, Box):
            low = jnp.asarray(space.low, jnp.float32).reshape(space.shape)
            high = jnp.asarray(space.high, jnp.float32).reshape(space.shape)
            action = jax.random.uniform(key, (n, *space.shape), minval=low, maxval=high)
        elif mask is not None:  # uniform over the legal actions
            logits = jnp.where(mask, 0.0, -jnp.inf)
            action = jax.random.categorical(key, logits).astype(jnp.int32)
        else:
            action = jax.random.randint(key, (n,), 0, space.n, dtype=jnp.int32)
        return action, carry, {}

    def update(state: RandomState, rollout: Transition, key: jax.Array):
        del key
        steps = rollout.reward.shape[0] * rollout.reward.shape[1]
        return dataclasses.replace(state, step=state.step + steps), {}

    return Agent(init=init, act=act, update=update)
