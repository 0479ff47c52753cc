"""Action-selection rules for exploration."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import masked_argmax

Array = jax.Array


def epsilon_greedy(key: jax.Array, q_values: ArrayLike, epsilon: ArrayLike) -> Array:
    r"""Epsilon-greedy actions from action values (Mnih et al., 2015).

    Independently for each row: with probability ``epsilon`` an action drawn uniformly
    from ``{0, ..., A-1}``, otherwise ``argmax_a q[a]`` (ties go to the lowest index, as
    ``jnp.argmax``). The greedy action is therefore chosen with probability
    ``1 - epsilon + epsilon / A``.

    Args:
      key: PRNG key.
      q_values: ``[N, A]`` float (any leading shape ``[..., A]`` works).
      epsilon: float or scalar array in ``[0, 1]`` (may be traced, e.g. from a schedule
        or ``state.hparams``), or an array broadcastable to ``[N]``.

    Returns:
      ``[N]`` int32 actions.
    """
    q_values = jnp.asarray(q_values)
    batch_shape, num_actions = q_values.shape[:-1], q_values.shape[-1]
    explore_key, action_key = jax.random.split(key)
    explore = jax.random.uniform(explore_key, batch_shape) < epsilon
    random_actions = jax.random.randint(action_key, batch_shape, 0, num_actions, jnp.int32)
    greedy_actions = jnp.argmax(q_values, axis=-1).astype(jnp.int32)
    return jnp.where(explore, random_actions, greedy_actions)


def masked_epsilon_greedy(
    key: jax.Array, q_values: jax.Array, epsilon: jax.Array, mask: jax.Array | None
) -> jax.Array:
    """``ops.epsilon_greedy`` among legal actions: the random action is uniform over the
    legal ones, the greedy one the best legal one. ``mask`` None: exactly
    ``ops.epsilon_greedy`` (same keys, same draws)."""
    if mask is None:
        return epsilon_greedy(key, q_values, epsilon)
    explore_key, action_key = jax.random.split(key)
    explore = jax.random.uniform(explore_key, q_values.shape[:-1]) < epsilon
    logits = jnp.where(mask, 0.0, -jnp.inf)
    random_actions = jax.random.categorical(action_key, logits).astype(jnp.int32)
    return jnp.where(explore, random_actions, masked_argmax(q_values, mask))
