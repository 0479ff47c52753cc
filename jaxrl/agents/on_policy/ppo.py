"""PPO (Schulman et al. 2017) for discrete (categorical) and continuous (diagonal Gaussian)
actions, on the on-policy skeleton of ``agents/on_policy/core.py``.

An actor-critic (``networks.ActorCritic``) acts in ``num_envs`` environments for
``rollout_len`` steps; ``update`` computes GAE advantages from the rollout (``ops.gae``,
bootstrapping from the true final observation at a truncation and not at a termination)
and takes ``update_epochs x num_minibatches`` gradient steps on
``loss = policy_loss + value_weight * value_loss - entropy_weight * entropy``, where the
policy loss is the clipped surrogate (``surrogate_loss_clip``) and the value loss is
optionally clipped (``value_loss_clip``). This file holds only what is PPO's own: its
options, its hyperparameters and that loss; the rest (options shared with A2C, acting,
legal-action masks, observation normalization, reward scaling, learning-rate annealing,
gradient clipping) is the skeleton's. ``act`` returns ``extras = {"log_prob", "value"}``
(and ``"raw_action"``, the Gaussian sample before clipping to the box, for continuous
actions).

``cell="gru"`` (or ``"lstm"``, ``"mingru"``; ``networks/memory.py``): recurrent PPO, as
PureJaxRL's ``ppo_rnn.py``: a memory cell of ``cell_size`` units after the torso, its
state in the per-env carry, minibatches of whole env sequences re-run from the carry the
rollout started with (``agents/on_policy/sequence.py``). Without a cell PPO is unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.struct
import jax

from jaxrl.agents.on_policy.config import (
    ActorCriticConfig,
    ActorCriticHparams,
    base_hparams,
    f32,
)
from jaxrl.agents.on_policy.core import (
    ActorCriticState,
    Losses,
    Objective,
    make_actor_critic,
    make_network,
)
from jaxrl.agents.on_policy.sequence import make_sequence_actor_critic
from jaxrl.buffers.rollout import RolloutBatch
from jaxrl.ops.policy_gradient import ppo_clip_loss, value_loss
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config, option

__all__ = ["PPOConfig", "PPOHparams", "PPOState", "make_network", "make_ppo"]

PPOState = ActorCriticState


@dataclasses.dataclass(frozen=True)
class PPOConfig(ActorCriticConfig):
    """PPO options. Defaults are CleanRL's ``ppo.py`` (classic control; Huang et al. 2022,
    "The 37 Implementation Details of PPO"); names follow machin's PPO where it has one.
    The options shared with A2C are documented on ``on_policy.config.ActorCriticConfig``.

    Attributes:
      update_epochs: passes over each rollout (4).
      num_minibatches: minibatches per pass (4).
      surrogate_loss_clip: PPO's epsilon (0.2).
      value_loss_clip: clip the value change to this, or None (CleanRL clips at 0.2).
      cell: a memory cell after the torso: ``"lstm"``, ``"gru"`` or ``"mingru"``; None: none.
        With a cell, recurrent PPO (module docstring).
      cell_size: the cell's units (128, PureJaxRL's ``ppo_rnn.py``).
    """

    update_epochs: int = option(4, ge=1)
    num_minibatches: int = option(4, ge=1)
    surrogate_loss_clip: float = option(0.2, ge=0)
    value_loss_clip: float | None = option(0.2, ge=0)
    cell: str | None = None
    cell_size: int = option(128, ge=1)


@flax.struct.dataclass
class PPOHparams(ActorCriticHparams):
    """The skeleton's continuous hyperparameters and PPO's two clips (``value_loss_clip``
    inf when the config has None)."""

    surrogate_loss_clip: jax.Array
    value_loss_clip: jax.Array


def ppo_objective(cfg: PPOConfig) -> Objective:
    """PPO's part of the skeleton: the clipped surrogate and the (clipped) value loss."""

    def hparams(cfg: PPOConfig) -> PPOHparams:
        value_clip = cfg.value_loss_clip
        return PPOHparams(
            **base_hparams(cfg),
            surrogate_loss_clip=f32(cfg.surrogate_loss_clip),
            value_loss_clip=f32(float("inf") if value_clip is None else value_clip),
        )

    def loss(log_prob, value, mb: RolloutBatch, advantage, h: PPOHparams) -> Losses:
        policy_loss, approx_kl, clip_fraction = ppo_clip_loss(
            log_prob, mb.log_prob, advantage, h.surrogate_loss_clip
        )
        v_clip = None if cfg.value_loss_clip is None else h.value_loss_clip
        v_loss = value_loss(value, mb.target, mb.value, v_clip)
        return Losses(policy_loss, v_loss, approx_kl, clip_fraction)

    return Objective(hparams, loss, cfg.update_epochs, cfg.num_minibatches)


def make_ppo(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a PPO agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(PPOConfig, overrides, "agent 'ppo'")
    if cfg.cell is not None:
        objective = ppo_objective(cfg)
        return make_sequence_actor_critic(spec, cfg, objective, "ppo", cfg.cell, cfg.cell_size)
    return make_actor_critic(spec, cfg, ppo_objective(cfg), "ppo")
