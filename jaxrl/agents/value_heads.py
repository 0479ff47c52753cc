"""Value heads as composable parts of the Q-learning agent (``agents/q_learning.py``).

A ``ValueHead`` is a small strategy, a NamedTuple of pure functions, that says what the
network's head outputs and how it learns; the agent's loop (acting, replay, n-step
windows, optimizer, target network) is the same for all:

* ``network(num_actions, dueling, noisy, sigma0)``: the Flax head module on the torso's
  features; its output for a batch is ``[B, A, ...]`` (per action: a value, a distribution's
  logits, quantiles, ...).
* ``q_values(out)``: ``[..., A, ...] -> [..., A]`` expected action values, for greedy
  acting and double-Q selection.
* ``target(next_target, next_select, mask, reward_sum, discount)``: the bootstrap target
  from the target network's output at the bootstrap observation ``[B, A, ...]``, the
  online net's ``q_values`` there for double-Q selection (or None: select by the target
  net's own values), the legal-action mask ``[B, A]`` of that observation (or None) and
  the n-step ``reward_sum``/``discount`` ``[B]`` of ``ops.n_step_bootstrap``. Only legal
  actions are selected. The result is whatever ``loss`` takes.
* ``loss(online, target)``: from the online output of the taken action ``[B, ...]``,
  ``(losses [B], priorities [B])`` (priorities for prioritized replay).

Here: ``expected_value_head`` (DQN; Mnih et al. 2015) and ``categorical_head`` (C51;
Bellemare et al. 2017). A new head (quantiles, histograms) is one more such function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks import CategoricalHead, DuelingCategoricalHead, DuelingHead, QHead
from jaxrl.ops import (
    categorical_double_q_target,
    categorical_q_values,
    categorical_support,
    categorical_td_loss,
    huber_loss,
    l2_loss,
)
from jaxrl.types import masked_argmax

Array = jax.Array


class ValueHead(NamedTuple):
    """A value head's parts (see the module docstring)."""

    network: Callable[[int, bool, bool, float], nn.Module]
    q_values: Callable[[Array], Array]
    target: Callable[[Array, Array | None, Array | None, Array, Array], Any]
    loss: Callable[[Array, Any], tuple[Array, Array]]


def select_value(values: Array, selector: Array, mask: Array | None) -> Array:
    """``values[..., a*]`` with ``a* = argmax`` of ``selector`` ``[..., A]`` over the legal
    actions of ``mask`` (all when None): Q-learning's ``max`` and double-Q's evaluation."""
    action = masked_argmax(selector, mask)
    return jnp.take_along_axis(values, action[..., None], axis=-1)[..., 0]


def expected_value_head(loss: str = "huber") -> ValueHead:
    """One value per action: ``Q(s, a)``; target ``R + gamma^m Q_target(s', a*)`` with
    ``a*`` the (double-Q) argmax; ``loss`` ``"huber"`` (Mnih et al. 2015) or ``"mse"``
    (``0.5 delta^2``) of the TD error ``delta``; priority ``|delta|``."""
    td_loss = huber_loss if loss == "huber" else l2_loss

    def network(num_actions: int, dueling: bool, noisy: bool, sigma0: float) -> nn.Module:
        return (DuelingHead if dueling else QHead)(num_actions, noisy=noisy, sigma0=sigma0)

    def target(next_target, next_select, mask, reward_sum, discount):
        selector = next_target if next_select is None else next_select
        return reward_sum + discount * select_value(next_target, selector, mask)

    def td_error_loss(q_taken: Array, target: Array) -> tuple[Array, Array]:
        td_error = q_taken - jax.lax.stop_gradient(target)
        return td_loss(td_error), jnp.abs(td_error)

    return ValueHead(network=network, q_values=lambda q: q, target=target, loss=td_error_loss)


def categorical_head(v_min: float, v_max: float, num_atoms: int) -> ValueHead:
    """C51 (Bellemare et al. 2017): per action, logits over ``num_atoms`` atoms evenly
    spaced on ``[v_min, v_max]``; the target is the projected n-step distribution of the
    (double-Q) selected action (Rainbow, Hessel et al. 2018); the loss and priority are
    the cross-entropy to it."""
    support = categorical_support(v_min, v_max, num_atoms)

    def network(num_actions: int, dueling: bool, noisy: bool, sigma0: float) -> nn.Module:
        head_cls = DuelingCategoricalHead if dueling else CategoricalHead
        return head_cls(num_actions, num_atoms, noisy=noisy, sigma0=sigma0)

    def q_values(logits: Array) -> Array:
        return categorical_q_values(logits, support)

    def target(next_target, next_select, mask, reward_sum, discount):
        if mask is not None:
            selector = q_values(next_target) if next_select is None else next_select
            next_select = jnp.where(mask, selector, -jnp.inf)
        return categorical_double_q_target(next_target, next_select, reward_sum, discount, support)

    def loss(logits_taken: Array, target_probs: Array) -> tuple[Array, Array]:
        losses = categorical_td_loss(logits_taken, target_probs)
        return losses, losses

    return ValueHead(network=network, q_values=q_values, target=target, loss=loss)
