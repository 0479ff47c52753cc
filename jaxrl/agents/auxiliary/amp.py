r"""Adversarial motion priors (Peng et al. 2021) and Emote's action-symmetry variant, as
auxiliary learners (``agents/auxiliary/base.py``) that attach to an off-policy agent.

AMP (``make_amp``): a discriminator MLP on transition features
:math:`x = (s, s')` (the main observations, flattened and concatenated) is trained on
every gradient step of the agent by ``ops.amp``'s least-squares loss, reference
transitions (the demonstration file) positive and the agent's replay batch negative,
with the gradient penalty :math:`\tfrac{w^{gp}}{2}\mathbb E_{\mathcal M}\lVert\nabla_x
D\rVert^2` on reference samples:

.. math:: L_D = \operatorname{mean}_{\mathcal M}(D - 1)^2 + \operatorname{mean}_{\pi}(D + 1)^2
          + \tfrac{w^{gp}}{2} \operatorname{mean}_{\mathcal M} \lVert\nabla_x D\rVert^2

and the agent's reward becomes :math:`r + w_S\, \max(0, 1 - 0.25 (D(s, s') - 1)^2)` with
:math:`w_S` = ``style_reward_weight`` (``hparams``, sweepable). Emote's ``AMPReward``
likewise adds the weighted style reward to the task reward; the paper's
:math:`w^G r^G + w^S r^S` with :math:`w^G = w^S = 0.5` is the same up to the scale 0.5.

Action symmetry (``make_action_symmetry``, Emote's ``ActionSymmetryDiscriminatorLoss`` and
``ActionSymmetryAMPReward``): a discriminator on action slices learns to tell
``a[right_action_map]`` (+1) from ``a[left_action_map]`` (-1) by the same loss (penalty
on the right side's inputs), and the agent's reward gains
:math:`w_C \max(0, 1 - 0.25\, D(a[\text{right}])^2)`, ``w_C`` =
``confusion_reward_weight``: the policy is paid for moving its two sides alike.
"""

from __future__ import annotations

from typing import Any, cast

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl.agents.auxiliary.extra_loss import ExtraLoss
from jaxrl.agents.common.optim import optimizer_step
from jaxrl.networks import MLP
from jaxrl.ops.amp import (
    confusion_reward,
    gradient_penalty,
    input_gradients,
    lsq_discriminator_loss,
    style_reward,
)
from jaxrl.types import Transition, main_obs


class Discriminator(nn.Module):
    """``[B, F] -> [B]`` float32: a ReLU MLP of ``hidden_sizes`` and a linear output."""

    hidden_sizes: tuple[int, ...]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(1)(MLP(self.hidden_sizes)(x))[..., 0]


def transition_features(obs: Any, next_obs: Any) -> jax.Array:
    """``[B, 2 F]`` float32: the main observations of ``s`` and ``s'`` flattened to ``F``
    and concatenated (AMP's discriminator input)."""
    flat = lambda o: jnp.asarray(main_obs(o), jnp.float32).reshape(main_obs(o).shape[0], -1)
    return jnp.concatenate([flat(obs), flat(next_obs)], axis=-1)


def discriminator_loss(
    net: Discriminator, params: Any, positive: jax.Array, negative: jax.Array, w_gp: float
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``L_D`` (module docstring) of ``params`` on ``positive`` ``[B, F]`` (target +1, the
    penalty's inputs) and ``negative`` ``[B, F]`` (target -1), and its parts."""
    d = lambda x: cast(jax.Array, net.apply(params, x))
    d_pos, d_neg = d(positive), d(negative)
    penalty = gradient_penalty(input_gradients(d, positive))
    lsq = lsq_discriminator_loss(d_pos, d_neg)
    parts = {"lsq_loss": lsq, "grad_penalty": penalty, "d_positive": d_pos.mean()}
    return lsq + 0.5 * w_gp * penalty, {**parts, "d_negative": d_neg.mean()}


def _learner(
    features_size: int,
    hidden_sizes: tuple[int, ...],
    w_gp: float,
    lr_name: str,
    positive_negative,
    reward,
    hparams: dict[str, float],
    reference: np.ndarray | None,
) -> ExtraLoss:
    """An ``ExtraLoss`` around a ``Discriminator`` trained by ``discriminator_loss`` on
    ``positive_negative(state, batch, key) -> (positive, negative)``."""
    net = Discriminator(tuple(hidden_sizes))

    def init(key, agent_params=None):
        params = net.init(key, jnp.zeros((1, features_size), jnp.float32))
        state = {"params": params, "opt_state": optax.scale_by_adam().init(params)}
        if reference is not None:
            state["reference"] = jnp.asarray(reference, jnp.float32)
        return state

    def update(state, batch: Transition, h, key):
        positive, negative = positive_negative(state, batch, key)
        loss_fn = lambda p: discriminator_loss(net, p, positive, negative, w_gp)
        (loss, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"])
        params, opt_state = optimizer_step(
            optax.scale_by_adam(), state["params"], grads, state["opt_state"], h[lr_name]
        )
        return {**state, "params": params, "opt_state": opt_state}, {"loss": loss, **parts}

    def reward_fn(state, batch: Transition, h):
        return reward(lambda x: net.apply(state["params"], x), batch, h)

    return ExtraLoss(init=init, update=update, reward=reward_fn, hparams=hparams)


def make_amp(
    reference: Transition[np.ndarray],
    hidden_sizes: tuple[int, ...] = (256, 256),
    grad_penalty: float = 10.0,
    lr: float = 3e-4,
    style_reward_weight: float = 1.0,
) -> ExtraLoss:
    """AMP's discriminator and style reward (module docstring) with reference transitions
    ``reference`` (``obs``, ``next_obs`` ``[M, ...]``). ``grad_penalty`` is the paper's
    :math:`w^{gp}` = 10; ``lr`` and ``style_reward_weight`` go to ``hparams``
    (``amp_lr``, ``style_reward_weight``)."""
    ref = np.asarray(transition_features(reference.obs, reference.next_obs))

    def positive_negative(state, batch, key):
        index = jax.random.randint(key, batch.reward.shape[:1], 0, ref.shape[0], jnp.int32)
        return state["reference"][index], transition_features(batch.obs, batch.next_obs)

    def reward(d, batch, h):
        return h["style_reward_weight"] * style_reward(
            d(transition_features(batch.obs, batch.next_obs))
        )

    h = {"amp_lr": lr, "style_reward_weight": style_reward_weight}
    return _learner(
        ref.shape[1], hidden_sizes, grad_penalty, "amp_lr", positive_negative, reward, h, ref
    )


def make_action_symmetry(
    right_action_map: tuple[int, ...],
    left_action_map: tuple[int, ...],
    hidden_sizes: tuple[int, ...] = (256, 256),
    grad_penalty: float = 10.0,
    lr: float = 3e-4,
    confusion_reward_weight: float = 1.0,
) -> ExtraLoss:
    """Emote's action-symmetry discriminator and confusion reward (module docstring);
    ``right_action_map`` and ``left_action_map`` index the action's last axis, one side
    each, pairwise mirrored; ``hparams``: ``symmetry_lr``, ``confusion_reward_weight``."""
    right, left = np.asarray(right_action_map, np.int32), np.asarray(left_action_map, np.int32)

    def flat(a):
        return jnp.asarray(a, jnp.float32).reshape(a.shape[0], -1)

    def positive_negative(state, batch, key):
        return flat(batch.action)[:, right], flat(batch.action)[:, left]

    def reward(d, batch, h):
        return h["confusion_reward_weight"] * confusion_reward(d(flat(batch.action)[:, right]))

    h = {"symmetry_lr": lr, "confusion_reward_weight": confusion_reward_weight}
    return _learner(
        len(right), hidden_sizes, grad_penalty, "symmetry_lr", positive_negative, reward, h, None
    )
