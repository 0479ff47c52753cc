"""PPO (Schulman et al. 2017) and A2C (Mnih et al. 2016; synchronous, as in the OpenAI
baselines), for discrete (categorical) and continuous (diagonal Gaussian) actions.

Both are one algorithm: an actor-critic (``networks.ActorCritic``) acts in ``num_envs``
environments for ``rollout_len`` steps; ``update`` computes GAE advantages from the rollout
(``ops.gae``, bootstrapping from the true final observation at a truncation and not at a
termination) and takes ``update_epochs x num_minibatches`` gradient steps on
``loss = policy_loss + value_weight * value_loss - entropy_weight * entropy``. PPO's
policy loss is the clipped surrogate (``surrogate_loss_clip``), with optional value
clipping; A2C (``make_a2c``) is the same update with one epoch of one minibatch and the
plain policy-gradient loss.

Read top to bottom: ``PPOConfig``, ``A2CConfig``, the state, then ``make_agent`` building
``init``, ``act`` and ``update``. Options: gradient-norm clipping, learning rate annealed
linearly to zero over ``total_steps`` (filled from ``run.steps`` by the CLI), advantage
normalization, observation normalization (running mean/variance in the state) and reward
scaling. ``act`` returns ``extras = {"log_prob", "value"}`` (and ``"raw_action"``, the
Gaussian sample before clipping to the box, for continuous actions).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.buffers.rollout import RolloutBatch, flatten, shuffled_minibatches
from jaxrl.networks.policies import ActorCritic
from jaxrl.networks.torsos import torso_name
from jaxrl.ops import distributions as D
from jaxrl.ops.normalization import (
    RunningMeanStd,
    init_running_stats,
    normalize,
    scale_rewards,
    update_running_stats,
)
from jaxrl.ops.policy_gradient import (
    normalize_advantages,
    policy_gradient_loss,
    ppo_clip_loss,
    value_loss,
)
from jaxrl.ops.returns import gae
from jaxrl.types import Agent, Box, ConfigError, Discrete, EnvSpec, Transition
from jaxrl.validation import build_config


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO options. Defaults are CleanRL's ``ppo.py`` (classic control; Huang et al. 2022,
    "The 37 Implementation Details of PPO"); names follow machin's PPO where it has one.

    Attributes:
      hidden_sizes: torso widths (64, 64); for images, the dense widths after the CNN
        (left at (64, 64): 512 after the Nature CNN, 256 after IMPALA's, 128 after MinAtar's).
      torso: ``"auto"`` (an MLP for vectors, ``"minatar"`` for images under 32 px,
        ``"nature"`` for other images), ``"mlp"``, ``"nature"``, ``"impala"``, ``"minatar"``.
      activation: ``"tanh"`` or ``"relu"`` in MLP torsos.
      shared_torso: one torso for actor and critic (Atari) or separate ones (False).
      lr: Adam learning rate (2.5e-4); adam_eps: Adam epsilon (1e-5).
      anneal_lr: decay the learning rate linearly to 0 over ``total_steps``.
      total_steps: env steps of the run, for annealing; the CLI fills it from
        ``run.steps`` when left None; None (outside the CLI) means no annealing.
      gamma: discount (0.99); gae_lambda: GAE's lambda (0.95).
      update_epochs: passes over each rollout (4); num_minibatches: per pass (4).
      surrogate_loss_clip: PPO's epsilon (0.2).
      value_loss_clip: clip the value change to this, or None (CleanRL clips at 0.2).
      entropy_weight: entropy bonus coefficient (0.01); value_weight: value loss (0.5).
      normalize_advantage: per minibatch (True).
      max_grad_norm: global gradient-norm clip (0.5), or None.
      log_std_init: initial log-std of the Gaussian policy (0.0).
      normalize_obs: divide observations by a running std (running stats in the state).
      normalize_reward: divide rewards by the running std of the discounted return.
      obs_clip, scaled_reward_clip: clip normalized observations / scaled rewards to
        [-c, c] (10, SB3's ``VecNormalize``).
      reward_clip: clip raw rewards to [-c, c] for learning, or None (Atari: 1).
    """

    hidden_sizes: tuple[int, ...] = (64, 64)
    torso: Literal["auto", "mlp", "nature", "impala", "minatar"] = "auto"
    activation: Literal["tanh", "relu"] = "tanh"
    shared_torso: bool = False
    lr: float = 2.5e-4
    adam_eps: float = 1e-5
    anneal_lr: bool = True
    total_steps: int | None = None
    gamma: float = 0.99
    gae_lambda: float = 0.95
    update_epochs: int = 4
    num_minibatches: int = 4
    surrogate_loss_clip: float = 0.2
    value_loss_clip: float | None = 0.2
    entropy_weight: float = 0.01
    value_weight: float = 0.5
    normalize_advantage: bool = True
    max_grad_norm: float | None = 0.5
    log_std_init: float = 0.0
    normalize_obs: bool = False
    normalize_reward: bool = False
    obs_clip: float = 10.0
    scaled_reward_clip: float = 10.0
    reward_clip: float | None = None

    def __post_init__(self):
        for name in ("update_epochs", "num_minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.total_steps is not None and self.total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {self.total_steps}")


@dataclasses.dataclass(frozen=True)
class A2CConfig:
    """A2C options: Stable-Baselines3's ``A2C`` defaults (after the OpenAI baselines),
    except the optimizer, Adam here as in PureJaxRL (SB3 uses RMSprop, alpha 0.99).
    One gradient step per rollout on the whole rollout, no clipping; see ``PPOConfig``
    for the meaning of each field. SB3: lr 7e-4, gamma 0.99, gae_lambda 1.0 (n-step
    returns), entropy 0.0, value 0.5, max_grad_norm 0.5, no advantage normalization."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    torso: Literal["auto", "mlp", "nature", "impala", "minatar"] = "auto"
    activation: Literal["tanh", "relu"] = "tanh"
    shared_torso: bool = False
    lr: float = 7e-4
    adam_eps: float = 1e-5
    anneal_lr: bool = False
    total_steps: int | None = None
    gamma: float = 0.99
    gae_lambda: float = 1.0
    entropy_weight: float = 0.0
    value_weight: float = 0.5
    normalize_advantage: bool = False
    max_grad_norm: float | None = 0.5
    log_std_init: float = 0.0
    normalize_obs: bool = False
    normalize_reward: bool = False
    obs_clip: float = 10.0
    scaled_reward_clip: float = 10.0
    reward_clip: float | None = None


@flax.struct.dataclass
class PPOHparams:
    """Continuous hyperparameters, kept in the state so a sweep can vmap over them."""

    lr: jax.Array
    gamma: jax.Array
    gae_lambda: jax.Array
    surrogate_loss_clip: jax.Array
    value_loss_clip: jax.Array
    entropy_weight: jax.Array
    value_weight: jax.Array
    max_grad_norm: jax.Array


@flax.struct.dataclass
class PPOState:
    params: Any
    opt_state: Any
    obs_stats: RunningMeanStd  # shape obs_shape with normalize_obs, else ()
    return_stats: RunningMeanStd  # scalar: running std of discounted returns
    discounted_return: jax.Array  # [num_envs] running G for reward scaling
    step: jax.Array  # int32 env steps given to update
    updates: jax.Array  # int32 gradient steps taken
    hparams: PPOHparams


def make_network(spec: EnvSpec, cfg: PPOConfig | A2CConfig) -> ActorCritic:
    space = spec.action_space
    discrete = isinstance(space, Discrete)
    hidden = cfg.hidden_sizes
    torso = torso_name(cfg.torso, spec.obs_shape)
    if torso != "mlp" and hidden == (64, 64):  # each CNN's own dense layer
        hidden = {"nature": (512,), "impala": (256,), "minatar": (128,)}[torso]
    return ActorCritic(
        action_dim=space.n if discrete else space.shape[0],
        discrete=discrete,
        hidden_sizes=hidden,
        obs_ndim=len(spec.obs_shape),
        activation=cfg.activation,
        shared=cfg.shared_torso,
        log_std_init=cfg.log_std_init,
        torso=torso,
    )


def make_agent(
    spec: EnvSpec, cfg: PPOConfig | A2CConfig, *, a2c: bool = False, name: str = "ppo"
) -> Agent:
    """Builds PPO (or, with ``a2c``, A2C: one epoch, one minibatch, no clipping)."""
    space = spec.action_space
    if isinstance(space, Box) and len(space.shape) != 1:
        raise ConfigError(f"agent '{name}' needs a 1-D Box action space, got {space}")
    discrete = isinstance(space, Discrete)
    if cfg.normalize_obs and spec.obs_dtype == "uint8":
        raise ConfigError(f"agent '{name}': normalize_obs is for float observations, not images")
    network = make_network(spec, cfg)
    update_epochs = 1 if a2c else cfg.update_epochs
    num_minibatches = 1 if a2c else cfg.num_minibatches
    optimizer = optax.scale_by_adam(eps=cfg.adam_eps)
    low = None if discrete else jnp.asarray(space.low, jnp.float32)
    high = None if discrete else jnp.asarray(space.high, jnp.float32)

    def norm_obs(state: PPOState, obs: jax.Array) -> jax.Array:
        return normalize(state.obs_stats, obs, cfg.obs_clip) if cfg.normalize_obs else obs

    def log_prob_entropy(dist, action):
        if discrete:
            return D.categorical_log_prob(dist, action), D.categorical_entropy(dist)
        mean, log_std = dist
        return D.gaussian_log_prob(mean, log_std, action), D.gaussian_entropy(mean, log_std)

    def init(key: jax.Array) -> PPOState:
        params = network.init(key, jnp.zeros((1, *spec.obs_shape), spec.obs_dtype))
        f32 = lambda x: jnp.asarray(x, jnp.float32)
        clip = getattr(cfg, "surrogate_loss_clip", 0.0)
        value_clip = getattr(cfg, "value_loss_clip", None)
        return PPOState(
            params=params,
            opt_state=optimizer.init(params),
            obs_stats=init_running_stats(spec.obs_shape if cfg.normalize_obs else ()),
            return_stats=init_running_stats(),
            discounted_return=jnp.zeros((spec.num_envs,), jnp.float32),
            step=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            hparams=PPOHparams(
                lr=f32(cfg.lr),
                gamma=f32(cfg.gamma),
                gae_lambda=f32(cfg.gae_lambda),
                surrogate_loss_clip=f32(clip),
                value_loss_clip=f32(jnp.inf if value_clip is None else value_clip),
                entropy_weight=f32(cfg.entropy_weight),
                value_weight=f32(cfg.value_weight),
                max_grad_norm=f32(jnp.inf if cfg.max_grad_norm is None else cfg.max_grad_norm),
            ),
        )

    def act(state: PPOState, obs: jax.Array, carry, key: jax.Array, explore: bool = True):
        dist, value = network.apply(state.params, norm_obs(state, obs))
        if discrete:
            action = D.categorical_sample(key, dist) if explore else D.categorical_mode(dist)
            extras = {"log_prob": D.categorical_log_prob(dist, action), "value": value}
            return action, carry, extras
        mean, log_std = dist
        raw = D.gaussian_sample(key, mean, log_std) if explore else mean
        extras = {"log_prob": D.gaussian_log_prob(mean, log_std, raw), "value": value}
        return jnp.clip(raw, low, high), carry, {**extras, "raw_action": raw}

    def loss_fn(params, hparams: PPOHparams, mb: RolloutBatch):
        dist, value = network.apply(params, mb.obs)
        log_prob, entropy = log_prob_entropy(dist, mb.action)
        advantage = normalize_advantages(mb.advantage) if cfg.normalize_advantage else mb.advantage
        if a2c:
            policy_loss = policy_gradient_loss(log_prob, advantage)
            approx_kl = clip_fraction = jnp.zeros((), jnp.float32)
            v_loss = value_loss(value, mb.target)
        else:
            clip = hparams.surrogate_loss_clip
            policy_loss, approx_kl, clip_fraction = ppo_clip_loss(
                log_prob, mb.log_prob, advantage, clip
            )
            v_clip = None if cfg.value_loss_clip is None else hparams.value_loss_clip
            v_loss = value_loss(value, mb.target, mb.value, v_clip)
        entropy = entropy.mean()
        loss = policy_loss + hparams.value_weight * v_loss - hparams.entropy_weight * entropy
        return loss, (policy_loss, v_loss, entropy, approx_kl, clip_fraction)

    def gradient_step(carry, mb: RolloutBatch, hparams: PPOHparams, lr: jax.Array):
        params, opt_state = carry
        grads, aux = jax.grad(loss_fn, has_aux=True)(params, hparams, mb)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        scale = jnp.minimum(1.0, hparams.max_grad_norm / (norm + 1e-6))
        grads = jax.tree.map(lambda g: g * scale, grads)  # optax.clip_by_global_norm
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
        return (params, opt_state), aux

    def update(state: PPOState, rollout: Transition, key: jax.Array):
        h = state.hparams
        env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
        if env_steps % num_minibatches:
            raise ConfigError(
                f"agent '{name}': rollout_len x num_envs = {env_steps} is not divisible by "
                f"num_minibatches = {num_minibatches}"
            )
        obs, next_obs = norm_obs(state, rollout.obs), norm_obs(state, rollout.next_obs)
        reward, return_stats, discounted_return = rollout.reward, state.return_stats, None
        if cfg.reward_clip is not None:
            reward = jnp.clip(reward, -cfg.reward_clip, cfg.reward_clip)
        if cfg.normalize_reward:
            done = rollout.terminated | rollout.truncated
            return_stats, discounted_return, reward = scale_rewards(
                return_stats,
                state.discounted_return,
                reward,
                done,
                h.gamma,
                cfg.scaled_reward_clip,
            )
        next_value = network.apply(state.params, next_obs, method=ActorCritic.critic)
        value = rollout.extras["value"]
        advantage, target = gae(
            reward, value, next_value, rollout.terminated, rollout.truncated, h.gamma, h.gae_lambda
        )
        action = rollout.action if discrete else rollout.extras["raw_action"]
        batch = flatten(
            RolloutBatch(obs, action, rollout.extras["log_prob"], value, advantage, target)
        )
        lr = h.lr
        if cfg.anneal_lr and cfg.total_steps is not None:
            lr = lr * jnp.maximum(0.0, 1.0 - state.step.astype(jnp.float32) / cfg.total_steps)
        step = lambda carry, mb: gradient_step(carry, mb, h, lr)

        def epoch(carry, key):
            if num_minibatches == 1:
                minibatches = jax.tree.map(lambda x: x[None], batch)
            else:
                minibatches = shuffled_minibatches(key, batch, num_minibatches)
            return jax.lax.scan(step, carry, minibatches)

        keys = jax.random.split(key, update_epochs)
        (params, opt_state), aux = jax.lax.scan(epoch, (state.params, state.opt_state), keys)
        obs_stats = state.obs_stats
        if cfg.normalize_obs:
            obs_stats = update_running_stats(obs_stats, rollout.obs)
        state = state.replace(
            params=params,
            opt_state=opt_state,
            obs_stats=obs_stats,
            return_stats=return_stats,
            discounted_return=(
                state.discounted_return if discounted_return is None else discounted_return
            ),
            step=state.step + env_steps,
            updates=state.updates + update_epochs * num_minibatches,
        )
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        metrics = {k: v.mean() for k, v in zip(names, aux, strict=True)}
        metrics["lr"] = lr
        return state, metrics

    return Agent(init=init, act=act, update=update)


def make_ppo(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a PPO agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(PPOConfig, overrides, "agent 'ppo'"))


def make_a2c(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an A2C agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(A2CConfig, overrides, "agent 'a2c'")
    return make_agent(spec, cfg, a2c=True, name="a2c")


make_ppo.Config = PPOConfig
make_a2c.Config = A2CConfig
