"""PQN (Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning", ICLR 2025):
Q-learning with no replay buffer and no target network, kept stable by LayerNorm in the
network and fed by many parallel envs.

Each ``update`` learns from the rollout ``[T, N]`` just collected by epsilon-greedy
acting: the Q(lambda) returns of the rollout (``ops.q_lambda_returns``; the bootstrap
``max_a Q(s'_t, a)`` over legal actions, from the current network before the update),
then ``update_epochs x num_minibatches`` gradient steps of ``0.5 (Q(s, a) - G)^2`` on
shuffled minibatches, through the on-policy skeleton's generic parts
(``agents/on_policy/core.py``: ``make_optimizer``, ``gradient_step``, ``run_epochs``). The
rollout length is the runner's ``rollout_len`` (purejaxql's ``NUM_STEPS``).

Defaults are purejaxql's MinAtar settings (``purejaxql/config/alg/pqn_minatar.yaml``: 128
envs x 32 steps, 2 epochs of 32 minibatches, RAdam 5e-4 decayed linearly, lambda 0.65,
epsilon 1 -> 0.05 over the first tenth of 10M steps); ``jaxrl/presets/cartpole-pqn.yaml``
has its CartPole ones, and ``minatar-pqn.yaml`` decays epsilon over the first tenth of its
1M-step budget instead. Legal actions (``obs["action_mask"]``) are honoured in acting and
in the bootstrap. LayerNorm (``layer_norm``) follows every layer of the MLP torso and of
the MinAtar and Nature CNNs, as in purejaxql's ``pqn_gymnax.py``, ``pqn_minatar.py`` and
``pqn_atari.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, cast

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.agents.common.action_box import require_discrete
from jaxrl.agents.common.optim import OptimizerOptions, scheduled_lr
from jaxrl.agents.on_policy.config import f32
from jaxrl.agents.on_policy.core import gradient_step, make_optimizer, run_epochs
from jaxrl.buffers.rollout import flatten
from jaxrl.networks import MLP, QHead, QNetwork, TorsoSpec, make_torso
from jaxrl.networks.multi_input import is_multi
from jaxrl.networks.torsos import CNN_TORSOS, cnn_torso, refuse, torso_name
from jaxrl.ops import linear_schedule, masked_epsilon_greedy, q_lambda_returns
from jaxrl.types import (
    Agent,
    EnvSpec,
    Transition,
    action_mask,
    main_obs,
    num_actions,
)
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class PQNConfig(OptimizerOptions):
    """PQN options (purejaxql's MinAtar defaults, see the module docstring).

    Attributes:
      hidden_sizes: MLP widths (purejaxql: 2 layers of 128), or the dense widths after a
        CNN torso.
      torso: ``"auto"``, ``"mlp"``, ``"nature"``, ``"impala"`` or ``"minatar"``.
      layer_norm: LayerNorm before every ReLU of the torso (the paper's stabilizer). The
        MLP's, and the MinAtar and Nature CNNs' after each convolution (over its
        channels) and dense layer, as purejaxql's networks; the IMPALA CNN has none
        (``ConfigError`` unless false). A torso spec carries its own ``layer_norm``.
      optimizer, lr, adam_eps: RAdam 5e-4 (``agents/common/optim.py``; the learning-rate
        schedule, linear to 0 in purejaxql, is ``lr_schedule``).
      max_grad_norm: global gradient-norm clip (10).
      gamma: discount (0.99).
      q_lambda: lambda of the Q(lambda) returns (0.65).
      reward_scale: rewards are multiplied by this for learning (1; purejaxql's
        ``REW_SCALE``, 0.1 on CartPole).
      update_epochs, num_minibatches: passes over each rollout (2) and minibatches per
        pass (32).
      epsilon_start, epsilon_end, epsilon_decay_steps: linear epsilon over env steps
        (1 -> 0.05 over 1M).
      eval_epsilon: epsilon of greedy evaluation (0).
    """

    hidden_sizes: tuple[int, ...] = option((128, 128), ge=1)
    torso: str | TorsoSpec = "auto"
    layer_norm: bool = True
    optimizer: Literal["adam", "adamw", "radam", "rmsprop", "sgd"] = "radam"
    lr: float = option(5e-4, gt=0)
    max_grad_norm: float | None = option(10.0, gt=0)
    gamma: float = option(0.99, ge=0, le=1)
    q_lambda: float = option(0.65, ge=0, le=1)
    reward_scale: float = option(1.0, gt=0)
    update_epochs: int = option(2, ge=1)
    num_minibatches: int = option(32, ge=1)
    epsilon_start: float = option(1.0, ge=0, le=1)
    epsilon_end: float = option(0.05, ge=0, le=1)
    epsilon_decay_steps: int = option(1_000_000, ge=0)
    eval_epsilon: float = option(0.0, ge=0, le=1)


@flax.struct.dataclass
class PQNHparams:
    """Continuous hyperparameters, in the state so a sweep can vmap over them."""

    lr: jax.Array
    gamma: jax.Array
    q_lambda: jax.Array
    reward_scale: jax.Array
    epsilon_start: jax.Array
    epsilon_end: jax.Array
    eval_epsilon: jax.Array
    max_grad_norm: jax.Array  # inf: no clipping


@flax.struct.dataclass
class PQNState:
    params: Any
    opt_state: Any
    step: jax.Array  # int32 env steps given to update
    updates: jax.Array  # int32 gradient steps taken
    hparams: PQNHparams


def make_network(spec: EnvSpec, cfg: PQNConfig) -> QNetwork:
    """The torso, with a LayerNorm before every ReLU where ``layer_norm`` (the MLP, the
    MinAtar and Nature CNNs), and a linear Q head, ``[B, A]``."""
    if is_multi(cfg.torso):
        raise refuse("agent 'pqn'")
    name = torso_name(cfg.torso, spec.obs_shape)
    torso: nn.Module
    if name == "mlp":
        torso = MLP(cfg.hidden_sizes, obs_ndim=len(spec.obs_shape), layer_norm=cfg.layer_norm)
    elif name in CNN_TORSOS:
        torso = cnn_torso(name, cfg.hidden_sizes, layer_norm=cfg.layer_norm)
    else:
        torso = make_torso(name, spec.obs_shape, cfg.hidden_sizes)
    return QNetwork(torso=torso, head=QHead(num_actions(spec)))


def make_pqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a PQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(PQNConfig, overrides, "agent 'pqn'")
    require_discrete(spec, "pqn")
    network = make_network(spec, cfg)
    optimizer = make_optimizer(cfg.adam_eps, cfg)

    def q_values(params, obs) -> jax.Array:
        return cast(jax.Array, network.apply(params, main_obs(obs)))

    def init(key: jax.Array) -> PQNState:
        params = network.init(key, jnp.zeros((1, *spec.obs_shape), spec.obs_dtype))
        fields = [f.name for f in dataclasses.fields(PQNHparams) if f.name != "max_grad_norm"]
        clip = jnp.inf if cfg.max_grad_norm is None else cfg.max_grad_norm
        hparams = PQNHparams(**{k: f32(getattr(cfg, k)) for k in fields}, max_grad_norm=f32(clip))
        zero = jnp.zeros((), jnp.int32)
        return PQNState(params, optimizer.init(params), zero, zero, hparams)

    def epsilon(state: PQNState, explore: bool) -> jax.Array:
        h = state.hparams
        if not explore:
            return h.eval_epsilon
        return linear_schedule(h.epsilon_start, h.epsilon_end, cfg.epsilon_decay_steps)(state.step)

    def act(state: PQNState, obs, carry, key: jax.Array, explore: bool = True):
        q = q_values(state.params, obs)
        action = masked_epsilon_greedy(key, q, epsilon(state, explore), action_mask(obs))
        return action, carry, {}

    def loss_fn(params, hparams, minibatch):
        obs, action, target = minibatch
        q = q_values(params, obs)
        q_taken = jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]
        loss = 0.5 * jnp.square(q_taken - target).mean()
        return loss, (loss, q_taken.mean())

    def update(state: PQNState, rollout: Transition, key: jax.Array):
        h = state.hparams
        T, N = rollout.reward.shape
        next_obs = flatten(rollout.next_obs)
        next_q = q_values(state.params, next_obs)
        mask = action_mask(next_obs)
        if mask is not None:
            next_q = jnp.where(mask, next_q, -jnp.inf)
        next_value = jax.lax.stop_gradient(next_q.max(-1).reshape(T, N))
        reward = rollout.reward * h.reward_scale
        target = q_lambda_returns(
            reward, next_value, rollout.terminated, rollout.truncated, h.gamma, h.q_lambda
        )
        batch = flatten((rollout.obs, rollout.action, target))
        step = gradient_step(loss_fn, optimizer, h, scheduled_lr(cfg, h.lr, state.step))
        carry = (state.params, state.opt_state)
        epochs, minibatches = cfg.update_epochs, cfg.num_minibatches
        (params, opt_state), (loss, q_mean) = run_epochs(
            key, carry, batch, step, epochs, minibatches
        )
        state = dataclasses.replace(
            state,
            params=params,
            opt_state=opt_state,
            step=state.step + T * N,
            updates=state.updates + epochs * minibatches,
        )
        metrics = {"loss": loss.mean(), "q_mean": q_mean.mean(), "target_mean": target.mean()}
        metrics["epsilon"] = epsilon(state, True)
        return state, metrics

    return Agent(init=init, act=act, update=update)
