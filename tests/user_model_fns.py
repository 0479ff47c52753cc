"""MBPO's model functions as a user writes them (``--agent.termination_fn MODULE:FN``),
in a module that registers nothing when imported (``tests/user_code.py`` does)."""

import jax.numpy as jnp


def mbpo_done(next_obs):  # Emote's form: the next observations only
    return next_obs[..., 0] > 0.5


def mbpo_never(next_obs):
    return jnp.zeros(next_obs.shape[:-1], bool)


def mbpo_done_of_action(action, next_obs):  # mbrl-lib's form
    return action[..., 0] > 1.0


def mbpo_reward(action, next_obs):
    return -(next_obs**2).sum(-1) - 0.1 * action[..., 0]


def mbpo_reward_per_dim(action, next_obs):  # the wrong shape: [R, O], not [R]
    return next_obs
