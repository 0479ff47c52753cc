"""The options of the on-policy actor-critic learners (``agents/on_policy/core.py``):
``ActorCriticConfig``, the config fields PPO, A2C, A3C and IMPALA share (with their
ranges; each learner's config subclasses it), and ``ActorCriticHparams``, the continuous
hyperparameters every one of them keeps in its state (``base_hparams``) so that a sweep can
vmap over them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.agents.common.optim import OptimizerOptions
from jaxrl.networks.spec import TorsoSpec
from jaxrl.validation import option

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig(OptimizerOptions):
    """The options PPO and A2C share; defaults are CleanRL's ``ppo.py`` (PPO's). A learner's
    config subclasses it and declares only what it adds or changes (``PPOConfig``,
    ``A2CConfig``).

    Attributes:
      hidden_sizes: torso widths (64, 64), or for images the dense widths after the CNN.
        Left at (64, 64): 512 after the Nature CNN, 256 after IMPALA's, 128 after MinAtar's.
      torso: the observation encoder: ``"auto"``, ``"mlp"``, ``"nature"``, ``"impala"`` or
        ``"minatar"``. Auto: an MLP for vectors, ``"minatar"`` for images under 32 px,
        ``"nature"`` for other images. ``"multi"``: every entry of a dict observation
        through its own encoder, joined (``networks.multi_input``).
      activation: ``"tanh"`` or ``"relu"`` in MLP torsos.
      shared_torso: one torso for actor and critic (Atari) or separate ones (False).
      shared_encoder: with torso ``multi``, one image encoder for actor and critic.
        Each keeps its own feature encoders and joined layers (Emote's
        ``SharedEncoderActionValueNet``); needs separate torsos (``shared_torso`` false).
      lr: learning rate (2.5e-4; optimizer and lr_schedule: agents/common/optim.py).
      critic_lr: the critic's learning rate (its torso and value head); None: ``lr``.
        machin's ``critic_learning_rate``, with ``lr`` its ``actor_learning_rate``; the
        ratio to ``lr`` holds under schedules and sweeps. Needs separate torsos.
      adam_eps: Adam's epsilon (1e-5).
      anneal_lr: decay the learning rate linearly to 0 over ``total_steps``.
      total_steps: env steps the learning rate anneals over (``anneal_lr``). The CLI fills
        it from ``run.steps`` when left None; None (outside the CLI) means no annealing.
      gamma: discount (0.99).
      gae_lambda: GAE's lambda (0.95).
      entropy_weight: entropy bonus coefficient (0.01).
      value_weight: the value loss's weight (0.5).
      normalize_advantage: per minibatch (True).
      max_grad_norm: global gradient-norm clip (0.5), or None.
      log_std_init: initial log-std of the Gaussian policy (0.0).
      normalize_obs: divide observations by a running std (running stats in the state).
      normalize_reward: divide rewards by the running std of the discounted return.
      obs_clip, scaled_reward_clip: clip normalized observations / scaled rewards to
        [-c, c] (10, SB3's ``VecNormalize``).
      reward_clip: clip raw rewards to [-c, c] for learning, or None (Atari: 1).
    """

    hidden_sizes: tuple[int, ...] = option((64, 64), ge=1)
    torso: str | TorsoSpec = "auto"
    activation: Literal["tanh", "relu"] = "tanh"
    shared_torso: bool = False
    shared_encoder: bool = False
    lr: float = option(2.5e-4, gt=0)
    critic_lr: float | None = option(None, gt=0)
    adam_eps: float = option(1e-5, ge=0)
    anneal_lr: bool = True
    total_steps: int | None = option(None, ge=1)
    gamma: float = option(0.99, ge=0, le=1)
    gae_lambda: float = option(0.95, ge=0, le=1)
    entropy_weight: float = option(0.01, ge=0)
    value_weight: float = option(0.5, ge=0)
    normalize_advantage: bool = True
    max_grad_norm: float | None = option(0.5, gt=0)
    log_std_init: float = 0.0
    normalize_obs: bool = False
    normalize_reward: bool = False
    obs_clip: float = option(10.0, gt=0)
    scaled_reward_clip: float = option(10.0, gt=0)
    reward_clip: float | None = option(None, gt=0)

    def __post_init__(self):
        super().__post_init__()
        if self.critic_lr is not None and self.shared_torso:
            raise ValueError(
                "critic_lr is the critic's own rate: it needs separate torsos (shared_torso "
                "false); a shared torso learns at lr"
            )
        if self.shared_encoder and (self.shared_torso or self.torso != "multi"):
            raise ValueError(
                "shared_encoder shares the image encoder of torso multi between separate "
                "torsos: set torso multi and shared_torso false (shared_torso shares all)"
            )


@flax.struct.dataclass
class ActorCriticHparams:
    """Continuous hyperparameters every actor-critic learner has, kept in the state so a
    sweep can vmap over them; a learner subclasses it to add its own."""

    lr: Array
    gamma: Array
    gae_lambda: Array
    entropy_weight: Array
    value_weight: Array
    max_grad_norm: Array  # inf: no clipping


def f32(x: Any) -> Array:
    """``x`` as a float32 array (a hyperparameter's value in the state)."""
    return jnp.asarray(x, jnp.float32)


def base_hparams(cfg: ActorCriticConfig) -> dict[str, Array]:
    """The ``ActorCriticHparams`` fields of ``cfg``, as keyword arguments."""
    return dict(
        lr=f32(cfg.lr),
        gamma=f32(cfg.gamma),
        gae_lambda=f32(cfg.gae_lambda),
        entropy_weight=f32(cfg.entropy_weight),
        value_weight=f32(cfg.value_weight),
        max_grad_norm=f32(jnp.inf if cfg.max_grad_norm is None else cfg.max_grad_norm),
    )
