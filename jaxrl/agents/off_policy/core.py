"""The off-policy actor-critic skeleton that SAC, TD3 and DDPG share.

What is common to the three lives here, once: the config fields they share
(``OffPolicyConfig``), the state (``OffPolicyState`` holding a ``LearnerState``, the replay
buffer, the exploration-noise state, the env-step counter and ``hparams``), and
``make_off_policy_agent``, which builds ``init``, ``act`` and ``update`` around an
``Algorithm``: the actor and critic modules, the policy, and one gradient step (the
losses, which is all that differs between SAC and TD3/DDPG; see ``agents/off_policy/sac.py`` and
``agents/off_policy/td3.py``).

Actions are normalized: actors output ``[-1, 1]^A``, the replay buffer stores normalized
actions and critics take them; ``act`` rescales to the environment's box
``low + (a + 1) (high - low) / 2``. Exploration noise (``jaxrl.ops.noise``) is added in the
normalized space and the result clipped to ``[-1, 1]``, so noise scales are fractions of the
half-width of the box (TD3's ``expl_noise`` 0.1 on MuJoCo's ``[-1, 1]`` boxes).

``act(explore=True)`` takes uniformly random actions while fewer than ``learning_starts`` env
steps have been given to ``update`` (Fujimoto et al.'s ``start_timesteps``). ``update``
inserts the rollout ``[T, num_envs]`` into the replay buffer and, from ``learning_starts``
on, takes ``updates_per_step * T`` gradient steps (``updates_per_step`` per vector-env step:
Stable-Baselines3's ``gradient_steps`` with ``train_freq=1``). The learning branch is a
``lax.cond`` on the env-step counter, which only grows by constants and so stays unbatched
(a real branch) under ``vmap`` over seeds or hyperparameters, as in
``agents/q_learning/rainbow.py``.

Ornstein-Uhlenbeck noise has state: it is the agent's per-env carry (``jaxrl.types``),
``[num_envs, A]`` float32, zero at an episode's start (``init_carry``); ``act`` advances it
by one step and the runner resets it where an episode ended, so it works with any
``rollout_len``. The other noises are stateless (carry ``()``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl.agents.auxiliary import base as aux_lib
from jaxrl.agents.auxiliary.extra_loss import KEY, check_attached
from jaxrl.agents.auxiliary.latent_prior import LatentPriorOptions
from jaxrl.agents.auxiliary.options import AuxiliaryOptions, make_auxiliary
from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.optim import OptimizerOptions, scale_transform, scheduled_lrs
from jaxrl.agents.common.param_noise import no_param_noise, param_noise
from jaxrl.agents.common.replay_choice import ReplayOptions, make_replay
from jaxrl.agents.common.replay_sampling import prioritized_sampling, uniform_sampling
from jaxrl.agents.off_policy.parts import exploration_noise, learn, param_noise_step
from jaxrl.buffers import PriorityParams
from jaxrl.networks import multi_input
from jaxrl.networks.spec import TorsoSpec
from jaxrl.networks.torsos import refuse
from jaxrl.ops import noise as noise_ops
from jaxrl.types import Agent, ConfigError, EnvSpec, Transition, shared_field
from jaxrl.validation import option

NOISE_PARAMS = ("noise_mu", "noise_sigma", "noise_low", "noise_high", "noise_theta", "noise_dt")
PerDim = float | tuple[float, ...]
Noise = Literal["none", "gaussian", "clipped_gaussian", "uniform", "ou"]


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(ReplayOptions, OptimizerOptions, AuxiliaryOptions, LatentPriorOptions):
    """Options shared by SAC, TD3 and DDPG (each agent's ``Config`` subclasses this and
    declares only the defaults it changes and its own options; ranges are inherited).

    Attributes:
      hidden_sizes: ReLU layers of actor and critics.
      actor_lr, critic_lr: Adam learning rates.
      gamma: discount.
      tau: Polyak rate of the target networks.
      buffer_size, batch_size: replay capacity (transitions) and minibatch size.
      learning_starts: env steps of uniformly random actions before learning starts.
      updates_per_step: gradient steps per vector-env step (per ``T`` of a rollout).
      reward_scale: rewards are multiplied by this in the TD target (Haarnoja et al. 2018a).
      exploration_noise: noise added to the policy's action while exploring:
        ``"none"``, ``"gaussian"`` (``mu + sigma * eps``), ``"clipped_gaussian"`` (clipped
        to ``[noise_low, noise_high]``), ``"uniform"`` (``U(noise_low, noise_high)``), or
        ``"ou"`` (Ornstein-Uhlenbeck with ``noise_mu, noise_sigma, noise_theta, noise_dt``).
      noise_mu, noise_sigma, noise_low, noise_high, noise_theta, noise_dt: the noise
        parameters, in normalized action units; each a float or one value per action
        dimension.
      max_grad_norm: global gradient-norm clip of every optimizer, or None.
      n_step: length of the multi-step TD target (1: one-step). The critic regresses on
        ``reward_scale * sum_{k<m} gamma^k r_k + gamma^m (1 - terminated) V(s_m)``, cut at
        an episode's end (``ops.n_step_bootstrap``; Hessel et al. 2018).
      prioritized: proportional prioritized replay (Schaul et al. 2016; machin's
        ``DDPGPer``). Items are drawn with probability ``(|delta| + priority_eps) **
        priority_alpha`` (normalized), ``delta`` the critics' TD error averaged over the
        ensemble, and the critic loss weighted by importance weights whose exponent is
        annealed linearly from ``beta_start`` to 1 over ``beta_decay_steps`` env steps.
        ``priority_alpha`` 0.6, ``beta_start`` 0.4: the paper's proportional variant
        (SAC's ``alpha`` is its entropy temperature, hence the prefix).
      priority_alpha: prioritized replay's priority exponent (0.6).
      beta_start: the importance-weight exponent at step 0, annealed to 1 (0.4).
      beta_decay_steps: env steps over which the importance exponent reaches 1.
      priority_eps: added to |TD error| in priorities, so none is zero (1e-6).
      target_update_period: 0: Polyak averaging with ``tau``; ``k > 0``: hard copies
        every ``k``-th critic step. With 0 (the default) the targets are averaged wherever
        the algorithm updates them; with ``k`` they are copied from the online networks
        after every ``k``-th gradient (critic) step (hard updates, as DQN's target network).
      adam_eps: Adam's epsilon (optax's 1e-8). The optimizer and the learning-rate
        schedule of every ``*_lr`` are ``agents/common/optim.py``'s options.
      torso: the observation encoder (``networks.make_torso``: a name, a registered
        name or a torso spec). ``"auto"``: none (the MLP on the flat observation) for
        vectors, ``nature`` / ``minatar`` for images. Each actor and critic owns one.
        ``"multi"``: every entry of a dict observation through its own encoder, joined
        (``networks.multi_input``).
      feature_dim: the encoder's output width (one dense layer after its convolutions).
      demo_file, demo_ratio, amp, action_symmetry and their options: demonstrations and
        auxiliary learners (``agents/auxiliary/options.py``); off by default.
      latent_prior and its options: act through a VAE action prior trained on
        ``demo_file`` (``agents/auxiliary/latent_prior.py``); off by default.
    """

    hidden_sizes: tuple[int, ...] = option((256, 256), ge=1, min_len=1)
    actor_lr: float = option(3e-4, gt=0)
    critic_lr: float = option(3e-4, gt=0)
    gamma: float = option(0.99, ge=0, le=1)
    tau: float = option(0.005, ge=0, le=1)
    buffer_size: int = 1_000_000
    batch_size: int = 256
    updates_per_step: int = option(1, ge=1)
    reward_scale: float = option(1.0)
    exploration_noise: Noise = "none"
    noise_mu: PerDim = option(0.0)
    noise_sigma: PerDim = option(0.1, ge=0)
    noise_low: PerDim = option(-0.5)
    noise_high: PerDim = option(0.5)
    noise_theta: PerDim = option(0.15, ge=0)
    noise_dt: PerDim = option(1e-2, gt=0)
    max_grad_norm: float | None = option(None, gt=0)
    torso: str | TorsoSpec = "auto"
    feature_dim: int = option(50, ge=1)
    n_step: int = option(1, ge=1)
    prioritized: bool = False
    priority_alpha: float = option(0.6, ge=0)
    beta_start: float = option(0.4, ge=0, le=1)
    beta_decay_steps: int = option(100_000, ge=0)
    priority_eps: float = option(1e-6, ge=0)
    target_update_period: int = option(0, ge=0)


@flax.struct.dataclass
class LearnerState:
    """Everything a gradient step changes. ``extra`` is the algorithm's own (SAC: the
    entropy temperature ``log_alpha`` and its optimizer state; TD3/DDPG: empty)."""

    actor_params: Any
    critic_params: Any  # stacked over the critic ensemble's leading axis
    target_actor_params: Any  # None without a target actor (SAC)
    target_critic_params: Any
    actor_opt_state: Any
    critic_opt_state: Any
    extra: Any
    updates: jax.Array = shared_field()  # int32 gradient (critic) steps taken
    aux: Any = None  # auxiliary learners and demonstrations (agents/auxiliary/base.py), or None


@flax.struct.dataclass
class OffPolicyState:
    learner: LearnerState
    buffer: Any
    step: jax.Array = shared_field()  # int32 env steps given to update
    hparams: dict[str, jax.Array]
    # With parameter-space noise (TD3/DDPG's ``param_noise``): the perturbed actor that
    # explores, its scale ``sigma`` and the last measured ``distance``; None otherwise.
    param_noise: Any = None
    actors: Any = None  # Ape-X: the actors' copy of the parameters (agents/off_policy/apex_ddpg.py)


class Algorithm(NamedTuple):
    """What an algorithm plugs into the skeleton.

    actor, critic: Flax modules, ``actor(obs)`` and ``critic(obs, action) -> [K, ...]``.
    policy: ``(actor_params, obs [N, ...], key, explore) -> action [N, A]`` in ``[-1, 1]``.
    gradient_step: ``(learner, batch: Transition [B, ...], hparams, key,
      critic_grads=None) -> (learner, metrics)`` with float32 scalar metrics (NaN where
      not computed); ``critic_grads``, a loss term's gradient, adds to the critics'.
    init_extra: ``() -> LearnerState.extra``.
    target_actor: whether the algorithm has a target actor (TD3, DDPG; not SAC, whose
      ``target_actor_params`` is then None).
    hparams: the algorithm's own continuous hyperparameters (name -> float).
    encoder: the critic's encoder as ``agents.auxiliary.base.Encoder`` (its ``params`` take the
      critic's parameters) for a learner with a loss term (CURL), whose gradient
      ``gradient_step`` then takes as ``critic_grads`` (added to the critic loss's); None:
      such learners are refused.
    """

    actor: nn.Module
    critic: nn.Module
    policy: Callable[..., jax.Array]
    gradient_step: Callable[..., tuple[LearnerState, dict[str, jax.Array]]]
    init_extra: Callable[[], Any]
    target_actor: bool
    hparams: dict[str, float]
    encoder: Any = None


def per_dim(cfg: OffPolicyConfig, field: str, action_dim: int, name: str) -> np.ndarray:
    """A noise parameter as ``[A]`` float32: a float broadcast, or one value per dimension."""
    value = np.asarray(getattr(cfg, field), np.float32).reshape(-1)
    if value.size not in (1, action_dim):
        raise ConfigError(
            f"agent '{name}' option '{field}' needs 1 or {action_dim} values (one per action "
            f"dimension), got {value.size}"
        )
    return np.broadcast_to(value, (action_dim,)).copy()


def make_encoder(cfg: OffPolicyConfig, spec: EnvSpec) -> Any:
    """None for an ``mlp`` torso, else a function building ``cfg.torso`` with one dense
    layer of ``cfg.feature_dim`` after its convolutions (SAC-AE's 50, Yarats et al. 2019)
    for each actor and critic (``networks.continuous``)."""
    from jaxrl.networks import make_torso
    from jaxrl.networks.torsos import torso_name

    if multi_input.is_multi(cfg.torso):  # each entry its encoder of feature_dim, joined
        multi_input.input_rules(spec)  # an entry with no encoder: fail now
        return functools.partial(multi_input.multi_torso, spec, (cfg.feature_dim,))
    torso = torso_name(cfg.torso, spec.obs_shape)
    if torso == "mlp":
        return None
    make_torso(torso, spec.obs_shape, (cfg.feature_dim,))  # a bad name or spec: fail now
    return functools.partial(make_torso, torso, tuple(spec.obs_shape), (cfg.feature_dim,))


def make_critic(
    cfg: OffPolicyConfig, spec: EnvSpec, num_critics: int, shared_encoder: bool = False
) -> nn.Module:
    """The critic ensemble; ``shared_encoder``: one encoder for all critics (CURL's SAC)."""
    from jaxrl.networks.continuous import CriticEnsemble

    encoder = make_encoder(cfg, spec)
    kw: dict[str, Any] = {"shared_encoder": True} if shared_encoder else {}
    return CriticEnsemble(
        num_critics, cfg.hidden_sizes, obs_ndim=len(spec.obs_shape), encoder=encoder, **kw
    )


def make_optimizer(cfg: OffPolicyConfig) -> optax.GradientTransformation:
    """``cfg.optimizer`` (``agents/common/optim.py``; Adam by default) without its learning rate
    (``optimizer_step`` applies ``-lr`` from hparams, scaled by ``cfg.lr_schedule``)."""
    clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm else []
    return optax.chain(*clip, scale_transform(cfg, cfg.adam_eps))


def make_off_policy_agent(
    spec: EnvSpec,
    cfg: OffPolicyConfig,
    algorithm: Algorithm,
    name: str,
    learners: tuple[tuple[str, aux_lib.AuxLearner], ...] = (),
    insert: Callable | None = None,
) -> Agent:
    """Builds ``Agent(init, act, update)`` around ``algorithm`` (module docstring);
    ``learners`` are auxiliary learners attached besides those of ``cfg`` (the VAE prior's,
    ``agents/auxiliary/latent_prior.py``); ``insert`` sets new items' priorities after
    ``add``, given the replay sampling (Ape-X's actors, ``agents/off_policy/apex_ddpg.py``)."""
    low, high = action_box(spec, name)
    action_dim = low.shape[0]
    centre, half = (high + low) / 2, (high - low) / 2
    noise_params = {f: per_dim(cfg, f, action_dim, name) for f in NOISE_PARAMS}
    buffer = make_replay(spec, cfg, name, "full", cfg.prioritized)
    optimizer = make_optimizer(cfg)
    kind = cfg.exploration_noise
    n = spec.num_envs
    sampling = uniform_sampling()
    if cfg.prioritized:  # the buffer's knobs and beta's start kept in hparams
        sampling = prioritized_sampling(
            buffer,
            cfg.beta_decay_steps,
            knobs=lambda h: PriorityParams(h["priority_alpha"], h["priority_eps"]),
            beta_start=lambda h: h["beta_start"],
            hparams={k: getattr(cfg, k) for k in ("priority_alpha", "beta_start", "priority_eps")},
        )
    perturbation = no_param_noise()
    if getattr(cfg, "param_noise", False):  # TD3/DDPG's parameter noise (Plappert et al.)
        adapt = lambda state, metrics, key: param_noise_step(
            cfg, buffer, algorithm.policy, state, metrics, key
        )
        perturbation = param_noise(cfg, adapt)
    auxiliary = make_auxiliary(
        spec, cfg, name, lambda a: (a - centre) / half, encoder=algorithm.encoder
    )
    if auxiliary is not None and multi_input.is_multi(cfg.torso):
        raise refuse(f"agent '{name}' with auxiliary learners or demonstrations")
    if learners:
        base = auxiliary or aux_lib.Auxiliary()
        auxiliary = base._replace(learners=(*base.learners, *learners))
    users = getattr(cfg, "extra_losses", ())
    if auxiliary is not None and users:  # a user's terms, checked on the critic
        obs, zero = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype), jnp.zeros((1, action_dim))
        params = jax.eval_shape(lambda k: algorithm.critic.init(k, obs, zero), KEY)
        action = jax.ShapeDtypeStruct((action_dim,), jnp.float32)
        check_attached(auxiliary.learners, users, params, spec, action, name)

    def init(key: jax.Array) -> OffPolicyState:
        actor_key, critic_key = jax.random.split(key)
        obs = multi_input.example_inputs(spec, cfg.torso)
        actor_params = algorithm.actor.init(actor_key, obs)
        critic_params = algorithm.critic.init(critic_key, obs, jnp.zeros((1, action_dim)))
        stored = jax.tree.map(lambda s: jnp.zeros((n, *s.shape), s.dtype), spec.obs_spec)
        example = Transition(
            obs=stored,
            action=jnp.zeros((n, action_dim), jnp.float32),
            reward=jnp.zeros((n,), jnp.float32),
            next_obs=stored,
            terminated=jnp.zeros((n,), bool),
            truncated=jnp.zeros((n,), bool),
            extras={},
        )
        scalars = dict(
            actor_lr=cfg.actor_lr,
            critic_lr=cfg.critic_lr,
            gamma=cfg.gamma,
            tau=cfg.tau,
            reward_scale=cfg.reward_scale,
            **algorithm.hparams,
            **aux_lib.hparams(auxiliary),
        )
        hparams = {k: jnp.asarray(v, jnp.float32) for k, v in scalars.items()}
        hparams.update({k: jnp.asarray(v) for k, v in noise_params.items()})
        hparams.update({k: jnp.asarray(v, jnp.float32) for k, v in sampling.hparams.items()})
        learner = LearnerState(
            actor_params=actor_params,
            critic_params=critic_params,
            target_actor_params=actor_params if algorithm.target_actor else None,
            target_critic_params=critic_params,
            actor_opt_state=optimizer.init(actor_params),
            critic_opt_state=optimizer.init(critic_params),
            extra=algorithm.init_extra(),
            updates=jnp.zeros((), jnp.int32),
            aux=aux_lib.init(auxiliary, key, critic_params),
        )
        return OffPolicyState(
            learner=learner,
            buffer=buffer.init(example),
            step=jnp.zeros((), jnp.int32),
            hparams=hparams,
            param_noise=perturbation.init(actor_params, jax.random.fold_in(key, 1)),
        )

    def init_carry(num_envs: int) -> Any:
        """The OU state ``[num_envs, A]`` at an episode's start; ``()`` for other noises."""
        return noise_ops.ou_init((num_envs, action_dim), None) if kind == "ou" else ()

    def act(state: OffPolicyState, obs: jax.Array, carry, key: jax.Array, explore: bool = True):
        policy_key, noise_key, random_key = jax.random.split(key, 3)
        actor_params = state.learner.actor_params
        if explore:  # with parameter noise the perturbed actor explores
            actor_params, _ = perturbation.acting(state.param_noise, actor_params, None)
        action = algorithm.policy(actor_params, obs, policy_key, explore)
        if explore:
            noise, carry = exploration_noise(kind, state.hparams, carry, noise_key, action.shape)
            action = jnp.clip(action + noise, -1.0, 1.0)
            uniform = jax.random.uniform(random_key, action.shape, jnp.float32, -1.0, 1.0)
            action = jnp.where(state.step < cfg.learning_starts, uniform, action)
        return centre + half * action, carry, {}

    def update(state: OffPolicyState, rollout: Transition, key: jax.Array):
        num_steps, num_envs = rollout.reward.shape
        data = rollout._replace(action=(rollout.action - centre) / half, extras={})
        priority = sampling.knobs(state.hparams)
        buffer_state = buffer.add(state.buffer, data, priority)
        step = state.step + num_steps * num_envs
        learning = (step >= cfg.learning_starts) & buffer.can_sample(buffer_state)
        k = cfg.updates_per_step * num_steps
        do_learn = functools.partial(
            learn, cfg, buffer, algorithm, num_steps=k, aux=auxiliary, sampling=sampling
        )
        hparams = scheduled_lrs(cfg, state.hparams, step)
        hparams = {**hparams, "beta": sampling.beta(hparams, step)}  # None: uniform replay
        if insert is not None:
            buffer_state = insert(buffer, algorithm, state, buffer_state, data, hparams, sampling)
        args = (state.learner, buffer_state, hparams, key)
        shapes = jax.eval_shape(do_learn, *args)[1]
        skip = lambda learner, buffer_state, *_: (
            (learner, sampling.threaded(buffer_state)),
            jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes),
        )
        (learner, carried), metrics = jax.lax.cond(learning, do_learn, skip, *args)
        buffer_state = sampling.source(buffer_state, carried)
        state = dataclasses.replace(state, learner=learner, buffer=buffer_state, step=step)
        if auxiliary is not None:  # the learners' on_metrics (none: metrics as they are)
            metrics = aux_lib.on_metrics(auxiliary, metrics, learner.aux)
        return perturbation.adapt(state, metrics, key)

    return Agent(init=init, act=act, update=update, init_carry=init_carry)
