r"""TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic
Methods") and DDPG (Lillicrap et al. 2016) as TD3 with its three additions switched off.

Built on the shared skeleton ``agents/off_policy/core.py`` (replay, warm-up, exploration
noise, update loop); this file holds the deterministic policy ``mu(s) = tanh(MLP(s))`` and
one gradient step on a minibatch ``(s, a, r, s', terminated)``:

* target policy smoothing: :math:`a' = \operatorname{clip}(\mu_{\bar\theta}(s') +
  \operatorname{clip}(\varepsilon, -c, c), -1, 1)`, :math:`\varepsilon \sim
  \mathcal N(0, \text{policy\_noise}^2)`, :math:`c` = ``noise_clip``;
* clipped double Q over ``num_critics`` critics:

  .. math:: y = \text{reward\_scale}\,r + \gamma (1 - d) \min_k Q_{\bar\phi_k}(s', a'),\qquad
            L_Q = \sum_k \operatorname{mean}_B (Q_{\phi_k}(s, a) - y)^2

* delayed policy updates: every ``policy_delay``-th critic step (counting from 1, as the
  reference code's ``total_it % policy_freq == 0``), the actor ascends
  :math:`\operatorname{mean}_B Q_{\phi_1}(s, \mu_\theta(s))` and both targets move by Polyak
  averaging with ``tau``.

DDPG (``make_ddpg``) is this step with ``num_critics=1``, ``policy_noise=0`` (no smoothing)
and ``policy_delay=1`` (actor and targets every step), with Lillicrap et al.'s defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.auxiliary.latent_prior import with_latent_prior
from jaxrl.agents.auxiliary.options import AuxiliaryOptions
from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.optim import optimizer_step
from jaxrl.agents.off_policy.core import (
    Algorithm,
    LearnerState,
    Noise,
    OffPolicyConfig,
    PerDim,
    make_critic,
    make_encoder,
    make_off_policy_agent,
    make_optimizer,
)
from jaxrl.agents.off_policy.critics import critic_step
from jaxrl.networks.continuous import DeterministicActor
from jaxrl.ops.noise import clipped_gaussian_noise
from jaxrl.ops.targets import soft_update
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config, defaults, fixes, option


@dataclasses.dataclass(frozen=True)
@fixes(**defaults(AuxiliaryOptions, "curl"))  # TD3's critics share no encoder for CURL
class TD3Config(OffPolicyConfig):
    """TD3 options; defaults are the authors' code (github.com/sfujim/TD3, ``main.py``),
    which updates the paper's (400, 300) nets, 1e-3 and batch 100 to the values below.

    Attributes:
      hidden_sizes: ReLU layers of actor and critics (256, 256).
      actor_lr, critic_lr: Adam learning rates (3e-4).
      gamma: discount (0.99).
      tau: Polyak rate of the target networks (0.005).
      buffer_size: replay capacity in transitions (1e6).
      batch_size: minibatch size (256).
      learning_starts: env steps of random actions before learning (25,000,
        ``start_timesteps``).
      exploration_noise, noise_sigma: the exploration noise, "gaussian" of scale 0.1
        (``expl_noise``).
      num_critics: critics whose minimum is the target (2: clipped double Q).
      policy_noise, noise_clip: target policy smoothing, 0.2 and 0.5 (0 turns it off).
      policy_delay: critic steps per actor and target update, 2 (``policy_freq``).
      q_increase_rate, q_decrease_rate: hysteretic critic updates (machin's ``HDDPG``;
        1 and 1: off). The critic regresses on ``Q + rate * (y - Q)``, ``rate`` the
        increase rate where ``y > Q`` and the decrease rate elsewhere
        (``ops.hysteretic_target``); in ``[0, 1]``.
      param_noise: explore with a perturbed actor (Plappert et al. 2018). With
        ``exploration_noise: none`` for their pure parameter-noise runs; every ``update``
        measures the RMS action distance between the actor and a perturbation of scale
        ``sigma`` (initially ``param_noise_sigma``, 0.1) on a replay batch, multiplies
        ``sigma`` by ``param_noise_coefficient`` (1.01) while the distance is at most
        ``param_noise_target`` (0.2, OpenAI Baselines' ``adaptive-param_0.2``) and divides
        it otherwise, and re-perturbs the exploring actor (once per rollout, not per
        episode: the fused runner's episodes end at different steps).
      param_noise_sigma: the actor perturbation's initial scale (0.1).
      param_noise_target: the action distance the scale is adapted to (0.2).
      param_noise_coefficient: the factor the scale is adapted by after each measure (1.01).
    """

    learning_starts: int = 25_000
    exploration_noise: Noise = "gaussian"
    num_critics: int = option(2, ge=1)
    policy_noise: float = option(0.2, ge=0)
    noise_clip: float = option(0.5, ge=0)
    policy_delay: int = option(2, ge=1)
    q_increase_rate: float = option(1.0, ge=0, le=1)
    q_decrease_rate: float = option(1.0, ge=0, le=1)
    param_noise: bool = False
    param_noise_sigma: float = option(0.1, gt=0)
    param_noise_target: float = option(0.2, gt=0)
    param_noise_coefficient: float = option(1.01, gt=1)


@dataclasses.dataclass(frozen=True)
class DDPGConfig(TD3Config):
    """DDPG options: TD3 with one critic, no target smoothing and no delay. Defaults follow
    Lillicrap et al. 2016 (Section 7): (400, 300) ReLU layers, Adam 1e-4 (actor) and 1e-3
    (critic), tau 0.001, batch 64, Ornstein-Uhlenbeck noise with theta 0.15 and sigma 0.2
    (dt 1e-2 as machin and OpenAI Baselines); their L2 weight decay is left out, and
    10,000 random warm-up steps are added (the TD3 paper's DDPG runs).
    """

    hidden_sizes: tuple[int, ...] = (400, 300)
    actor_lr: float = 1e-4
    critic_lr: float = 1e-3
    tau: float = 0.001
    batch_size: int = 64
    learning_starts: int = 10_000
    exploration_noise: Noise = "ou"
    noise_sigma: PerDim = 0.2
    num_critics: int = 1
    policy_noise: float = 0.0
    noise_clip: float = 0.0
    policy_delay: int = 1


def make_agent(spec: EnvSpec, cfg: TD3Config, name: str = "td3") -> Agent:
    """Builds a TD3 (or, with DDPG's config, DDPG) agent for ``spec`` (with
    ``latent_prior``, acting through a VAE action prior: ``agents/auxiliary/latent_prior.py``)."""
    return with_latent_prior(spec, cfg, name, lambda s, c, extra: _build(s, c, name, extra))


def _build(spec: EnvSpec, cfg: TD3Config, name: str, learners: tuple = (), insert=None) -> Agent:
    """The skeleton agent with TD3's algorithm, the extra auxiliary ``learners`` and the
    skeleton's ``insert`` hook (Ape-X DDPG)."""
    action_dim = action_box(spec, name)[0].shape[0]
    actor = DeterministicActor(
        action_dim, cfg.hidden_sizes, obs_ndim=len(spec.obs_shape), encoder=make_encoder(cfg, spec)
    )
    critic = make_critic(cfg, spec, cfg.num_critics)
    optimizer = make_optimizer(cfg)
    hysteresis = None  # machin's HDDPG when either rate is not 1
    if (cfg.q_increase_rate, cfg.q_decrease_rate) != (1.0, 1.0):
        hysteresis = (cfg.q_increase_rate, cfg.q_decrease_rate)

    def policy(actor_params, obs, key, explore: bool):
        del key, explore  # exploration noise is the skeleton's
        return actor.apply(actor_params, obs)

    def actor_step(learner: LearnerState, batch, h):
        def actor_loss(params):
            q = critic.apply(learner.critic_params, batch.obs, actor.apply(params, batch.obs))
            return -q[0].mean()

        loss, grads = jax.value_and_grad(actor_loss)(learner.actor_params)
        actor_params, actor_opt_state = optimizer_step(
            optimizer, learner.actor_params, grads, learner.actor_opt_state, h["actor_lr"]
        )
        learner = dataclasses.replace(
            learner,
            actor_params=actor_params,
            actor_opt_state=actor_opt_state,
            target_actor_params=soft_update(learner.target_actor_params, actor_params, h["tau"]),
            target_critic_params=soft_update(
                learner.target_critic_params, learner.critic_params, h["tau"]
            ),
        )
        return learner, loss

    def gradient_step(learner: LearnerState, batch, h, key, critic_grads=None):
        """One step; ``critic_grads`` (a loss term's) add to the critics'."""
        # Critics, with target policy smoothing.
        next_action = cast(jax.Array, actor.apply(learner.target_actor_params, batch.next_obs))
        clip = h["noise_clip"]
        smoothing = clipped_gaussian_noise(
            key, next_action.shape, 0.0, h["policy_noise"], -clip, clip
        )
        next_action = jnp.clip(next_action + smoothing, -1.0, 1.0)
        next_q = cast(
            jax.Array, critic.apply(learner.target_critic_params, batch.next_obs, next_action)
        )
        next_value = next_q.min(axis=0)
        critics = critic_step(
            critic, optimizer, learner, batch, next_value, h, critic_grads, hysteresis=hysteresis
        )
        updates = learner.updates + 1
        learner = dataclasses.replace(
            learner,
            critic_params=critics.params,
            critic_opt_state=critics.opt_state,
            updates=updates,
        )

        # Delayed actor and target updates (``updates`` is unbatched: a real branch).
        skip = lambda learner: (learner, jnp.full((), jnp.nan, jnp.float32))
        learner, pi_loss = jax.lax.cond(
            updates % cfg.policy_delay == 0, lambda lr: actor_step(lr, batch, h), skip, learner
        )
        metrics = {"critic_loss": critics.loss, "actor_loss": pi_loss, "q_mean": critics.q_mean}
        if critics.td_error is not None:  # prioritized replay: the skeleton's new priorities
            metrics["td_error"] = critics.td_error
        return learner, metrics

    algorithm = Algorithm(
        actor,
        critic,
        policy,
        gradient_step,
        init_extra=dict,
        target_actor=True,
        hparams={"policy_noise": cfg.policy_noise, "noise_clip": cfg.noise_clip},
    )
    return make_off_policy_agent(spec, cfg, algorithm, name, learners, insert)


def make_td3(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a TD3 agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(TD3Config, overrides, "agent 'td3'"), "td3")


def make_ddpg(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a DDPG agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(DDPGConfig, overrides, "agent 'ddpg'"), "ddpg")
