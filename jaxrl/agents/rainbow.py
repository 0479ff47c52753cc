"""Rainbow (Hessel et al. 2018): DQN with each of its six improvements switchable on its own.

The components and their flags (RLHive's names): ``double`` (van Hasselt et al. 2016),
``prioritized`` replay (Schaul et al. 2016), ``dueling`` (Wang et al. 2016), ``n_step``
returns (Sutton 1988), ``distributional`` C51 (Bellemare et al. 2017) on ``num_atoms``
atoms over [``v_min``, ``v_max``], and ``noisy`` nets (Fortunato et al. 2018) with
``sigma0``; ``use_eps_greedy`` keeps epsilon-greedy exploration on top of noisy nets.
With every flag off this is DQN: ``agents/dqn.py`` is this agent with the flags fixed off.

Read top to bottom: ``RainbowConfig``, ``RainbowState``, then ``make_agent`` building
``init``, ``act`` and ``update``. ``update`` inserts the rollout ``[T, num_envs]`` into the
replay buffer held in the state and, once ``learning_starts`` env steps have been seen,
takes ``updates_per_rollout`` gradient steps. The learning branch is a ``lax.cond`` on the
env-step counter, which only grows by constants, so it stays unbatched (a real branch)
under ``vmap`` over seeds or hyperparameters.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.buffers.compact import make_compact_replay
from jaxrl.buffers.prioritized import make_prioritized_replay
from jaxrl.buffers.replay import make_uniform_replay
from jaxrl.networks import (
    CategoricalHead,
    DuelingCategoricalHead,
    DuelingHead,
    QHead,
    QNetwork,
    make_torso,
)
from jaxrl.ops import (
    categorical_double_q_target,
    categorical_q_values,
    categorical_support,
    categorical_td_loss,
    epsilon_greedy,
    huber_loss,
    importance_weights,
    l2_loss,
    linear_schedule,
    n_step_bootstrap,
    q_learning_td_error,
    soft_update,
)
from jaxrl.types import Agent, ConfigError, Discrete, EnvSpec, Transition
from jaxrl.validation import build_config


@dataclasses.dataclass(frozen=True)
class RainbowConfig:
    """Rainbow options; defaults are Hessel et al. 2018's Atari settings (Table 1) unless
    noted. Environment steps are agent steps (Atari frames / 4).

    Attributes:
      noisy: noisy linear layers in the head (exploration by parameter noise).
      sigma0: initial noise scale of noisy layers (RLHive's ``std_init``), 0.5.
      use_eps_greedy: also act epsilon-greedily when ``noisy`` (RLHive's flag); without
        ``noisy`` epsilon-greedy is always used.
      double: double-Q action selection by the online network.
      dueling: dueling head.
      distributional: C51 categorical value distribution and cross-entropy loss.
      v_min, v_max, num_atoms: the C51 support (-10, 10, 51).
      n_step: multi-step return length (3).
      prioritized: prioritized replay, with priority exponent ``alpha`` (0.5), importance
        exponent annealed linearly from ``beta_start`` (0.4) to 1 over
        ``beta_decay_steps`` env steps, and ``priority_eps`` added to |TD error|.
      storage: replay layout. ``"full"`` stores every transition with its next observation
        (``buffers/replay.py``, ``buffers/prioritized.py``); ``"compact"`` stores each frame
        once and rebuilds frame stacks and n-step windows at sample time
        (``buffers/compact.py``; windows that would need a truncated episode's final
        observation are never sampled); ``"auto"`` picks compact for stacked uint8 image
        observations ``[H, W, stack]`` and full otherwise.
      hidden_sizes: widths of the dense layers of the torso: the MLP's, or those after
        the convolutions of an image torso (512).
      torso: ``"auto"`` (an MLP for vector observations, the MinAtar CNN for images under
        32 pixels, the Nature DQN CNN for larger ones), ``"mlp"``, ``"nature"`` (Mnih et
        al. 2015), ``"impala"`` (Espeholt et al. 2018) or ``"minatar"`` (Young & Tian
        2019); see ``networks.make_torso``.
      loss: TD loss when not distributional: ``"huber"`` or ``"mse"``.
      lr, adam_eps: Adam (6.25e-5, 1.5e-4).
      gamma: discount (0.99).
      buffer_size, batch_size: replay capacity in transitions (1M) and minibatch (32).
      learning_starts: env steps before learning (20,000 = 80k frames).
      updates_per_rollout: gradient steps per ``update`` call.
      target_update_period: env steps between target updates (8,000 = 32k frames).
      tau: target update fraction (1.0: hard copy).
      epsilon_start, epsilon_end, epsilon_decay_steps, eval_epsilon: linear epsilon
        schedule over env steps, used when not noisy or with ``use_eps_greedy``
        (Dopamine: 1.0 -> 0.01 over 250,000; evaluation 0.001).
      max_grad_norm: global gradient-norm clip, or None (Rainbow: none).
      reward_clip: clip rewards to [-c, c] for learning, or None (Atari presets: 1).
    """

    noisy: bool = True
    sigma0: float = 0.5
    use_eps_greedy: bool = False
    double: bool = True
    dueling: bool = True
    distributional: bool = True
    v_min: float = -10.0
    v_max: float = 10.0
    num_atoms: int = 51
    n_step: int = 3
    prioritized: bool = True
    alpha: float = 0.5
    beta_start: float = 0.4
    beta_decay_steps: int = 12_500_000
    priority_eps: float = 1e-6
    storage: Literal["auto", "full", "compact"] = "auto"
    hidden_sizes: tuple[int, ...] = (512,)
    torso: Literal["auto", "mlp", "nature", "impala", "minatar"] = "auto"
    loss: Literal["huber", "mse"] = "huber"
    lr: float = 6.25e-5
    adam_eps: float = 1.5e-4
    gamma: float = 0.99
    buffer_size: int = 1_000_000
    batch_size: int = 32
    learning_starts: int = 20_000
    updates_per_rollout: int = 1
    target_update_period: int = 8_000
    tau: float = 1.0
    epsilon_start: float = 1.0
    epsilon_end: float = 0.01
    epsilon_decay_steps: int = 250_000
    eval_epsilon: float = 0.001
    max_grad_norm: float | None = None
    reward_clip: float | None = None

    def __post_init__(self):
        check_value_ranges(self)
        if self.distributional and (self.num_atoms < 2 or not self.v_min < self.v_max):
            raise ValueError("distributional needs num_atoms >= 2 and v_min < v_max")


def check_value_ranges(cfg: Any) -> None:
    """The range checks DQN's and Rainbow's configs share; ValueError names the field."""
    for name in ("n_step", "buffer_size", "batch_size", "updates_per_rollout"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.target_update_period < 1:
        raise ValueError(f"target_update_period must be >= 1, got {cfg.target_update_period}")
    if not 0.0 < cfg.tau <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {cfg.tau}")


@flax.struct.dataclass
class RainbowHparams:
    """Continuous hyperparameters, kept in the state so a sweep can vmap over them."""

    lr: jax.Array
    gamma: jax.Array
    tau: jax.Array
    epsilon_start: jax.Array
    epsilon_end: jax.Array
    eval_epsilon: jax.Array
    beta_start: jax.Array


@flax.struct.dataclass
class RainbowState:
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any
    step: jax.Array  # int32 env steps given to update
    updates: jax.Array  # int32 gradient steps taken
    hparams: RainbowHparams


def make_network(spec: EnvSpec, cfg: RainbowConfig) -> QNetwork:
    """Torso + the head the flags ask for; outputs ``[B, A]`` or ``[B, A, num_atoms]``."""
    n = spec.action_space.n
    noise = dict(noisy=cfg.noisy, sigma0=cfg.sigma0)
    if cfg.distributional:
        head_cls = DuelingCategoricalHead if cfg.dueling else CategoricalHead
        head = head_cls(n, cfg.num_atoms, **noise)
    else:
        head = (DuelingHead if cfg.dueling else QHead)(n, **noise)
    return QNetwork(torso=make_torso(cfg.torso, spec.obs_shape, cfg.hidden_sizes), head=head)


def make_buffer(spec: EnvSpec, cfg: RainbowConfig) -> Any:
    """The replay buffer the config asks for (see ``RainbowConfig.storage``)."""
    image_obs = len(spec.obs_shape) == 3 and spec.obs_dtype == "uint8"
    if cfg.storage == "compact" or (cfg.storage == "auto" and image_obs):
        return make_compact_replay(
            cfg.buffer_size,
            spec.num_envs,
            cfg.batch_size,
            spec.obs_shape,
            spec.obs_dtype,
            window=cfg.n_step,
            stack=spec.obs_shape[-1] if image_obs else 0,
            mode="prioritized" if cfg.prioritized else "uniform",
            alpha=cfg.alpha,
            eps=cfg.priority_eps,
        )
    elif cfg.prioritized:
        return make_prioritized_replay(
            cfg.buffer_size,
            spec.num_envs,
            cfg.batch_size,
            window=cfg.n_step,
            alpha=cfg.alpha,
            eps=cfg.priority_eps,
        )
    else:
        return make_uniform_replay(
            cfg.buffer_size, spec.num_envs, cfg.batch_size, window=cfg.n_step
        )


def make_agent(spec: EnvSpec, cfg: RainbowConfig, name: str = "rainbow") -> Agent:
    """Builds the agent for ``spec`` from a validated config."""
    if not isinstance(spec.action_space, Discrete):
        raise ConfigError(
            f"agent '{name}' needs a discrete action space, but {spec.name} has a continuous "
            f"one {spec.action_space}; use a discrete-action env such as CartPole-v1"
        )
    network = make_network(spec, cfg)
    clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm else []
    optimizer = optax.chain(*clip, optax.scale_by_adam(eps=cfg.adam_eps))
    try:
        buffer = make_buffer(spec, cfg)
    except ValueError as e:  # e.g. a capacity too small for num_envs * n_step
        raise ConfigError(f"agent '{name}': {e}") from None
    support = (
        categorical_support(cfg.v_min, cfg.v_max, cfg.num_atoms) if cfg.distributional else None
    )
    td_loss = huber_loss if cfg.loss == "huber" else l2_loss
    explores_by_epsilon = cfg.use_eps_greedy or not cfg.noisy

    def apply(params, obs, key, deterministic=False):
        if not cfg.noisy or deterministic:
            return network.apply(params, obs, deterministic=True)
        return network.apply(params, obs, rngs={"noise": key})

    def q_values(out):
        return categorical_q_values(out, support) if cfg.distributional else out

    def epsilon(state: RainbowState, explore: bool) -> jax.Array:
        h = state.hparams
        if not explore:
            return h.eval_epsilon
        if not explores_by_epsilon:
            return jnp.zeros((), jnp.float32)
        return linear_schedule(h.epsilon_start, h.epsilon_end, cfg.epsilon_decay_steps)(state.step)

    def init(key: jax.Array) -> RainbowState:
        params_key, noise_key = jax.random.split(key)
        obs = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
        params = network.init({"params": params_key, "noise": noise_key}, obs)
        n = spec.num_envs
        example = Transition(
            obs=jnp.zeros((n, *spec.obs_shape), spec.obs_dtype),
            action=jnp.zeros((n,), jnp.int32),
            reward=jnp.zeros((n,), jnp.float32),
            next_obs=jnp.zeros((n, *spec.obs_shape), spec.obs_dtype),
            terminated=jnp.zeros((n,), bool),
            truncated=jnp.zeros((n,), bool),
            extras={},
        )
        f32 = lambda x: jnp.asarray(x, jnp.float32)
        return RainbowState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            buffer=buffer.init(example),
            step=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            hparams=RainbowHparams(
                lr=f32(cfg.lr),
                gamma=f32(cfg.gamma),
                tau=f32(cfg.tau),
                epsilon_start=f32(cfg.epsilon_start),
                epsilon_end=f32(cfg.epsilon_end),
                eval_epsilon=f32(cfg.eval_epsilon),
                beta_start=f32(cfg.beta_start),
            ),
        )

    def split(key: jax.Array, n: int) -> list:
        """``n`` keys for noisy forward passes; no PRNG work when the nets are not noisy."""
        return list(jax.random.split(key, n)) if cfg.noisy else [None] * n

    def act(state: RainbowState, obs: jax.Array, carry, key: jax.Array, explore: bool = True):
        noise_key, key = jax.random.split(key) if cfg.noisy else (None, key)
        q = q_values(apply(state.params, obs, noise_key, deterministic=not explore))
        return epsilon_greedy(key, q, epsilon(state, explore)), carry, {}

    def targets(state: RainbowState, params, batch: Transition, keys):
        """The target side of the loss: ``[B, K]`` projected target probabilities
        (distributional), else what ``q_learning_td_error`` needs besides ``q_taken``."""
        reward = batch.reward
        if cfg.reward_clip is not None:
            reward = jnp.clip(reward, -cfg.reward_clip, cfg.reward_clip)
        nstep = n_step_bootstrap(reward, batch.terminated, batch.truncated, state.hparams.gamma)
        rows = jnp.arange(reward.shape[0])
        bootstrap_obs = batch.next_obs[rows, nstep.bootstrap_index]
        next_target = apply(state.target_params, bootstrap_obs, keys[0])
        next_select = q_values(apply(params, bootstrap_obs, keys[1])) if cfg.double else None
        if cfg.distributional:
            return categorical_double_q_target(
                next_target, next_select, nstep.reward_sum, nstep.bootstrap_discount, support
            )
        return next_target, next_select, nstep.reward_sum, nstep.bootstrap_discount

    def loss_fn(params, batch: Transition, target, weights, key):
        rows = jnp.arange(batch.action.shape[0])
        online = apply(params, batch.obs[:, 0], key)[rows, batch.action[:, 0]]
        if cfg.distributional:
            losses = categorical_td_loss(online, target)
            priorities = losses
        else:
            next_target, next_select, reward_sum, discount = target
            td_error = q_learning_td_error(online, next_target, reward_sum, discount, next_select)
            losses, priorities = td_loss(td_error), jnp.abs(td_error)
        q_taken = categorical_q_values(online, support) if cfg.distributional else online
        return (weights * losses).mean(), (jax.lax.stop_gradient(priorities), q_taken.mean())

    def gradient_step(state: RainbowState, carry, key):
        """One minibatch step. ``carry`` holds what changes: params, optimizer state and,
        with prioritized replay only, the buffer (its priorities); a uniform buffer stays
        in ``state`` so that it is not threaded (and copied) through the loop."""
        params, opt_state, buffer_state = carry
        sample_key, *noise_keys = [key, *split(key, 3)] if cfg.noisy else [key, None, None, None]
        sample = buffer.sample(buffer_state if cfg.prioritized else state.buffer, sample_key)
        batch = sample.experience
        target = targets(state, params, batch, noise_keys[:2])
        if cfg.prioritized:
            beta = linear_schedule(state.hparams.beta_start, 1.0, cfg.beta_decay_steps)(state.step)
            weights = importance_weights(sample.probabilities, buffer.num_items(buffer_state), beta)
        else:
            weights = jnp.ones(batch.action.shape[:1], jnp.float32)
        (loss, (priorities, q_mean)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, batch, target, weights, noise_keys[2]
        )
        if cfg.prioritized:
            buffer_state = buffer.update_priorities(buffer_state, sample.indices, priorities)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        updates = jax.tree.map(lambda u: -state.hparams.lr * u, updates)
        params = optax.apply_updates(params, updates)
        return (params, opt_state, buffer_state), (loss, q_mean)

    def learn(state: RainbowState, key: jax.Array):
        keys = jax.random.split(key, cfg.updates_per_rollout)
        carry = (state.params, state.opt_state, state.buffer if cfg.prioritized else None)
        step = lambda carry, key: gradient_step(state, carry, key)
        carry, (loss, q_mean) = jax.lax.scan(step, carry, keys)
        return (*carry, loss.mean(), q_mean.mean())

    def skip(state: RainbowState, key: jax.Array):
        nan = jnp.full((), jnp.nan, jnp.float32)
        return state.params, state.opt_state, state.buffer if cfg.prioritized else None, nan, nan

    def update(state: RainbowState, rollout: Transition, key: jax.Array):
        rollout = rollout._replace(extras={})
        env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
        state = state.replace(buffer=buffer.add(state.buffer, rollout), step=state.step + env_steps)
        learning = (state.step >= cfg.learning_starts) & buffer.can_sample(state.buffer)
        params, opt_state, buffer_state, loss, q_mean = jax.lax.cond(
            learning, learn, skip, state, key
        )
        # Target update whenever the env-step counter crossed a multiple of the period.
        period = cfg.target_update_period
        crossed = (state.step // period) > ((state.step - env_steps) // period)
        tau = jnp.where(crossed & learning, state.hparams.tau, 0.0)
        state = state.replace(
            params=params,
            opt_state=opt_state,
            buffer=buffer_state if cfg.prioritized else state.buffer,
            target_params=soft_update(state.target_params, params, tau),
            updates=state.updates + jnp.where(learning, cfg.updates_per_rollout, 0),
        )
        metrics = {"loss": loss, "q_mean": q_mean, "epsilon": epsilon(state, True)}
        return state, metrics

    return Agent(init=init, act=act, update=update)


def make_rainbow(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a Rainbow agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(RainbowConfig, overrides, "agent 'rainbow'"))


make_rainbow.Config = RainbowConfig
