"""MBPO with a user's termination function (issue 57 part 4, Emote's ``ModelEnv``): a task
that terminates, the function given as ``package.module:function``.

The task is CartPole-v1's dynamics with a one-dimensional force in ``[-1, 1]``: a positive
force pushes right, any other left (``classic.cartpole_step`` with ``action > 0``), reward
1 per step, terminated where the cart leaves ``|x| <= 2.4`` or the pole ``|theta| <= 12``
degrees, 500 steps. Its termination function ``cartpole_done(next_obs)`` is the env's own
condition on the observation (the state); MBPO has none built in for it, so without one
the model's rollouts would never end (``--agent.termination never``), and every model
transition would promise another +1.

    nice -n 19 python -m jaxrl.train --agent mbpo \
        --env benchmarks.mbpo_termination:make_cartpole --seeds 3 \
        --agent.termination_fn benchmarks.mbpo_termination:cartpole_done ...
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxrl.envs import make_vector_env
from jaxrl.envs.classic import cartpole_reset, cartpole_step
from jaxrl.types import Box, Env

X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * math.pi / 360  # Gymnasium's CartPole-v1


def make_cartpole(num_envs: int = 1) -> Env:
    """CartPole-v1 with a force in ``Box(1,)`` of ``[-1, 1]`` (module docstring)."""

    def step_fn(state: jax.Array, action: jax.Array, key: jax.Array):
        return cartpole_step(state, (action[0] > 0).astype(jnp.int32), key)

    return make_vector_env(
        name="CartPoleForce-v1",
        obs_shape=(4,),
        obs_dtype="float32",
        action_space=Box((1,), (-1.0,), (1.0,)),
        max_episode_steps=500,
        num_envs=num_envs,
        reset_fn=cartpole_reset,
        step_fn=step_fn,
    )


def cartpole_done(next_obs: jax.Array) -> jax.Array:
    """``[R, 4]`` float32 -> ``[R]`` bool: the cart or the pole out of its limits."""
    x, theta = next_obs[..., 0], next_obs[..., 2]
    return (jnp.abs(x) > X_LIMIT) | (jnp.abs(theta) > THETA_LIMIT)
