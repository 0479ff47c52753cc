"""A2C (Mnih et al. 2016; synchronous, as in the OpenAI baselines) for discrete and
continuous actions, on the on-policy skeleton of ``agents/on_policy/core.py``.

The same actor-critic, rollout and GAE as PPO, with one gradient step per rollout on the
whole rollout (one epoch of one minibatch) and the plain policy-gradient loss
``-E[log pi(a|s) A]`` with an unclipped value loss. This file holds only what is A2C's
own: the defaults it changes, and that loss.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

from jaxrl.agents.on_policy.config import ActorCriticConfig, ActorCriticHparams, base_hparams
from jaxrl.agents.on_policy.core import Losses, Objective, make_actor_critic
from jaxrl.buffers.rollout import RolloutBatch
from jaxrl.ops.policy_gradient import policy_gradient_loss, value_loss
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config

__all__ = ["A2CConfig", "A2CHparams", "make_a2c"]

A2CHparams = ActorCriticHparams


@dataclasses.dataclass(frozen=True)
class A2CConfig(ActorCriticConfig):
    """A2C options: Stable-Baselines3's ``A2C`` defaults (after the OpenAI baselines),
    except the optimizer, Adam here as in PureJaxRL (SB3 uses RMSprop, alpha 0.99).
    One gradient step per rollout on the whole rollout, no clipping; see
    ``on_policy.config.ActorCriticConfig`` for the meaning of each field. SB3: lr 7e-4, gamma
    0.99, gae_lambda 1.0 (n-step returns), entropy 0.0, value 0.5, max_grad_norm 0.5, no
    advantage normalization."""

    lr: float = 7e-4
    anneal_lr: bool = False
    gae_lambda: float = 1.0
    entropy_weight: float = 0.0
    normalize_advantage: bool = False


def _loss(log_prob, value, mb: RolloutBatch, advantage, h: A2CHparams) -> Losses:
    zero = jnp.zeros((), jnp.float32)
    return Losses(
        policy_gradient_loss(log_prob, advantage), value_loss(value, mb.target), zero, zero
    )


A2C_OBJECTIVE = Objective(
    hparams=lambda cfg: A2CHparams(**base_hparams(cfg)),
    loss=_loss,
    update_epochs=1,
    num_minibatches=1,
)


def make_a2c(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an A2C agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(A2CConfig, overrides, "agent 'a2c'")
    return make_actor_critic(spec, cfg, A2C_OBJECTIVE, "a2c")
