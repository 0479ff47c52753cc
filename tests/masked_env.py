"""A tiny JAX-native env with dictionary observations and a legal-action mask, for tests.

Each step shows a fresh random set of legal actions among ``NUM_ACTIONS`` (at least one):
``obs = {"obs": mask as float32 [A], "action_mask": bool [A]}``. A legal action pays +1,
an illegal one -1; an episode terminates after ``LENGTH`` steps. So an agent that honours
the mask scores exactly ``LENGTH`` per episode, and any illegal action shows in the return.
"""

import jax
import jax.numpy as jnp

from jaxrl.envs.core import make_vector_env
from jaxrl.types import ACTION_MASK, OBS, ArraySpec, Discrete, Env

NUM_ACTIONS = 4
LENGTH = 5


def _mask(key: jax.Array) -> jax.Array:
    """A random legal set with at least one legal action (``[A]`` bool)."""
    coin_key, forced_key = jax.random.split(key)
    forced = jax.nn.one_hot(jax.random.randint(forced_key, (), 0, NUM_ACTIONS), NUM_ACTIONS)
    return jax.random.bernoulli(coin_key, 0.3, (NUM_ACTIONS,)) | forced.astype(bool)


def _obs(mask: jax.Array) -> dict:
    return {OBS: mask.astype(jnp.float32), ACTION_MASK: mask}


def make_masked_env(num_envs: int = 3, max_episode_steps: int = 100) -> Env:
    def reset_fn(key):
        mask = _mask(key)
        return (jnp.zeros((), jnp.int32), mask), _obs(mask)

    def step_fn(state, action, key):
        t, mask = state
        reward = jnp.where(mask[action], 1.0, -1.0)
        new_mask = _mask(key)
        return (t + 1, new_mask), _obs(new_mask), reward, t + 1 >= LENGTH

    return make_vector_env(
        name="LegalMoves-v0",
        obs_shape=(NUM_ACTIONS,),
        obs_dtype="float32",
        action_space=Discrete(NUM_ACTIONS),
        max_episode_steps=max_episode_steps,
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
        obs_extras=(ArraySpec(ACTION_MASK, (NUM_ACTIONS,), "bool"),),
    )
