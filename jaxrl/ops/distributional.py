"""Categorical (C51) distributional RL: support, projection, loss and n-step targets.

A return distribution is categorical on a fixed support of ``K`` evenly spaced atoms
``z_i = v_min + i dz``, ``dz = (v_max - v_min) / (K - 1)``, with probabilities given by a
softmax over the atom axis of a network's logits.

References:
  Bellemare, Dabney & Munos (2017), "A Distributional Perspective on Reinforcement
  Learning", ICML; sec. 4 and Algorithm 1 (categorical projection and loss).
  Hessel et al. (2018), "Rainbow: Combining Improvements in Deep Reinforcement
  Learning", AAAI; multi-step distributional targets, double-Q action selection, and
  the cross-entropy as the prioritized-replay priority.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

Array = jax.Array


def categorical_support(v_min: float, v_max: float, num_atoms: int) -> Array:
    """The C51 support ``z_i = v_min + i (v_max - v_min) / (K - 1)``, ``i = 0..K-1``.

    Args:
      v_min: smallest atom (Bellemare et al. 2017 use -10 on Atari).
      v_max: largest atom, ``> v_min`` (10 on Atari).
      num_atoms: ``K >= 2``, static (51 in C51 and Rainbow).

    Returns:
      ``[K]`` float32, ``jnp.linspace(v_min, v_max, K)``.
    """
    if not isinstance(num_atoms, int) or num_atoms < 2:
        raise ValueError(f"num_atoms must be a Python int >= 2, got {num_atoms!r}")
    if not v_min < v_max:
        raise ValueError(f"need v_min < v_max, got v_min={v_min}, v_max={v_max}")
    return jnp.linspace(v_min, v_max, num_atoms, dtype=jnp.float32)


def categorical_q_values(logits: ArrayLike, support: ArrayLike) -> Array:
    r"""Expected values of categorical distributions: ``Q = sum_i z_i softmax_i(logits)``.

    Args:
      logits: ``[..., K]`` float, e.g. ``[B, A, K]`` from ``CategoricalHead``.
      support: ``[K]`` atoms ``z_i``.

    Returns:
      ``[...]`` float (e.g. ``[B, A]``): :math:`\sum_i z_i\, p_i`,
      :math:`p = \mathrm{softmax}(\text{logits})` over the last axis.
    """
    logits = jnp.asarray(logits)
    support = jnp.asarray(support)
    probs = jax.nn.softmax(logits, axis=-1)
    return jnp.sum(probs * support.astype(probs.dtype), axis=-1)


def categorical_projection(
    support: ArrayLike, target_support: ArrayLike, target_probs: ArrayLike
) -> Array:
    r"""Project a categorical distribution on arbitrary atoms onto the fixed support.

    The projection :math:`\Phi` of Bellemare et al. (2017), Algorithm 1: a distribution
    with mass ``p_j`` at ``Tz_j`` (typically ``Tz_j = r + gamma^n z_j``, or ``Tz_j = r``
    after a termination) is mapped onto the support ``z_0 < ... < z_{K-1}`` by

    .. math::
        \hat{T}z_j = \mathrm{clip}(Tz_j, v_{min}, v_{max}), \quad
        b_j = (\hat{T}z_j - v_{min}) / \Delta z, \quad l = \lfloor b_j \rfloor, \quad
        u = \lceil b_j \rceil,

    giving mass ``p_j (u - b_j)`` to atom ``l`` and ``p_j (b_j - l)`` to atom ``u``, and
    all of ``p_j`` to ``l`` when ``l = u`` (``Tz_j`` on an atom; Algorithm 1 as printed
    loses that mass). Equivalently, since the support is evenly spaced,

    .. math::
        (\Phi p)_i = \sum_j \mathrm{clip}\bigl(1 - |b_j - i|,\ 0,\ 1\bigr)\, p_j,

    which is how it is computed here (vectorised, as ``rlax.categorical_l2_project``):
    ``O(K^2)`` per row and no scatter. Mass outside ``[v_min, v_max]`` lands on the end
    atoms, so a row of ``target_probs`` summing to 1 gives a row summing to 1.

    Args:
      support: ``[K]`` float, ``K >= 2`` evenly spaced increasing atoms (e.g.
        ``categorical_support``); only ``support[0]`` and ``support[-1]`` are read.
      target_support: ``[..., K]`` float, the atoms ``Tz_j`` of the distribution to
        project; any values (clipped to the support's range).
      target_probs: ``[..., K]`` float probabilities ``p_j`` (broadcastable with
        ``target_support``).

    Returns:
      ``[..., K]`` probabilities on ``support``, dtype of ``target_probs`` (at least
      float32). Differentiable in ``target_probs``; stop the gradient at the call site
      when used as a target.
    """
    support = jnp.asarray(support)
    target_support = jnp.asarray(target_support)
    target_probs = jnp.asarray(target_probs)
    if support.ndim != 1 or support.shape[0] < 2:
        raise ValueError(f"support must have shape [K] with K >= 2, got {support.shape}")
    k = support.shape[0]
    if target_support.shape[-1:] != (k,) or target_probs.shape[-1:] != (k,):
        raise ValueError(
            f"target_support and target_probs must have shape [..., {k}], got "
            f"{target_support.shape} and {target_probs.shape}"
        )
    dtype = jnp.result_type(target_probs.dtype, jnp.float32)
    v_min = support[0].astype(dtype)
    v_max = support[-1].astype(dtype)
    delta_z = (v_max - v_min) / (k - 1)
    tz = jnp.clip(target_support.astype(dtype), v_min, v_max)
    b = (tz - v_min) / delta_z  # [..., K] (source atoms j), in [0, K-1]
    atoms = jnp.arange(k, dtype=dtype)[:, None]  # [K (destination i), 1]
    weights = jnp.clip(1.0 - jnp.abs(b[..., None, :] - atoms), 0.0, 1.0)  # [..., K_i, K_j]
    return jnp.sum(weights * target_probs.astype(dtype)[..., None, :], axis=-1)


def categorical_td_loss(logits: ArrayLike, target_probs: ArrayLike) -> Array:
    r"""Cross-entropy of projected target distributions under predicted logits.

    .. math::
        L = -\sum_i (\Phi \hat{T} Z)_i \log p_i(s_t, a_t), \quad
        p(s_t, a_t) = \mathrm{softmax}(\text{logits}),

    the C51 loss (Bellemare et al. 2017, Algorithm 1, last line), which Rainbow (Hessel
    et al. 2018) also uses as the prioritized-replay priority. Computed with
    ``jax.nn.log_softmax`` for stability. The target is wrapped in
    ``jax.lax.stop_gradient``: gradients flow only into ``logits``, where
    ``dL/dlogits = softmax(logits) - target`` for targets summing to 1.

    Args:
      logits: ``[..., K]`` float, the online network's logits for the taken action.
      target_probs: ``[..., K]`` float target probabilities (e.g. from
        ``categorical_double_q_target``).

    Returns:
      ``[...]`` float losses (per transition, e.g. ``[B]``); reduce at the call site
      (mean, or weighted by importance weights).
    """
    logits = jnp.asarray(logits)
    target_probs = jax.lax.stop_gradient(jnp.asarray(target_probs))
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(target_probs.astype(log_p.dtype) * log_p, axis=-1)


def categorical_double_q_target(
    next_logits_target: ArrayLike,
    next_q_selector: ArrayLike | None,
    reward_sum: ArrayLike,
    bootstrap_discount: ArrayLike,
    support: ArrayLike,
) -> Array:
    r"""Projected n-step categorical target distribution, with (double) Q selection.

    For each transition, with ``a* = argmax_a next_q_selector[a]`` and
    ``p = softmax(next_logits_target[a*])`` (the target network's distribution at the
    bootstrap observation),

    .. math::
        Tz_j = R + \gamma_{boot}\, z_j, \qquad
        \text{target} = \Phi\bigl(Tz, p\bigr)
        \quad\text{(``categorical_projection``)},

    where ``R = reward_sum`` and ``gamma_boot = bootstrap_discount`` come from
    ``ops.n_step_bootstrap`` (``gamma^m``, or 0 after a termination, so that a terminal
    target is all mass at ``clip(R)``). This is the multi-step distributional target of
    Rainbow (Hessel et al. 2018): pass the online network's expected Q values as
    ``next_q_selector`` for double-Q selection (Rainbow's choice), or the target
    network's own (``categorical_q_values(next_logits_target, support)``, or ``None``)
    for C51's ``argmax`` (Bellemare et al. 2017, Algorithm 1). Ties pick the lowest
    action index.

    Args:
      next_logits_target: ``[B, A, K]`` target-network logits at the bootstrap
        observation.
      next_q_selector: ``[B, A]`` values whose argmax selects the action, or ``None`` to
        use ``categorical_q_values(next_logits_target, support)``.
      reward_sum: ``[B]`` float, discounted reward sum of the (cut) n-step window.
      bootstrap_discount: ``[B]`` float, ``gamma^m`` or 0.
      support: ``[K]`` evenly spaced atoms.

    Returns:
      ``[B, K]`` float32 target probabilities on ``support`` (rows sum to 1), with the
      gradient stopped. (Leading ``[B]`` may be any batch shape ``[...]``.)
    """
    next_logits_target = jnp.asarray(next_logits_target)
    support = jnp.asarray(support)
    if next_q_selector is None:
        next_q_selector = categorical_q_values(next_logits_target, support)
    next_q_selector = jnp.asarray(next_q_selector)
    if next_q_selector.shape != next_logits_target.shape[:-1]:
        raise ValueError(
            f"next_q_selector must have shape {next_logits_target.shape[:-1]} ([B, A]), "
            f"got {next_q_selector.shape}"
        )
    next_action = jnp.argmax(next_q_selector, axis=-1)  # [B]
    next_logits = jnp.take_along_axis(next_logits_target, next_action[..., None, None], axis=-2)[
        ..., 0, :
    ]  # [B, K]
    next_probs = jax.nn.softmax(next_logits.astype(jnp.float32), axis=-1)
    reward_sum = jnp.asarray(reward_sum, jnp.float32)
    bootstrap_discount = jnp.asarray(bootstrap_discount, jnp.float32)
    target_support = reward_sum[..., None] + bootstrap_discount[..., None] * support.astype(
        jnp.float32
    )
    return jax.lax.stop_gradient(categorical_projection(support, target_support, next_probs))
