"""Q-learning TD errors over n-step targets (rlax-style: arrays in, arrays out)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_learning_td_error(
    q_taken: jax.Array,
    next_q_target: jax.Array,
    reward_sum: jax.Array,
    bootstrap_discount: jax.Array,
    next_q_online: jax.Array | None = None,
) -> jax.Array:
    """TD error of (double) Q-learning with an n-step target.

    ``delta = q_taken - stop_gradient(reward_sum + bootstrap_discount * v)`` where
    ``v = max_a next_q_target[a]`` (Mnih et al. 2015), or, when ``next_q_online`` is given,
    ``v = next_q_target[argmax_a next_q_online[a]]`` (double DQN, van Hasselt et al. 2016).
    ``reward_sum`` and ``bootstrap_discount`` come from ``ops.n_step_bootstrap``.

    Args:
      q_taken: ``[B]`` Q(s_t, a_t) of the online network.
      next_q_target: ``[B, A]`` target-network Q at the bootstrap observation.
      reward_sum: ``[B]`` discounted reward sum of the (cut) n-step window.
      bootstrap_discount: ``[B]`` gamma^m, or 0 after a termination.
      next_q_online: ``[B, A]`` online-network Q at the bootstrap observation, or None.

    Returns:
      ``[B]`` float32 TD errors; gradients flow only through ``q_taken``.
    """
    selector = next_q_target if next_q_online is None else next_q_online
    next_action = jnp.argmax(selector, axis=-1)
    next_value = jnp.take_along_axis(next_q_target, next_action[..., None], axis=-1)[..., 0]
    target = reward_sum + bootstrap_discount * next_value
    return q_taken - jax.lax.stop_gradient(target)
