"""R2D2's learning from replayed sequences, as pure functions of Q-values and flags.

A replayed sequence (``buffers/sequence.py``) is ``length + 1`` rows of one env from its
stored carry: ``burn_in`` rows that only warm the carry up, ``K = length - burn_in`` rows
that learn, and one row whose observation is the last step's next one. Kapturowski et al.
2019 ("Recurrent Experience Replay in Distributed Reinforcement Learning", section 3):

* ``burn_in_unroll``: the network unrolled over the burn-in prefix from the stored carry
  without gradient, then over the rest from the carry it reached;
* ``sequence_targets``: per learning step ``k``, the n-step double-Q target with the
  value rescaling ``h`` (``ops/value_rescaling.py``),
  ``h(sum_{i<m} gamma^i r_{k+i} + gamma^m h^{-1}(Q_target(s_{k+m}, argmax_a Q(s_{k+m}, a))))``,
  ``m <= n`` steps, cut where the episode ends (no bootstrap after a termination), at the
  sequence's end (bootstrap from its last row) and just before a truncated step: the row
  after a truncation holds the next episode's first observation, not the true final one
  (which is not stored), so a window that would reach a truncated step bootstraps from
  that step's own observation instead, and the truncated step itself learns nothing;
* ``sequence_loss``: the squared (or Huber) TD error over the learning steps, the mean
  over each sequence's steps weighted by its importance weight, and each sequence's
  priority ``eta max |delta| + (1 - eta) mean |delta|`` (``ops.sequence_priority``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.agents.q_learning.value_heads import select_value
from jaxrl.ops import (
    huber_loss,
    inverse_value_rescale,
    l2_loss,
    n_step_bootstrap,
    sequence_priority,
    value_rescale,
)

Array = jax.Array
Unroll = Callable[[Any, Any, Any, Array], tuple[Any, Array]]


def burn_in_unroll(
    unroll: Unroll, params: Any, carry: Any, obs: Any, starts: Array, burn_in: int
) -> Array:
    """``q [T - burn_in, B, A]``: ``unroll(params, carry, obs, starts) -> (carries, q)``
    over rows ``burn_in ..`` of ``obs`` ``[T, B, ...]``, from the carry that rows ``0 ..
    burn_in - 1`` reach from ``carry`` (no gradient through them)."""
    if burn_in > 0:
        prefix = jax.tree.map(lambda x: x[:burn_in], obs)
        carries, _ = unroll(params, carry, prefix, starts[:burn_in])
        carry = jax.lax.stop_gradient(jax.tree.map(lambda c: c[-1], carries))
    rest = jax.tree.map(lambda x: x[burn_in:], obs)
    return unroll(params, carry, rest, starts[burn_in:])[1]


def sequence_targets(
    q_target: Array,
    q_select: Array | None,
    mask: Array | None,
    reward: Array,
    terminated: Array,
    truncated: Array,
    gamma: Any,
    n: int,
    rescale_eps: float | None,
) -> tuple[Array, Array]:
    """``(target [K, B], learns [K, B] bool)`` of the ``K`` learning steps (module
    docstring).

    Args:
      q_target: ``[K + 1, B, A]``, the target network's values at rows ``0 .. K``.
      q_select: ``[K + 1, B, A]``, the online network's (double Q), or None (the target
        network's own argmax).
      mask: ``[K + 1, B, A]`` bool legal actions, or None (all legal).
      reward, terminated, truncated: ``[K, B]``, the steps' rewards and flags.
      gamma: discount, float or traced scalar; n: static, steps per target.
      rescale_eps: ``h``'s epsilon, or None for no rescaling.
    """
    K = reward.shape[0]
    # A window is cut before a truncated (not terminated) step and at the sequence's end.
    lost = truncated & ~terminated
    cut = jnp.concatenate([lost[1:], jnp.ones_like(lost[:1])])
    rows = jnp.minimum(jnp.arange(K)[:, None] + jnp.arange(n), K - 1)  # [K, n]
    window = lambda x: jnp.moveaxis(x[rows], 1, -1)  # [K, B, n]
    nstep = n_step_bootstrap(window(reward), window(terminated), window(cut), gamma)
    boot = jnp.arange(K)[:, None] + nstep.bootstrap_index + 1  # [K, B], rows 1 .. K
    columns = jnp.arange(reward.shape[1])
    gathered = lambda q: q[boot, columns]  # [K, B, A]
    q_next = gathered(q_target)
    selector = q_next if q_select is None else gathered(q_select)
    legal = None if mask is None else gathered(mask)
    value = select_value(q_next, selector, legal)
    if rescale_eps is None:
        return nstep.reward_sum + nstep.bootstrap_discount * value, ~lost
    raw = nstep.reward_sum + nstep.bootstrap_discount * inverse_value_rescale(value, rescale_eps)
    return value_rescale(raw, rescale_eps), ~lost


def sequence_loss(
    q_taken: Array, target: Array, learns: Array, weights: Array, loss: str, eta: Any
) -> tuple[Array, Array]:
    """``(loss, priorities [B])`` from ``q_taken`` and ``target`` ``[K, B]`` (the target
    without gradient), the steps that learn ``learns [K, B]`` and the importance weights
    ``[B]``: the mean over sequences of ``weight * mean_k l(delta_k)``, ``l`` the
    ``"mse"`` (``0.5 delta^2``) or ``"huber"`` loss, and ``ops.sequence_priority``."""
    td = q_taken - jax.lax.stop_gradient(target)
    per_step = (l2_loss if loss == "mse" else huber_loss)(td)
    count = jnp.maximum(learns.sum(0), 1)
    per_sequence = jnp.where(learns, per_step, 0.0).sum(0) / count
    priorities = sequence_priority(td.T, learns.T, eta)
    return (weights * per_sequence).mean(), jax.lax.stop_gradient(priorities)
