r"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905), with automatic entropy tuning.

Built on the shared skeleton ``agents/off_policy/core.py`` (replay, warm-up, update loop);
this file holds the policy and the losses of one gradient step on a minibatch
``(s, a, r, s', terminated)`` of ``B`` transitions, in Stable-Baselines3's order:

* critics (twin by default, ``num_critics``), with :math:`a' \sim \pi(\cdot|s')`:

  .. math:: y = \text{reward\_scale}\, r + \gamma (1 - d)
            \big(\min_k Q_{\bar\phi_k}(s', a') - \alpha \log\pi(a'|s')\big),\qquad
            L_Q = \tfrac12 \sum_k \operatorname{mean}_B (Q_{\phi_k}(s, a) - y)^2

* actor, reparameterized :math:`\tilde a = \tanh(\mu + \sigma\varepsilon)` (the
  squashed Gaussian of ``ops/squashed_gaussian.py``), against the updated critics:

  .. math:: L_\pi = \operatorname{mean}_B\big(\alpha\log\pi(\tilde a|s)
            - \min_k Q_{\phi_k}(s,\tilde a)\big)

* temperature, when ``autotune_alpha`` (eq. 18), with its own Adam and ``alpha_lr``:

  .. math:: L_\alpha = -\operatorname{mean}_B\big(\log\alpha\,
            (\log\pi(\tilde a|s) + \bar{\mathcal H})\big),\quad
            \bar{\mathcal H} = \text{target\_entropy} \;(\text{default } -|A|)

  otherwise :math:`\alpha` is fixed at ``alpha`` (``hparams["alpha"]``);
* Polyak targets :math:`\bar\phi \leftarrow (1-\tau)\bar\phi + \tau\phi` every step.

Log-probabilities are of the normalized action in ``[-1, 1]^A`` (the reference code's
convention), so ``target_entropy = -|A|`` means the same for every action box.

CURL from pixels (``curl``; Laskin, Srinivas & Abbeel 2020, "CURL", ICML, Section 4 and
Figure 2; reference code ``MishaLaskin/curl``, ``curl_sac.py``): the critics share one
encoder (``CriticEnsemble(shared_encoder=True)``), trained by the critic loss plus CURL's
InfoNCE term (``agents/auxiliary/curl.py``, the same auxiliary learner as CURL-Rainbow's: its
gradient is added to the critic loss's by ``off_policy.parts.loss_term_step``), and the
actor reads the same encoder *detached*: its encoder parameters are the critic's, copied in
after every critic step, and its loss stops the gradient at the encoder's output
(``SquashedGaussianActor(detach_encoder=True)``). The momentum (key) encoder is the CURL
learner's own EMA of the critic's encoder with ``curl_tau`` (the paper's 0.05; the
reference's is the target critic's encoder, also at 0.05, while here the target critics
keep SAC's ``tau``). Unlike the reference, the encoder is the whole torso (convolutions and
the dense layer; the reference detaches after the convolutions, so its actor trains its
own copy of the dense layer), the RL losses see the un-augmented frames (pad-and-crop
keeps their size, as in CURL-Rainbow) and a projection head sits before ``W``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.auxiliary.base import Encoder
from jaxrl.agents.auxiliary.latent_prior import with_latent_prior
from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.optim import optimizer_step, parameter_norms
from jaxrl.agents.off_policy.core import (
    Algorithm,
    LearnerState,
    OffPolicyConfig,
    make_critic,
    make_encoder,
    make_off_policy_agent,
    make_optimizer,
)
from jaxrl.agents.off_policy.critics import critic_step
from jaxrl.networks.continuous import SquashedGaussianActor
from jaxrl.networks.multi_input import example_inputs
from jaxrl.ops import linear_schedule
from jaxrl.ops.squashed_gaussian import squashed_gaussian_sample
from jaxrl.ops.targets import soft_update
from jaxrl.types import Agent, ConfigError, EnvSpec
from jaxrl.validation import build_config, check_schedule, option


@dataclasses.dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    """SAC options; defaults are Haarnoja et al. 2018 (arXiv:1812.05905, Table 1) unless
    noted. The shared fields are documented in ``OffPolicyConfig``.

    Attributes:
      hidden_sizes: ReLU layers of actor and critics (256, 256).
      actor_lr, critic_lr: Adam learning rates (3e-4 each).
      alpha_lr: the temperature's Adam learning rate (3e-4).
      gamma: discount (0.99).
      tau: Polyak rate of the targets (0.005, updated every gradient step).
      buffer_size: replay capacity in transitions (1e6).
      batch_size: minibatch size (256).
      updates_per_step: gradient steps per vector-env step (1).
      learning_starts: env steps of random actions before learning (10,000;
        softlearning's ``n_initial_exploration_steps``).
      num_critics: critics in the ensemble, minimum taken over all (2: clipped double Q).
      alpha: the entropy temperature, initial or (``autotune_alpha`` off) fixed. 1.0, as
        Stable-Baselines3 and machin's ``initial_entropy_alpha``.
      autotune_alpha: tune ``log_alpha`` towards ``target_entropy`` (eq. 18).
      target_entropy: the entropy the temperature is tuned towards; None means ``-|A|``.
      reward_scale: rewards are multiplied by this in the TD target (1 with a tuned
        temperature; the 2018a paper used 5 with fixed alpha).
      exploration_noise: noise added to actions while exploring ("none": the stochastic
        policy explores by itself).
      log_std_min, log_std_max: clip of the actor's log-std (-20, 2).
      max_alpha: the largest tuned temperature (Emote's ``max_alpha``, 0.2); None: none.
        ``log_alpha`` is clipped to ``log(max_alpha)`` where read and after each update.
      terminal_masking: cut the target's bootstrap where an episode terminated (Emote's
        ``use_terminal_masking``). Emote's default is off; off needs ``n_step`` 1.
      target_entropy_end: the target entropy a linear schedule from ``target_entropy``
        ends at; None: constant. Emote's ``t_entropy`` given as a ``LinearSchedule``,
        which steps once per backward pass.
      target_entropy_steps: that schedule's length in gradient steps.
      log_parameter_norms: log the L2 norm of each actor and critic parameter and of its
        gradient (Emote's). The metrics are ``norms/actor/...`` and ``norms/critic/...``.
      shared_encoder: one encoder (a conv or ``multi`` torso) for actor and critics.
        The critic loss trains it and the actor reads it detached, as CURL's SAC does
        without its contrastive loss (SAC-AE's sharing; Emote's
        ``SharedEncoderActionValueNet``). Off: each network owns an encoder.
    """

    num_critics: int = option(2, ge=1)
    alpha: float = option(1.0, gt=0)
    autotune_alpha: bool = True
    alpha_lr: float = option(3e-4, gt=0)
    target_entropy: float | None = option(None)
    log_std_min: float = option(-20.0)
    log_std_max: float = option(2.0)
    max_alpha: float | None = option(None, gt=0)
    terminal_masking: bool = True
    target_entropy_end: float | None = option(None)
    target_entropy_steps: int | None = option(None, ge=1)
    log_parameter_norms: bool = False
    shared_encoder: bool = False

    def __post_init__(self):
        super().__post_init__()
        check_schedule(self, "target_entropy_end", "target_entropy_steps", "gradient steps")
        if self.target_entropy_end is not None and not self.autotune_alpha:
            raise ValueError("a target-entropy schedule tunes alpha: set autotune_alpha true")
        if not self.terminal_masking and self.n_step != 1:
            raise ValueError("terminal_masking false takes one-step targets: set n_step 1")
        if self.max_alpha is not None and not self.autotune_alpha:
            raise ValueError("max_alpha bounds a tuned temperature: set autotune_alpha true")


def make_agent(spec: EnvSpec, cfg: SACConfig, name: str = "sac") -> Agent:
    """Builds a SAC agent for ``spec`` from a validated config (with ``latent_prior``,
    acting through a VAE action prior: ``agents/auxiliary/latent_prior.py``)."""

    def build(spec, cfg, learners):
        return make_off_policy_agent(spec, cfg, sac_algorithm(spec, cfg, name), name, learners)

    return with_latent_prior(spec, cfg, name, build)


def shared_encoder(
    spec: EnvSpec, actor: Any, critic: Any, make: Any, name: str, cfg: SACConfig, option: str
):
    """CURL's SAC (module docstring): ``(Encoder, tie)``, the critics' shared encoder as an
    ``agents.auxiliary.base.Encoder`` of the critic's parameters, and ``tie(actor_params,
    critic_params)``, the actor's parameters with its encoder's replaced by the critic's.
    ``option`` (``curl``, ``shared_encoder``): the option that asked for it, for errors."""
    if make is None:
        raise ConfigError(
            f"agent '{name}': {option} needs image observations [H, W, C] and a conv torso "
            f"(or torso multi), {spec.name} gives {list(spec.obs_shape)}; set {option} false"
        )
    obs = example_inputs(spec, cfg.torso)
    key = jax.random.PRNGKey(0)
    critic_shapes = jax.eval_shape(critic.init, key, obs, jnp.zeros((1, actor.action_dim)))
    (enc,) = [k for k in critic_shapes["params"] if k != "critics"]
    assert enc in jax.eval_shape(actor.init, key, obs)["params"], enc
    module = make()

    def tie(actor_params, critic_params):
        return {"params": {**actor_params["params"], enc: critic_params["params"][enc]}}

    encoder = Encoder(
        params=lambda critic_params: {"params": critic_params["params"][enc]},
        apply=module.apply,
        obs_shape=tuple(spec.obs_shape),
        obs_dtype=spec.obs_dtype,
    )
    return encoder, tie


def sac_algorithm(spec: EnvSpec, cfg: SACConfig, name: str = "sac") -> Algorithm:
    """SAC's ``Algorithm`` (actor, critics, policy, one gradient step) for the skeleton of
    ``agents/off_policy/core.py``, or for an agent that composes it (``agents/off_policy/mbpo.py``);
    with ``cfg.curl``, CURL's shared encoder (module docstring)."""
    action_dim = action_box(spec, name)[0].shape[0]
    curl = bool(getattr(cfg, "curl", False))
    share = curl or cfg.shared_encoder
    make = make_encoder(cfg, spec)
    detach: dict[str, Any] = {"detach_encoder": True} if share else {}
    actor = SquashedGaussianActor(
        action_dim,
        cfg.hidden_sizes,
        obs_ndim=len(spec.obs_shape),
        log_std_min=cfg.log_std_min,
        log_std_max=cfg.log_std_max,
        encoder=make,
        **detach,
    )
    critic = make_critic(cfg, spec, cfg.num_critics, shared_encoder=share)
    encoder, tie = None, None
    if share:
        option = "curl" if curl else "shared_encoder"
        encoder, tie = shared_encoder(spec, actor, critic, make, name, cfg, option)
        encoder = encoder if curl else None  # the encoder a CURL learner trains
    optimizer = make_optimizer(cfg)
    target_entropy = -float(action_dim) if cfg.target_entropy is None else cfg.target_entropy

    def clip_log_alpha(log_alpha: jax.Array) -> jax.Array:
        """``log_alpha`` at most ``log(max_alpha)``; unchanged without ``max_alpha``."""
        if cfg.max_alpha is None:
            return log_alpha
        return jnp.minimum(log_alpha, jnp.log(jnp.float32(cfg.max_alpha)))

    def entropy_target(h: dict[str, jax.Array], updates: jax.Array) -> jax.Array:
        """The target entropy at gradient step ``updates`` (the schedule, or constant)."""
        if cfg.target_entropy_steps is None:
            return h["target_entropy"]
        ramp = linear_schedule(
            h["target_entropy"], h["target_entropy_end"], cfg.target_entropy_steps
        )
        return ramp(updates)

    def sample(actor_params, obs, key):
        """``(action [B, A] in [-1, 1], log_prob [B])``, reparameterized."""
        mean, log_std = actor.apply(actor_params, obs)
        return squashed_gaussian_sample(key, mean, log_std)

    def policy(actor_params, obs, key, explore: bool):
        if explore:
            return sample(actor_params, obs, key)[0]
        return jnp.tanh(actor.apply(actor_params, obs)[0])  # the mode's squash (greedy)

    def init_extra() -> dict[str, Any]:
        log_alpha = jnp.log(jnp.asarray(cfg.alpha, jnp.float32))
        return {"log_alpha": log_alpha, "alpha_opt_state": optimizer.init(log_alpha)}

    def gradient_step(learner: LearnerState, batch, h, key, critic_grads=None):
        """One step; ``critic_grads`` (a loss term's, e.g. CURL's) add to the critics'."""
        next_key, actor_key = jax.random.split(key)
        log_alpha = clip_log_alpha(learner.extra["log_alpha"])
        alpha = jnp.exp(log_alpha) if cfg.autotune_alpha else h["alpha"]
        if not cfg.terminal_masking:  # bootstrap through terminations (Emote's default)
            batch = batch._replace(terminated=jnp.zeros_like(batch.terminated))

        # Critics.
        next_action, next_log_prob = sample(learner.actor_params, batch.next_obs, next_key)
        next_q = cast(
            jax.Array, critic.apply(learner.target_critic_params, batch.next_obs, next_action)
        )
        next_value = next_q.min(axis=0) - alpha * next_log_prob
        critics = critic_step(
            critic, optimizer, learner, batch, next_value, h, critic_grads, scale=0.5
        )
        critic_params = critics.params
        actor_params = learner.actor_params
        if tie is not None:  # shared: the actor reads the critics' new encoder
            actor_params = tie(actor_params, critic_params)

        # Actor, against the updated critics.
        def actor_loss(params):
            action, log_prob = sample(params, batch.obs, actor_key)
            q = critic.apply(critic_params, batch.obs, action).min(axis=0)
            return jnp.mean(alpha * log_prob - q), log_prob

        (pi_loss, log_prob), actor_grads = jax.value_and_grad(actor_loss, has_aux=True)(
            actor_params
        )
        actor_params, actor_opt_state = optimizer_step(
            optimizer, actor_params, actor_grads, learner.actor_opt_state, h["actor_lr"]
        )

        # Temperature.
        extra = learner.extra
        target = entropy_target(h, learner.updates)
        entropy_gap = jax.lax.stop_gradient(log_prob + target)
        alpha_loss = lambda la: -jnp.mean(la * entropy_gap)
        a_loss, grad = jax.value_and_grad(alpha_loss)(log_alpha)
        if cfg.autotune_alpha:
            log_alpha, alpha_opt_state = optimizer_step(
                optimizer, log_alpha, grad, extra["alpha_opt_state"], h["alpha_lr"]
            )
            log_alpha = clip_log_alpha(log_alpha)
            extra = {"log_alpha": log_alpha, "alpha_opt_state": alpha_opt_state}

        learner = dataclasses.replace(
            learner,
            actor_params=actor_params,
            critic_params=critic_params,
            target_critic_params=soft_update(learner.target_critic_params, critic_params, h["tau"]),
            actor_opt_state=actor_opt_state,
            critic_opt_state=critics.opt_state,
            extra=extra,
            updates=learner.updates + 1,
        )
        metrics = {
            "critic_loss": critics.loss,
            "actor_loss": pi_loss,
            "alpha_loss": a_loss,
            "alpha": alpha,
            "entropy": -log_prob.mean(),
            "q_mean": critics.q_mean,
        }
        if cfg.target_entropy_steps is not None:
            metrics["target_entropy"] = target
        if critics.td_error is not None:  # prioritized replay: the skeleton's new priorities
            metrics["td_error"] = critics.td_error
        if cfg.log_parameter_norms:
            metrics |= parameter_norms("actor", actor_params, actor_grads)
            metrics |= parameter_norms("critic", critic_params, critics.grads)
        return learner, metrics

    return Algorithm(
        actor,
        critic,
        policy,
        gradient_step,
        init_extra=init_extra,
        target_actor=False,
        hparams=sac_hparams(cfg, target_entropy),
        encoder=encoder,
    )


def sac_hparams(cfg: SACConfig, target_entropy: float) -> dict[str, float]:
    """SAC's continuous hyperparameters (sweepable): the temperature's, and the target
    entropy's schedule end where one is set."""
    hparams = {"alpha": cfg.alpha, "alpha_lr": cfg.alpha_lr, "target_entropy": target_entropy}
    if cfg.target_entropy_end is not None:
        hparams["target_entropy_end"] = cfg.target_entropy_end
    return hparams


def make_sac(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a SAC agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(SACConfig, overrides, "agent 'sac'"))
