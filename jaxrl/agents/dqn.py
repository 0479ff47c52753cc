"""DQN (Mnih et al. 2015) with double (van Hasselt et al. 2016), dueling (Wang et al. 2016)
and n-step (Sutton 1988; Hessel et al. 2018) options.

Read top to bottom: ``DQNConfig`` (static options and their defaults), ``DQNState`` (the
state pytree), then ``make_dqn`` building the pure ``init``, ``act`` and ``update``.

``update`` inserts the rollout ``[T, num_envs]`` into the uniform replay buffer held in the
state, then, once ``learning_starts`` env steps have been seen, takes ``updates_per_rollout``
gradient steps on minibatches of n-step windows. The learning branch is a ``lax.cond`` on
the env-step counter ``state.step``, which only ever grows by constants: under
``vmap`` over seeds or hyperparameters it stays unbatched, so the cond stays a real branch
and is never turned into "compute both and select".
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.buffers.replay import make_uniform_replay
from jaxrl.networks import MLP, DuelingHead, QHead, QNetwork
from jaxrl.ops import (
    epsilon_greedy,
    huber_loss,
    l2_loss,
    linear_schedule,
    n_step_bootstrap,
    q_learning_td_error,
    soft_update,
)
from jaxrl.types import Agent, ConfigError, Discrete, EnvSpec, Transition
from jaxrl.validation import build_config


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    """DQN options. Defaults follow CleanRL's ``dqn.py`` (classic control), itself after
    Mnih et al. 2015, except where noted; names follow RLHive where it has one.

    Attributes:
      hidden_sizes: MLP torso widths (CleanRL: 120, 84).
      dueling: dueling head (Wang et al. 2016).
      double: double-Q target, action chosen by the online net (van Hasselt et al. 2016).
      n_step: length of the multi-step return (1 = one-step TD).
      loss: ``"huber"`` (Mnih et al. 2015) or ``"mse"`` (0.5 * squared TD error).
      lr: Adam learning rate (CleanRL: 2.5e-4).
      adam_eps: Adam epsilon (optax default 1e-8; Dopamine uses 1.5e-4 for Atari).
      gamma: discount.
      buffer_size: replay capacity in transitions (CleanRL: 10,000).
      batch_size: minibatch size (CleanRL: 128).
      learning_starts: env steps collected before the first gradient step (RLHive's
        ``min_replay_history``; CleanRL: 10,000).
      updates_per_rollout: gradient steps per ``update`` call (one call per rollout of
        ``rollout_len * num_envs`` env steps).
      target_update_period: env steps between target updates (CleanRL: 500).
      tau: target update fraction; 1.0 is a hard copy (CleanRL: 1.0), < 1 a soft update.
      epsilon_start, epsilon_end, epsilon_decay_steps: linear exploration schedule over env
        steps, starting at 0 (RLHive's LinearSchedule; CleanRL: 1.0 -> 0.05 over 250,000).
      eval_epsilon: epsilon of greedy evaluation (``explore=False``).
      max_grad_norm: global gradient-norm clip, or None (SB3's default 10).
      reward_clip: rewards are clipped to [-c, c] for learning, or None (Atari: 1.0).
    """

    hidden_sizes: tuple[int, ...] = (120, 84)
    dueling: bool = False
    double: bool = False
    n_step: int = 1
    loss: Literal["huber", "mse"] = "huber"
    lr: float = 2.5e-4
    adam_eps: float = 1e-8
    gamma: float = 0.99
    buffer_size: int = 10_000
    batch_size: int = 128
    learning_starts: int = 10_000
    updates_per_rollout: int = 1
    target_update_period: int = 500
    tau: float = 1.0
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_decay_steps: int = 250_000
    eval_epsilon: float = 0.0
    max_grad_norm: float | None = 10.0
    reward_clip: float | None = None

    def __post_init__(self):
        for name in ("n_step", "buffer_size", "batch_size", "updates_per_rollout"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.target_update_period < 1:
            raise ValueError(f"target_update_period must be >= 1, got {self.target_update_period}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")


@flax.struct.dataclass
class DQNHparams:
    """Continuous hyperparameters, kept in the state so a sweep can vmap over them."""

    lr: jax.Array
    gamma: jax.Array
    tau: jax.Array
    epsilon_start: jax.Array
    epsilon_end: jax.Array
    eval_epsilon: jax.Array


@flax.struct.dataclass
class DQNState:
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any
    step: jax.Array  # int32 env steps given to update
    updates: jax.Array  # int32 gradient steps taken
    hparams: DQNHparams


def make_q_network(spec: EnvSpec, hidden_sizes: tuple[int, ...], dueling: bool) -> QNetwork:
    n = spec.action_space.n
    head = DuelingHead(n) if dueling else QHead(n)
    return QNetwork(torso=MLP(hidden_sizes, obs_ndim=len(spec.obs_shape)), head=head)


def make_dqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a DQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(DQNConfig, overrides, "agent 'dqn'")
    if not isinstance(spec.action_space, Discrete):
        raise ConfigError(
            f"agent 'dqn' needs a discrete action space, but {spec.name} has a continuous "
            f"one {spec.action_space}; use a discrete-action env such as CartPole-v1"
        )
    network = make_q_network(spec, cfg.hidden_sizes, cfg.dueling)
    clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm else []
    optimizer = optax.chain(*clip, optax.scale_by_adam(eps=cfg.adam_eps))
    buffer = make_uniform_replay(cfg.buffer_size, spec.num_envs, cfg.batch_size, window=cfg.n_step)
    td_loss = huber_loss if cfg.loss == "huber" else l2_loss

    def epsilon(state: DQNState, explore: bool) -> jax.Array:
        if not explore:
            return state.hparams.eval_epsilon
        h = state.hparams
        schedule = linear_schedule(h.epsilon_start, h.epsilon_end, cfg.epsilon_decay_steps)
        return schedule(state.step)

    def init(key: jax.Array) -> DQNState:
        obs = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
        params = network.init(key, obs)
        example = Transition(
            obs=jnp.zeros((spec.num_envs, *spec.obs_shape), spec.obs_dtype),
            action=jnp.zeros((spec.num_envs,), jnp.int32),
            reward=jnp.zeros((spec.num_envs,), jnp.float32),
            next_obs=jnp.zeros((spec.num_envs, *spec.obs_shape), spec.obs_dtype),
            terminated=jnp.zeros((spec.num_envs,), bool),
            truncated=jnp.zeros((spec.num_envs,), bool),
            extras={},
        )
        f32 = lambda x: jnp.asarray(x, jnp.float32)
        return DQNState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            buffer=buffer.init(example),
            step=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            hparams=DQNHparams(
                lr=f32(cfg.lr),
                gamma=f32(cfg.gamma),
                tau=f32(cfg.tau),
                epsilon_start=f32(cfg.epsilon_start),
                epsilon_end=f32(cfg.epsilon_end),
                eval_epsilon=f32(cfg.eval_epsilon),
            ),
        )

    def act(state: DQNState, obs: jax.Array, key: jax.Array, explore: bool = True):
        q_values = network.apply(state.params, obs)
        return epsilon_greedy(key, q_values, epsilon(state, explore)), {}

    def loss_fn(params, target_params, batch: Transition, gamma: jax.Array):
        """Mean TD loss of a batch of n-step windows, leaves ``[B, n_step, ...]``."""
        reward = batch.reward
        if cfg.reward_clip is not None:
            reward = jnp.clip(reward, -cfg.reward_clip, cfg.reward_clip)
        target = n_step_bootstrap(reward, batch.terminated, batch.truncated, gamma)
        rows = jnp.arange(reward.shape[0])
        bootstrap_obs = batch.next_obs[rows, target.bootstrap_index]
        next_q_online = network.apply(params, bootstrap_obs) if cfg.double else None
        q_taken = network.apply(params, batch.obs[:, 0])[rows, batch.action[:, 0]]
        td_error = q_learning_td_error(
            q_taken,
            network.apply(target_params, bootstrap_obs),
            target.reward_sum,
            target.bootstrap_discount,
            next_q_online,
        )
        return td_loss(td_error).mean(), q_taken.mean()

    def gradient_step(carry, key):
        params, opt_state, state = carry
        batch = buffer.sample(state.buffer, key).experience
        (loss, q_mean), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, state.target_params, batch, state.hparams.gamma
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        updates = jax.tree.map(lambda u: -state.hparams.lr * u, updates)
        params = optax.apply_updates(params, updates)
        return (params, opt_state, state), (loss, q_mean)

    def learn(state: DQNState, key: jax.Array):
        keys = jax.random.split(key, cfg.updates_per_rollout)
        (params, opt_state, _), (loss, q_mean) = jax.lax.scan(
            gradient_step, (state.params, state.opt_state, state), keys
        )
        return params, opt_state, loss.mean(), q_mean.mean()

    def skip(state: DQNState, key: jax.Array):
        nan = jnp.full((), jnp.nan, jnp.float32)
        return state.params, state.opt_state, nan, nan

    def update(state: DQNState, rollout: Transition, key: jax.Array):
        rollout = rollout._replace(extras={})
        env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
        state = state.replace(buffer=buffer.add(state.buffer, rollout), step=state.step + env_steps)
        learning = (state.step >= cfg.learning_starts) & buffer.can_sample(state.buffer)
        params, opt_state, loss, q_mean = jax.lax.cond(learning, learn, skip, state, key)
        # Target update whenever the env-step counter crossed a multiple of the period.
        crossed = (state.step // cfg.target_update_period) > (
            (state.step - env_steps) // cfg.target_update_period
        )
        tau = jnp.where(crossed & learning, state.hparams.tau, 0.0)
        state = state.replace(
            params=params,
            opt_state=opt_state,
            target_params=soft_update(state.target_params, params, tau),
            updates=state.updates + jnp.where(learning, cfg.updates_per_rollout, 0),
        )
        metrics = {"loss": loss, "q_mean": q_mean, "epsilon": epsilon(state, True)}
        return state, metrics

    return Agent(init=init, act=act, update=update)


make_dqn.Config = DQNConfig
