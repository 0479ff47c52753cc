"""Multi-step (n-step) bootstrapped return targets and generalized advantage estimation.

Termination and truncation are kept apart, as everywhere in jaxrl: a return stops at the
first step that ends an episode; it is *not* bootstrapped past a termination (the
terminal state has value zero) and *is* bootstrapped from the true last observation at a
truncation (the time limit is not part of the MDP).

References:
  Sutton & Barto (2018), "Reinforcement Learning: An Introduction", 2nd ed., ch. 7
  (n-step TD, eq. 7.1).
  Hessel et al. (2018), "Rainbow: Combining Improvements in Deep Reinforcement
  Learning", AAAI (multi-step targets for DQN).
  Pardo et al. (2018), "Time Limits in Reinforcement Learning", ICML (bootstrapping at
  time-limit truncation).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array


class NStepTarget(NamedTuple):
    """The parts of an n-step TD target, for windows of shape ``[..., n]``.

    The target is ``reward_sum + bootstrap_discount * V(next_obs[..., bootstrap_index])``.

    Attributes:
      reward_sum: ``[...]`` float, ``sum_{k<m} discount^k r_k``.
      bootstrap_discount: ``[...]`` float, ``discount^m * (1 - terminated[m-1])``; zero when
        the window ends at a termination.
      bootstrap_index: ``[...]`` int32, ``m - 1``: the step in the window whose
        ``next_obs`` is bootstrapped from.
    """

    reward_sum: Array
    bootstrap_discount: Array
    bootstrap_index: Array


def n_step_bootstrap(
    rewards: ArrayLike,
    terminated: ArrayLike,
    truncated: ArrayLike,
    discount: ArrayLike,
) -> NStepTarget:
    r"""Reward sum and bootstrap coefficient of an n-step target, per window of n steps.

    The last axis indexes ``n`` consecutive steps of one environment, ``k = 0..n-1``;
    step ``k`` is the transition ``(s_k, a_k, r_k, s_{k+1})`` with flags ``terminated[k]``
    and ``truncated[k]`` saying that ``s_{k+1}`` ends the episode. Let

    .. math::
        m = 1 + \min\{k : \mathrm{terminated}_k \lor \mathrm{truncated}_k\}
        \quad (m = n \text{ if there is none}),

    the number of steps taken before the window is cut (steps after ``m-1`` belong to
    the next episode and are ignored). Then

    .. math::
        G = \sum_{k<m} \gamma^k r_k + \gamma^m (1 - \mathrm{terminated}_{m-1})\,
            V(s_m),

    the n-step return of Sutton & Barto (2018) eq. 7.1 as used for multi-step DQN by
    Hessel et al. (2018), truncated at an episode end: no bootstrap after a termination,
    bootstrap from the true final observation after a truncation (Pardo et al., 2018).
    With ``n = 1`` this is the one-step target ``r + gamma (1 - terminated) V(s')``.

    Args:
      rewards: ``[..., n]`` float rewards.
      terminated: ``[..., n]`` bool (or 0/1) termination flags.
      truncated: ``[..., n]`` bool (or 0/1) truncation flags.
      discount: ``gamma``, a Python float or a scalar (or ``[...]``-broadcastable) array;
        may be traced, e.g. read from ``state.hparams`` and vmapped over.

    Returns:
      ``NStepTarget(reward_sum [...], bootstrap_discount [...], bootstrap_index [...])``;
      the two floats have the dtype of ``rewards``, the index is int32 in ``[0, n)``.
      Cost: ``O(n)`` per window, fully vectorised.
    """
    rewards = jnp.asarray(rewards)
    if not jnp.issubdtype(rewards.dtype, jnp.floating):
        rewards = rewards.astype(jnp.float32)
    terminated = jnp.asarray(terminated).astype(bool)
    truncated = jnp.asarray(truncated).astype(bool)
    if rewards.ndim < 1 or rewards.shape[-1] < 1:
        raise ValueError(f"rewards must have shape [..., n] with n >= 1, got {rewards.shape}")
    if terminated.shape != rewards.shape or truncated.shape != rewards.shape:
        raise ValueError(
            "rewards, terminated and truncated must have the same shape [..., n], got "
            f"{rewards.shape}, {terminated.shape}, {truncated.shape}"
        )
    n = rewards.shape[-1]
    dtype = rewards.dtype
    discount = jnp.asarray(discount, dtype)

    done = terminated | truncated
    # A step k is inside the window iff no episode ended at any step before it.
    ended_before = jnp.cumsum(done, axis=-1, dtype=jnp.int32) - done.astype(jnp.int32)
    inside = ended_before == 0  # [..., n], k < m
    m = jnp.sum(inside, axis=-1, dtype=jnp.int32)  # [...], in [1, n]
    last = m - 1

    # powers[..., k] = discount^k for k = 0..n, by repeated multiplication (exact at
    # discount = 0 and differentiable everywhere, unlike a float power).
    batch_shape = jnp.broadcast_shapes(rewards.shape[:-1], discount.shape)
    factors = jnp.broadcast_to(discount[..., None], (*batch_shape, n))
    powers = jnp.cumprod(jnp.concatenate([jnp.ones_like(factors[..., :1]), factors], -1), -1)
    reward_sum = jnp.sum(jnp.where(inside, powers[..., :n] * rewards, 0), axis=-1)

    m_b = jnp.broadcast_to(m, batch_shape)
    discount_m = jnp.take_along_axis(powers, m_b[..., None], axis=-1)[..., 0]
    terminated_last = jnp.take_along_axis(terminated, last[..., None], axis=-1)[..., 0]
    bootstrap_discount = jnp.where(terminated_last, 0, discount_m)
    return NStepTarget(
        reward_sum=reward_sum.astype(dtype),
        bootstrap_discount=bootstrap_discount.astype(dtype),
        bootstrap_index=last.astype(jnp.int32),
    )


def gae(
    rewards: ArrayLike,
    values: ArrayLike,
    next_values: ArrayLike,
    terminated: ArrayLike,
    truncated: ArrayLike,
    discount: ArrayLike,
    gae_lambda: ArrayLike,
) -> tuple[Array, Array]:
    r"""Generalized advantage estimates and lambda-returns over time-major rollouts.

    With ``d_t = terminated_t or truncated_t`` (the episode ended after step ``t``),

    .. math::
        \delta_t = r_t + \gamma (1 - \mathrm{terminated}_t)\, V(s'_t) - V(s_t), \qquad
        A_t = \delta_t + \gamma \lambda (1 - d_t)\, A_{t+1}, \quad A_T = 0,

    and the value targets are ``R_t = A_t + V(s_t)`` (Schulman et al. 2016, "High-Dimensional
    Continuous Control Using Generalized Advantage Estimation", eq. 16). ``V(s'_t)`` is
    the value of the *true* next observation (``info["final_obs"]``), so a truncated step
    bootstraps from its real last state (Pardo et al. 2018) and a terminated step does
    not; no advantage flows across an episode end, and the last step of the rollout
    bootstraps from ``next_values[T-1]``.

    Args:
      rewards, values, next_values: ``[T, ...]`` float.
      terminated, truncated: ``[T, ...]`` bool.
      discount: ``gamma``; gae_lambda: ``lambda``; scalars (may be traced).

    Returns:
      ``(advantages [T, ...], returns [T, ...])`` float32. One reverse ``lax.scan``.
    """
    rewards, next_values, terminated, done, discount = rollout_arrays(
        rewards, next_values, terminated, truncated, discount
    )
    values = jnp.asarray(values, jnp.float32)
    gae_lambda = jnp.asarray(gae_lambda, jnp.float32)
    deltas = rewards + discount * jnp.where(terminated, 0.0, next_values) - values
    advantages = reverse_accumulate(deltas, jnp.where(done, 0.0, discount * gae_lambda))
    return advantages, advantages + values


def rollout_arrays(
    rewards: ArrayLike,
    next_values: ArrayLike,
    terminated: ArrayLike,
    truncated: ArrayLike,
    discount: ArrayLike,
) -> tuple[Array, Array, Array, Array, Array]:
    """``(rewards, next_values, terminated, done, discount)`` of a time-major rollout as
    float32 arrays and bool flags, with ``done = terminated | truncated`` (the episode
    ended after step ``t``): the inputs of GAE, Q(lambda) and V-trace."""
    terminated = jnp.asarray(terminated).astype(bool)
    return (
        jnp.asarray(rewards, jnp.float32),
        jnp.asarray(next_values, jnp.float32),
        terminated,
        terminated | jnp.asarray(truncated).astype(bool),
        jnp.asarray(discount, jnp.float32),
    )


def reverse_accumulate(deltas: Array, coefs: Array) -> Array:
    """``x_t = deltas_t + coefs_t x_{t+1}`` backwards from ``x_T = 0``, over the leading
    (time) axis of ``[T, ...]`` arrays: one reverse ``lax.scan``. GAE's advantages and
    V-trace's ``v_s - V(x_s)`` (:mod:`jaxrl.ops.vtrace`) are this sum."""

    def step(next_x, inputs):
        delta, coef = inputs
        x = delta + coef * next_x
        return x, x

    _, xs = jax.lax.scan(step, jnp.zeros_like(deltas[0]), (deltas, coefs), reverse=True)
    return xs


def q_lambda_returns(
    rewards: ArrayLike,
    next_values: ArrayLike,
    terminated: ArrayLike,
    truncated: ArrayLike,
    discount: ArrayLike,
    q_lambda: ArrayLike,
) -> Array:
    r"""Peng's Q(lambda) returns over a time-major rollout, as PQN regresses on (Gallici et
    al. 2024, "Simplifying Deep Temporal Difference Learning", sec. 4 and Algorithm 1;
    Peng & Williams 1996):

    .. math::
        G_t = r_t + \gamma (1 - \mathrm{terminated}_t)
              \big[(1 - c_t)\, \max_a Q(s'_t, a) + c_t\, G_{t+1}\big],

    with :math:`c_t = \lambda` while the episode goes on and :math:`c_t = 0` where it ended
    after step ``t`` (terminated or truncated: a truncated step bootstraps from the max
    Q of its true last observation) and at the rollout's last step. ``next_values`` are
    :math:`\max_a Q(s'_t, a)` over the legal actions of the true next observations.

    Args:
      rewards, next_values: ``[T, ...]`` float.
      terminated, truncated: ``[T, ...]`` bool.
      discount: ``gamma``; q_lambda: ``lambda``; scalars (may be traced).

    Returns:
      ``[T, ...]`` float32 returns. One reverse ``lax.scan``.
    """
    rewards, next_values, terminated, done, discount = rollout_arrays(
        rewards, next_values, terminated, truncated, discount
    )
    coef = jnp.where(done, 0.0, jnp.asarray(q_lambda, jnp.float32))
    coef = coef.at[-1].set(0.0)
    bootstrap = jnp.where(terminated, 0.0, discount)

    def step(next_return, inputs):
        reward, next_value, c, gamma = inputs
        ret = reward + gamma * ((1 - c) * next_value + c * next_return)
        return ret, ret

    inputs = (rewards, next_values, coef, bootstrap)
    _, returns = jax.lax.scan(step, jnp.zeros_like(rewards[0]), inputs, reverse=True)
    return returns
