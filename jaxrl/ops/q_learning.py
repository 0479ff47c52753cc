"""Q-learning TD errors over n-step targets and the Munchausen target (rlax-style: arrays
in, arrays out)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import FloatOrArray


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


def _masked_log_policy(q: jax.Array, tau: ArrayLike, mask: jax.Array | None) -> jax.Array:
    """``log softmax(q / tau)`` over the legal actions of ``mask`` (all when None); 0 at
    illegal actions (their probability is 0)."""
    logits = q / tau
    if mask is None:
        return jax.nn.log_softmax(logits, axis=-1)
    log_pi = jax.nn.log_softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    return jnp.where(mask, log_pi, 0.0)


def munchausen_bonus(
    q: jax.Array,
    action: jax.Array,
    m_alpha: FloatOrArray,
    m_tau: ArrayLike,
    l_0: ArrayLike,
    mask: jax.Array | None = None,
) -> jax.Array:
    r"""The Munchausen term added to the reward (Vieillard, Pietquin & Geist 2020,
    "Munchausen Reinforcement Learning", NeurIPS, eq. 3 and sec. 3):
    :math:`\alpha\, [\tau \log \pi(a \mid s)]_{l_0}^{0}` with
    :math:`\pi = \mathrm{softmax}(q / \tau)` over the legal actions of ``mask``.

    Args:
      q: ``[B, A]`` target-network Q at the state the action was taken in.
      action: ``[B]`` int, the action taken.
      m_alpha, m_tau, l_0: the scaling ``alpha``, the entropy temperature ``tau`` and the
        clipping floor ``l_0 < 0`` (paper: 0.9, 0.03, -1).
      mask: ``[B, A]`` bool legal actions at that state, or None.

    Returns:
      ``[B]`` float32, in ``[m_alpha * l_0, 0]``.
    """
    log_pi = _masked_log_policy(q, m_tau, mask)
    taken = jnp.take_along_axis(log_pi, action[..., None].astype(jnp.int32), axis=-1)[..., 0]
    return m_alpha * jnp.clip(m_tau * taken, l_0, 0.0)


def soft_bootstrap_value(
    q: jax.Array, m_tau: ArrayLike, mask: jax.Array | None = None
) -> jax.Array:
    r"""The soft value of the next state that M-DQN bootstraps from:
    :math:`\sum_{a'} \pi(a' \mid s') \big(q(s', a') - \tau \log \pi(a' \mid s')\big)`,
    :math:`\pi = \mathrm{softmax}(q / \tau)` over the legal actions of ``mask``
    (Vieillard et al. 2020, eq. 3). ``q``: ``[B, A]``; returns ``[B]`` float32."""
    log_pi = _masked_log_policy(q, m_tau, mask)
    pi = jnp.exp(log_pi)
    if mask is not None:
        pi = jnp.where(mask, pi, 0.0)
    return (pi * (q - m_tau * log_pi)).sum(axis=-1)


def munchausen_target(
    q_target: jax.Array,
    action: jax.Array,
    reward: jax.Array,
    discount: jax.Array,
    next_q_target: jax.Array,
    m_alpha: FloatOrArray = 0.9,
    m_tau: ArrayLike = 0.03,
    l_0: ArrayLike = -1.0,
    mask: jax.Array | None = None,
    next_mask: jax.Array | None = None,
) -> jax.Array:
    r"""The M-DQN regression target (Vieillard et al. 2020, eq. 3):

    .. math::
        y = r + \alpha [\tau \log \pi(a|s)]_{l_0}^0
            + \gamma \sum_{a'} \pi(a'|s') \big(q(s', a') - \tau \log \pi(a'|s')\big),

    ``munchausen_bonus`` plus ``soft_bootstrap_value``, both on the target network.
    Shapes: ``q_target``/``next_q_target`` ``[B, A]``, ``action``/``reward``/``discount``
    ``[B]`` (``discount`` is ``gamma`` or 0 at a termination); returns ``[B]``
    (stop-gradient)."""
    bonus = munchausen_bonus(q_target, action, m_alpha, m_tau, l_0, mask)
    soft = soft_bootstrap_value(next_q_target, m_tau, next_mask)
    return jax.lax.stop_gradient(reward + bonus + discount * soft)
