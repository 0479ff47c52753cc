"""Value heads as composable parts of the Q-learning agent (``agents/q_learning/core.py``).

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

Two optional parts, None for a head that needs neither:

* ``samples``: for a head whose network samples (IQN's quantile fractions), the number of
  samples drawn for each use, a dict over ``"act"``, ``"select"`` (the online net's
  double-Q selection), ``"target"`` and ``"online"`` (the loss); the network is then
  called with ``num_samples=`` and a ``"noise"`` rng, and outputs may be dicts of arrays
  ``[B, A, ...]``.
* ``bonus(current_target, action, mask)``: a term added to the window's reward from the
  target network's output at the window's first observation ``[B, A, ...]``, the action
  taken there ``[B]`` and that observation's legal actions (Munchausen's
  ``alpha [tau log pi(a|s)]``); ``[B]``.

Here: ``expected_value_head`` (DQN; Mnih et al. 2015), ``categorical_head`` (C51;
Bellemare et al. 2017), ``quantile_head`` (QR-DQN; Dabney et al. 2018a),
``implicit_quantile_head`` (IQN; Dabney et al. 2018b), ``hl_gauss_head`` (HL-Gauss;
Farebrother et al. 2024) and ``munchausen_head`` (M-DQN; Vieillard et al. 2020).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks import (
    CategoricalHead,
    DuelingCategoricalHead,
    DuelingHead,
    ImplicitQuantileHead,
    QHead,
)
from jaxrl.ops import (
    categorical_double_q_target,
    categorical_q_values,
    categorical_support,
    categorical_td_loss,
    hl_gauss_centers,
    hl_gauss_loss,
    huber_loss,
    l2_loss,
    munchausen_bonus,
    quantile_huber_loss,
    quantile_midpoints,
    soft_bootstrap_value,
)
from jaxrl.types import masked_argmax

Array = jax.Array


HeadOutput = Any  # the head's output: an array [B, A, ...], or a dict of them (IQN)
Target = Any  # what ``target`` returns and ``loss`` takes: [B] or [B, ...]


class NetworkFn(Protocol):
    """``network(num_actions, dueling, noisy, sigma0) -> module``."""

    def __call__(
        self, num_actions: int, dueling: bool, noisy: bool, sigma0: float, /
    ) -> nn.Module: ...


class TargetFn(Protocol):
    """``target(next_target, next_select, mask, reward_sum, discount) -> target``."""

    def __call__(
        self,
        next_target: HeadOutput,
        next_select: Array | None,
        mask: Array | None,
        reward_sum: Array,
        discount: Array,
        /,
    ) -> Target: ...


class LossFn(Protocol):
    """``loss(online_taken, target) -> (losses [B], priorities [B])``."""

    def __call__(self, online: HeadOutput, target: Target, /) -> tuple[Array, Array]: ...


class BonusFn(Protocol):
    """``bonus(current_target, action [B], mask [B, A] or None) -> [B]``."""

    def __call__(
        self, current_target: HeadOutput, action: Array, mask: Array | None, /
    ) -> Array: ...


class ValueHead(NamedTuple):
    """A value head's parts (see the module docstring)."""

    network: NetworkFn
    q_values: Callable[[HeadOutput], Array]
    target: TargetFn
    loss: LossFn
    samples: Mapping[str, int] | None = None
    bonus: BonusFn | None = None


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


def _select_distribution(next_target: Array, next_select, mask, q_values) -> Array:
    """``next_target[b, a*_b]`` ``[B, ...]`` with ``a*`` the legal argmax of ``next_select``
    (or of the target's own ``q_values``)."""
    selector = q_values(next_target) if next_select is None else next_select
    action = masked_argmax(selector, mask)
    return jnp.take_along_axis(next_target, action[:, None, None], axis=1)[:, 0]


def _matrix_head(size: int) -> NetworkFn:
    """A head of ``size`` outputs per action ``[B, A, size]`` (dueling on the outputs)."""

    def network(num_actions: int, dueling: bool, noisy: bool, sigma0: float) -> nn.Module:
        head_cls = DuelingCategoricalHead if dueling else CategoricalHead
        return head_cls(num_actions, size, noisy=noisy, sigma0=sigma0)

    return network


def quantile_head(num_quantiles: int, kappa: float = 1.0) -> ValueHead:
    """QR-DQN (Dabney et al. 2018a): per action ``num_quantiles`` quantile values
    ``[B, A, N]`` at the fractions ``(2i + 1) / 2N``; ``Q`` is their mean; the target is
    the (double-Q) selected action's quantiles ``r + gamma^n theta'`` ``[B, N]``; loss
    and priority are the quantile Huber loss (``ops.quantile_huber_loss``, ``kappa``)."""
    taus = quantile_midpoints(num_quantiles)

    def q_values(quantiles: Array) -> Array:
        return quantiles.mean(axis=-1)

    def target(next_target, next_select, mask, reward_sum, discount):
        z = _select_distribution(next_target, next_select, mask, q_values)
        return reward_sum[:, None] + discount[:, None] * z

    def loss(quantiles: Array, target: Array) -> tuple[Array, Array]:
        losses = quantile_huber_loss(quantiles, taus, target, kappa)
        return losses, losses

    return ValueHead(_matrix_head(num_quantiles), q_values, target, loss)


def implicit_quantile_head(
    num_tau_samples: int,
    num_tau_prime_samples: int,
    num_quantile_samples: int,
    kappa: float = 1.0,
    embedding_dim: int = 64,
) -> ValueHead:
    """IQN (Dabney et al. 2018b): the network (``networks.ImplicitQuantileHead``) maps
    sampled fractions ``tau`` to quantile values, ``{"quantiles", "taus"}`` ``[B, A, n]``.
    ``Q`` is the mean over ``num_quantile_samples`` (K) samples when acting and selecting;
    the target is the selected action's ``r + gamma^n Z_tau'`` over
    ``num_tau_prime_samples`` (N') fractions of the target net (its action chosen by the
    mean of those same N' samples, or by the online net's K-sample mean when double); the
    loss is the quantile Huber loss of ``num_tau_samples`` (N) online samples (priority:
    the loss). Dueling is not defined for this head."""

    def network(num_actions: int, dueling: bool, noisy: bool, sigma0: float) -> nn.Module:
        return ImplicitQuantileHead(num_actions, embedding_dim, noisy=noisy, sigma0=sigma0)

    def q_values(out: dict[str, Array]) -> Array:
        return out["quantiles"].mean(axis=-1)

    def target(next_target, next_select, mask, reward_sum, discount):
        quantiles = next_target["quantiles"]
        selector = q_values(next_target) if next_select is None else next_select
        z = _select_distribution(quantiles, selector, mask, q_values)
        return reward_sum[:, None] + discount[:, None] * z

    def loss(online: dict[str, Array], target: Array) -> tuple[Array, Array]:
        losses = quantile_huber_loss(online["quantiles"], online["taus"], target, kappa)
        return losses, losses

    samples = {
        "act": num_quantile_samples,
        "select": num_quantile_samples,
        "target": num_tau_prime_samples,
        "online": num_tau_samples,
    }
    return ValueHead(network, q_values, target, loss, samples=samples)


def hl_gauss_head(
    min_value: float, max_value: float, num_bins: int, sigma: float | None = None
) -> ValueHead:
    """HL-Gauss (Imani & White 2018; Farebrother et al. 2024): per action logits over
    ``num_bins`` bins evenly spanning ``[min_value, max_value]`` ``[B, A, K]``; ``Q`` is the
    histogram's mean over the bin centres; the target is the scalar
    ``r + gamma^n Q_target(s', a*)`` ``[B]``; the loss (and priority) the cross-entropy to
    its Gaussian-smoothed histogram (``ops.hl_gauss_loss``) with ``sigma`` (None: 0.75
    bin widths, Farebrother et al. 2024 sec. 3.1)."""
    centers = hl_gauss_centers(min_value, max_value, num_bins)
    if sigma is None:
        sigma = 0.75 * (max_value - min_value) / num_bins

    def q_values(logits: Array) -> Array:
        return categorical_q_values(logits, centers)

    def target(next_target, next_select, mask, reward_sum, discount):
        selector = q_values(next_target) if next_select is None else next_select
        return reward_sum + discount * select_value(q_values(next_target), selector, mask)

    def loss(logits: Array, target: Array) -> tuple[Array, Array]:
        losses = hl_gauss_loss(logits, target, min_value, max_value, num_bins, sigma)
        return losses, losses

    return ValueHead(_matrix_head(num_bins), q_values, target, loss)


def munchausen_head(
    m_alpha: float = 0.9, m_tau: float = 0.03, l_0: float = -1.0, loss: str = "huber"
) -> ValueHead:
    """M-DQN (Vieillard et al. 2020): one value per action; the target is
    ``r + alpha [tau log pi(a|s)]_{l_0}^0 + gamma^n sum_a' pi(a'|s') (Q(s',a') - tau log
    pi(a'|s'))`` with ``pi = softmax(Q_target / tau)`` over legal actions (the bonus is
    ``ValueHead.bonus``; ``ops.munchausen_bonus``, ``ops.soft_bootstrap_value``), the
    loss ``loss`` of the TD error as in ``expected_value_head``. Double-Q selection does
    not apply (the bootstrap is an expectation)."""
    base = expected_value_head(loss)

    def target(next_target, next_select, mask, reward_sum, discount):
        return reward_sum + discount * soft_bootstrap_value(next_target, m_tau, mask)

    def bonus(current_target: Array, action: Array, mask: Array | None) -> Array:
        return munchausen_bonus(current_target, action, m_alpha, m_tau, l_0, mask)

    return base._replace(target=target, bonus=bonus)


def scalar_head(cfg: Any) -> ValueHead:
    """The head of a Q-learning config's ``loss``: HL-Gauss on ``[min_value, max_value]``
    (``num_bins``, ``sigma``) or one expected value per action with the Huber / MSE loss."""
    if cfg.loss == "hl_gauss":
        return hl_gauss_head(cfg.min_value, cfg.max_value, cfg.num_bins, cfg.sigma)
    return expected_value_head(cfg.loss)
