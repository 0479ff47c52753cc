"""Policy-gradient losses: PPO's clipped surrogate, A2C's policy gradient, value losses.

All take flat batches ``[B]`` and return scalar float32 means, to be *minimized*.

References:
  Schulman et al. (2017), "Proximal Policy Optimization Algorithms" (eq. 7 and 9).
  Mnih et al. (2016), "Asynchronous Methods for Deep Reinforcement Learning" (A3C/A2C).
  Andrychowicz et al. (2021), "What Matters in On-Policy RL" (value clipping).
"""

from __future__ import annotations

from typing import cast

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import FloatOrArray

Array = jax.Array


def normalize_advantages(advantages: Array, eps: float = 1e-8) -> Array:
    """``(A - mean(A)) / (std(A) + eps)`` over the whole array (a minibatch in PPO)."""
    return (advantages - advantages.mean()) / (advantages.std() + eps)


def ppo_clip_loss(
    log_prob: Array, old_log_prob: Array, advantages: Array, clip: ArrayLike
) -> tuple[Array, Array, Array]:
    r"""PPO's clipped surrogate, negated:

    .. math::
        L = -\mathbb{E}\left[\min\left(\rho A,\
            \mathrm{clip}(\rho, 1 - \epsilon, 1 + \epsilon) A\right)\right],
        \qquad \rho = \exp(\log\pi - \log\pi_{\mathrm{old}}).

    Args:
      log_prob: ``[B]`` under the current policy (differentiated).
      old_log_prob: ``[B]`` under the policy that acted.
      advantages: ``[B]``.
      clip: ``epsilon`` (machin's ``surrogate_loss_clip``).

    Returns:
      ``(loss, approx_kl, clip_fraction)``, scalars: ``approx_kl`` is the estimator
      ``E[(rho - 1) - log rho]`` (Schulman 2020; CleanRL) and ``clip_fraction`` the share
      of samples with ``|rho - 1| > epsilon``; both carry no gradient.
    """
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip, 1.0 + clip) * advantages
    loss = -jnp.minimum(unclipped, clipped).mean()
    ratio_sg, log_ratio_sg = jax.lax.stop_gradient(ratio), jax.lax.stop_gradient(log_ratio)
    approx_kl = ((ratio_sg - 1.0) - log_ratio_sg).mean()
    clip_fraction = (jnp.abs(ratio_sg - 1.0) > clip).mean()
    return loss, approx_kl, clip_fraction


def policy_gradient_loss(log_prob: Array, advantages: Array) -> Array:
    r"""The policy-gradient (A2C) loss ``L = -E[log pi(a|s) A]``; ``advantages`` are
    treated as constants (their gradient is stopped)."""
    return -(log_prob * jax.lax.stop_gradient(advantages)).mean()


def value_loss(
    values: Array,
    returns: Array,
    old_values: Array | None = None,
    clip: FloatOrArray | None = None,
) -> Array:
    r"""``0.5 E[(V - R)^2]``; with ``clip``, PPO's clipped value loss
    ``0.5 E[max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)]`` (the OpenAI
    baselines' PPO2, CleanRL's ``clip_vloss``). ``returns`` are treated as constants."""
    returns = jax.lax.stop_gradient(returns)
    losses = jnp.square(values - returns)
    if clip is not None:
        old = cast(Array, old_values)  # given with clip
        clipped = old + jnp.clip(values - old, -clip, clip)
        losses = jnp.maximum(losses, jnp.square(clipped - returns))
    return 0.5 * losses.mean()
