r"""The critics' half of the gradient step that SAC and TD3/DDPG share
(``agents/off_policy/sac.py``, ``agents/off_policy/td3.py``): the TD target, the ensemble's
regression loss (importance-weighted with prioritized replay, hysteretic with TD3's
``q_increase_rate``/``q_decrease_rate``) and one optimizer step of the critics towards it.
The algorithms differ only in the bootstrap value ``next_value`` they give ``critic_step``
(SAC: the soft value :math:`\min_k Q_{\bar\phi_k}(s', a') - \alpha\log\pi(a'|s')`; TD3:
:math:`\min_k Q_{\bar\phi_k}(s', \tilde a')` of the smoothed target action).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.optim import optimizer_step
from jaxrl.agents.off_policy.core import LearnerState
from jaxrl.ops.targets import hysteretic_target
from jaxrl.types import Transition


def td_target(batch: Transition, next_value: jax.Array, hparams: dict[str, jax.Array]):
    r"""``y = reward_scale * r + gamma * (1 - terminated) * next_value``, ``[B]``.

    Truncated steps bootstrap (``batch.next_obs`` is the true last observation). With
    n-step returns ``batch.reward`` is the discounted reward sum and
    ``batch.extras["discount"]`` the bootstrap coefficient ``gamma^m (1 - terminated)``,
    which replaces ``gamma * (1 - terminated)``.
    """
    if "discount" in batch.extras:
        discount = batch.extras["discount"]
    else:
        discount = hparams["gamma"] * (1.0 - batch.terminated.astype(jnp.float32))
    return jax.lax.stop_gradient(hparams["reward_scale"] * batch.reward + discount * next_value)


def critic_regression(
    q: jax.Array, y: jax.Array, batch: Transition, scale: float = 1.0, hysteresis=None
) -> tuple[jax.Array, jax.Array | None]:
    r"""The critics' squared TD loss and, with prioritized replay, the new priorities.

    ``q`` ``[K, B]`` (K critics), ``y`` ``[B]``:
    :math:`L = \text{scale} \sum_k \operatorname{mean}_b w_b (Q_{kb} - y_b)^2`, with
    importance weights ``w = batch.extras["weight"]`` when present (else 1). With
    ``hysteresis = (q_increase_rate, q_decrease_rate)`` the target is replaced by
    ``ops.hysteretic_target(q, y, ...)`` (machin's HDDPG). Returns ``(L, |delta|)`` with
    ``|delta|`` ``[B]`` the mean over critics of ``|y - Q_k|`` (from the unmodified target) if
    ``batch`` carries weights, else ``(L, None)``.
    """
    target = y if hysteresis is None else hysteretic_target(q, y, *hysteresis)
    err = (q - target) ** 2
    if "weight" in batch.extras:
        err = err * batch.extras["weight"]
    loss = jnp.mean(err, axis=-1).sum()
    if scale != 1.0:
        loss = scale * loss
    if "weight" not in batch.extras:
        return loss, None
    return loss, jax.lax.stop_gradient(jnp.abs(y - q).mean(axis=0))


class CriticStep(NamedTuple):
    """``critic_step``'s result: the critics' new ``params`` and ``opt_state``, the
    ``loss`` and ``q_mean`` (float32 scalars), ``td_error`` ``[B]`` (prioritized
    replay's new priorities; None without importance weights) and the ``grads`` the step
    took (the params' tree)."""

    params: Any
    opt_state: Any
    loss: jax.Array
    q_mean: jax.Array
    td_error: jax.Array | None
    grads: Any = None


def critic_step(
    critic: nn.Module,
    optimizer: optax.GradientTransformation,
    learner: LearnerState,
    batch: Transition,
    next_value: jax.Array,
    hparams: dict[str, jax.Array],
    critic_grads: Any = None,
    **regression: Any,
) -> CriticStep:
    """One optimizer step (``hparams["critic_lr"]``) of the ensemble ``critic`` ``[K, B]``
    at ``learner.critic_params`` towards ``td_target(batch, next_value [B], hparams)``,
    the loss ``critic_regression(..., **regression)`` (``scale``, ``hysteresis``);
    ``critic_grads`` (a loss term's, e.g. CURL's) add to the loss's gradient."""
    y = td_target(batch, next_value, hparams)

    def critic_loss(params):
        q = critic.apply(params, batch.obs, batch.action)  # [K, B]
        loss, td_error = critic_regression(q, y, batch, **regression)
        return loss, (q.mean(), td_error)

    (loss, (q_mean, td_error)), grads = jax.value_and_grad(critic_loss, has_aux=True)(
        learner.critic_params
    )
    if critic_grads is not None:
        grads = jax.tree.map(jnp.add, grads, critic_grads)
    params, opt_state = optimizer_step(
        optimizer, learner.critic_params, grads, learner.critic_opt_state, hparams["critic_lr"]
    )
    return CriticStep(params, opt_state, loss, q_mean, td_error, grads)
