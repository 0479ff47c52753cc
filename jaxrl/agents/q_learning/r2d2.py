"""R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed
Reinforcement Learning", ICLR): a recurrent Q-learner on prioritized sequence replay.

The network is ``networks.recurrent.MemoryQNetwork``: the torso, a memory cell of
``networks/memory.py`` (``cell``: LSTM as the paper's, GRU or minGRU) and a (dueling) Q
head. Its state lives in the per-env carry (``types.py``): ``init_carry(N)`` is the
cell's zeros, ``act`` advances it, acts epsilon-greedily on its values and records the
carry it was given in ``extras["carry"]``, and the runners reset it after an episode's
last step. ``update`` adds the rollout to the sequence replay (``buffers/sequence.py``:
each step's observation, action, reward, flags and carry stored once; sequences of
``sequence_length`` steps start every ``sequence_period``) and, once ``learning_starts``
env steps have been seen, takes ``updates_per_rollout`` gradient steps on batches of
sequences drawn by priority, each re-run from its stored carry with ``burn_in`` steps
without gradient, learning from n-step double-Q targets with the value rescaling
(``agents/q_learning/sequence_loss.py``) weighted by importance ``(n P(i))^-beta``, and
writing each sequence's priority mix back. The target network follows every
``target_update_period`` env steps. The paper's distributed actors, each with its own
epsilon, are one epsilon schedule over the runner's envs here.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Literal, cast

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.action_box import require_discrete
from jaxrl.agents.common.optim import (
    EpsilonOptions,
    OptimizerOptions,
    epsilon_schedule,
    optimizer_step,
    scale_transform,
    scheduled_lr,
)
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.agents.on_policy.sequence import episode_starts
from jaxrl.agents.q_learning.config import QHparams
from jaxrl.agents.q_learning.core import QLearningState, target_tau
from jaxrl.agents.q_learning.sequence_loss import burn_in_unroll, sequence_loss, sequence_targets
from jaxrl.agents.q_learning.value_heads import expected_value_head
from jaxrl.buffers import PriorityParams
from jaxrl.buffers.sequence import make_sequence_replay
from jaxrl.networks import TorsoSpec, make_torso
from jaxrl.networks.memory import make_cell
from jaxrl.networks.multi_input import is_multi
from jaxrl.networks.recurrent import MemoryQNetwork
from jaxrl.networks.torsos import refuse
from jaxrl.ops import importance_weights, masked_epsilon_greedy, soft_update
from jaxrl.types import Agent, ConfigError, EnvSpec, Transition, action_mask, main_obs, num_actions
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class R2D2Config(ReplayOptions, EpsilonOptions, OptimizerOptions):
    """R2D2 options: the paper's (Kapturowski et al. 2019, Table 2) where they fit one
    learner on a CPU, else as noted; the optimizer's and epsilon's are
    ``agents/common/optim.py``'s.

    Attributes:
      cell: the memory cell after the torso: ``"lstm"`` (the paper's), ``"gru"`` or ``"mingru"``.
      cell_size: the cell's units (the paper: 512; 64 here).
      hidden_sizes: dense widths of the torso.
      torso: the observation encoder (``networks.make_torso``); auto: MLP or CNN.
      sequence_length: steps per replayed sequence, burn-in included (the paper: 80 + 40).
      burn_in: steps at a sequence's start that only warm up the carry (40); less than
        ``sequence_length``.
      sequence_period: steps between sequence starts (40); sequences overlap by
        ``sequence_length - sequence_period``.
      n_step: steps of each target (5).
      dueling: dueling head (Wang et al. 2016), as the paper's.
      buffer_size: replay capacity in env steps.
      batch_size: sequences per gradient step (the paper: 64).
      learning_starts: env steps collected before the first gradient step.
      updates_per_rollout: gradient steps per ``update`` call.
      double: double-Q targets, the action chosen by the online network.
      priority_eta: the priority mix ``eta max|delta| + (1 - eta) mean|delta|`` (0.9).
      alpha: the priority exponent (0.9).
      beta: the importance-sampling exponent (0.6, fixed).
      priority_eps: added to each priority (1e-6).
      value_rescaling: learn in the rescaled space of ``h`` (Pohlen et al. 2018).
      rescaling_eps: ``h``'s epsilon (1e-3).
      gamma: discount (0.997).
      lr: Adam's learning rate (1e-4).
      adam_eps: Adam's epsilon (1e-3).
      loss: the TD loss, ``"mse"`` (0.5 delta^2, the paper's) or ``"huber"``.
      max_grad_norm: global gradient-norm clip, or None.
      target_update_period: env steps between target updates (the paper: 2,500 updates).
      tau: target update fraction; 1.0 is a hard copy.
    """

    cell: str = "lstm"
    cell_size: int = option(64, ge=1)
    hidden_sizes: tuple[int, ...] = option((64,), gt=0)
    torso: str | TorsoSpec = "auto"
    sequence_length: int = option(80, ge=1)
    burn_in: int = option(40, ge=0)
    sequence_period: int = option(40, ge=1)
    n_step: int = option(5, ge=1)
    dueling: bool = True
    buffer_size: int = 100_000
    batch_size: int = 32
    learning_starts: int = 5_000
    updates_per_rollout: int = option(1, ge=1)
    double: bool = True
    priority_eta: float = option(0.9, ge=0, le=1)
    alpha: float = option(0.9, ge=0)
    beta: float = option(0.6, ge=0, le=1)
    priority_eps: float = option(1e-6, ge=0)
    value_rescaling: bool = True
    rescaling_eps: float = option(1e-3, gt=0)
    gamma: float = option(0.997, ge=0, le=1)
    lr: float = option(1e-4, gt=0)
    adam_eps: float = option(1e-3, ge=0)
    loss: Literal["mse", "huber"] = "mse"
    max_grad_norm: float | None = option(40.0, gt=0)
    target_update_period: int = option(2_500, ge=1)
    tau: float = option(1.0, gt=0, le=1)

    def __post_init__(self):
        super().__post_init__()
        rules = (
            (
                self.burn_in < self.sequence_length,
                f"burn_in = {self.burn_in} must be less than sequence_length = "
                f"{self.sequence_length} (the steps after the burn-in are the ones that learn)",
            ),
            (
                self.sequence_period <= self.sequence_length,
                f"sequence_period = {self.sequence_period} must be at most sequence_length = "
                f"{self.sequence_length} (longer leaves steps in no sequence)",
            ),
        )
        for holds, message in rules:
            if not holds:
                raise ValueError(message)


@flax.struct.dataclass
class R2D2Hparams(QHparams):
    """``QHparams`` and the priority knobs, in the state so a sweep can vmap over them."""

    alpha: jax.Array
    priority_eps: jax.Array
    beta: jax.Array
    priority_eta: jax.Array


@dataclasses.dataclass(frozen=True)
class _Parts:
    """What ``make_r2d2`` built: the network, the sequence replay, the optimizer and
    ``init_carry(num_envs)``."""

    spec: EnvSpec
    cfg: R2D2Config
    network: MemoryQNetwork
    buffer: Any
    optimizer: optax.GradientTransformation
    init_carry: Any


def make_r2d2(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an R2D2 agent for ``spec``; ``ConfigError`` on a bad option, cell or env."""
    cfg = build_config(R2D2Config, overrides, "agent 'r2d2'")
    require_discrete(spec, "r2d2")
    cell = make_cell(cfg.cell, cfg.cell_size)
    head = expected_value_head().network(num_actions(spec), cfg.dueling, False, 0.5)
    if is_multi(cfg.torso):
        raise refuse("agent 'r2d2'")
    torso = make_torso(cfg.torso, spec.obs_shape, cfg.hidden_sizes)
    network = MemoryQNetwork(torso=torso, cell=cell, head=head)
    n, period = spec.num_envs, cfg.sequence_period
    rows = cfg.buffer_size // n // period * period  # a whole number of periods
    if rows < cfg.sequence_length + 1:
        raise ConfigError(
            f"agent 'r2d2': buffer_size = {cfg.buffer_size} holds {cfg.buffer_size // n} steps "
            f"per env, fewer than a sequence (sequence_length + 1 = {cfg.sequence_length + 1})"
        )
    buffer = make_sequence_replay(rows * n, n, cfg.batch_size, cfg.sequence_length, period)
    clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm else []
    optimizer = optax.chain(*clip, scale_transform(cfg, cfg.adam_eps))
    p = _Parts(spec, cfg, network, buffer, optimizer, lambda num: cell.init_carry((num,)))
    return Agent(
        init=functools.partial(_init, p),
        act=functools.partial(_act, p),
        update=functools.partial(_update, p),
        init_carry=p.init_carry,
    )


def _stored(step: Transition) -> dict[str, Any]:
    """What the replay keeps of a step (``buffers/sequence.py``): no ``next_obs``."""
    return {
        "obs": step.obs,
        "action": step.action,
        "reward": step.reward,
        "terminated": step.terminated,
        "truncated": step.truncated,
        "carry": step.extras["carry"],
    }


def _init(p: _Parts, key: jax.Array) -> QLearningState:
    """The network's parameters (its target a copy), an empty sequence replay, the
    hyperparameters from the config."""
    n = p.spec.num_envs
    obs = jax.tree.map(lambda s: jnp.zeros((n, *s.shape), s.dtype), p.spec.obs_spec)
    params = p.network.init(key, p.init_carry(n), main_obs(obs))
    zeros = lambda dtype: jnp.zeros((n,), dtype)
    flags = {"terminated": zeros(bool), "truncated": zeros(bool)}
    example = {"obs": obs, "action": zeros(jnp.int32), "reward": zeros(jnp.float32), **flags}
    fields = [f.name for f in dataclasses.fields(R2D2Hparams)]
    hparams = R2D2Hparams(**{k: jnp.asarray(getattr(p.cfg, k), jnp.float32) for k in fields})
    return QLearningState(
        params=params,
        target_params=params,
        opt_state=p.optimizer.init(params),
        buffer=p.buffer.init({**example, "carry": p.init_carry(n)}),
        step=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
        hparams=hparams,
    )


def _act(
    p: _Parts, state: QLearningState, obs: Any, carry: Any, key: jax.Array, explore: bool = True
):
    new_carry, q = cast(tuple[Any, jax.Array], p.network.apply(state.params, carry, main_obs(obs)))
    epsilon = _epsilon(p, state) if explore else state.hparams.eval_epsilon
    action = masked_epsilon_greedy(key, q, epsilon, action_mask(obs))
    return action, new_carry, ({"carry": carry} if explore else {"q_values": q})


def _epsilon(p: _Parts, state: QLearningState) -> jax.Array:
    """The epsilon schedule's value at ``state.step`` (float32 scalar)."""
    h = state.hparams
    return epsilon_schedule(p.cfg, h.epsilon_start, h.epsilon_end, p.spec.num_envs)(state.step)


def _knobs(h: Any) -> PriorityParams:
    return PriorityParams(h.alpha, h.priority_eps)


def _unroll(p: _Parts, params: Any, carry: Any, obs: Any, starts: jax.Array):
    out = p.network.apply(params, carry, main_obs(obs), starts, method=MemoryQNetwork.unroll)
    return cast(tuple[Any, jax.Array], out)


def _loss(p: _Parts, params: Any, target_params: Any, seq: dict, weights: jax.Array, h: Any):
    """``(loss, (priorities [B], mean Q))`` of sequences ``seq`` (leaves ``[B, W, ...]``)."""
    cfg, burn_in = p.cfg, p.cfg.burn_in
    x = jax.tree.map(lambda v: jnp.swapaxes(v, 0, 1), seq)  # [W, B, ...]
    starts = episode_starts(x["terminated"] | x["truncated"])
    carry = jax.tree.map(lambda c: c[0], x["carry"])
    unroll = functools.partial(_unroll, p)
    q = burn_in_unroll(unroll, params, carry, x["obs"], starts, burn_in)  # [K + 1, B, A]
    q_target = burn_in_unroll(unroll, target_params, carry, x["obs"], starts, burn_in)
    learn = lambda v: v[burn_in:-1]  # the K learning steps
    mask = action_mask(jax.tree.map(lambda v: v[burn_in:], x["obs"]))
    target, learns = sequence_targets(
        q_target,
        jax.lax.stop_gradient(q) if cfg.double else None,
        mask,
        learn(x["reward"]),
        learn(x["terminated"]),
        learn(x["truncated"]),
        h.gamma,
        cfg.n_step,
        cfg.rescaling_eps if cfg.value_rescaling else None,
    )
    q_taken = jnp.take_along_axis(q[:-1], learn(x["action"])[..., None], axis=-1)[..., 0]
    loss, priorities = sequence_loss(q_taken, target, learns, weights, cfg.loss, h.priority_eta)
    return loss, (priorities, q_taken.mean())


def _gradient_step(p: _Parts, state: QLearningState, carry: tuple, key: jax.Array):
    params, opt_state, buffer = carry
    h = cast(R2D2Hparams, state.hparams)
    sample = p.buffer.sample(buffer, key)
    weights = importance_weights(sample.probabilities, p.buffer.num_items(buffer), h.beta)
    loss_fn = functools.partial(_loss, p)
    (loss, (priorities, q_mean)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        params, state.target_params, sample.experience, weights, h
    )
    buffer = p.buffer.update_priorities(buffer, sample.indices, priorities, _knobs(h))
    lr = scheduled_lr(p.cfg, h.lr, state.step)
    params, opt_state = optimizer_step(p.optimizer, params, grads, opt_state, lr)
    return (params, opt_state, buffer), (loss, q_mean)


def _learn(p: _Parts, state: QLearningState, key: jax.Array):
    keys = jax.random.split(key, p.cfg.updates_per_rollout)
    step = functools.partial(_gradient_step, p, state)
    carry, (loss, q_mean) = jax.lax.scan(step, (state.params, state.opt_state, state.buffer), keys)
    return (*carry, loss.mean(), q_mean.mean())


def _skip(p: _Parts, state: QLearningState, key: jax.Array):
    nan = jnp.full((), jnp.nan, jnp.float32)
    return state.params, state.opt_state, state.buffer, nan, nan


def _update(p: _Parts, state: QLearningState, rollout: Transition, key: jax.Array):
    cfg = p.cfg
    env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
    buffer = p.buffer.add(state.buffer, _stored(rollout), _knobs(state.hparams))
    state = dataclasses.replace(state, buffer=buffer, step=state.step + env_steps)
    learning = (state.step >= cfg.learning_starts) & p.buffer.can_sample(buffer)
    learn, skip = functools.partial(_learn, p), functools.partial(_skip, p)
    params, opt_state, buffer, loss, q_mean = jax.lax.cond(learning, learn, skip, state, key)
    tau = target_tau(state.step, env_steps, cfg.target_update_period, state.hparams.tau, learning)
    state = dataclasses.replace(
        state,
        params=params,
        opt_state=opt_state,
        buffer=buffer,
        target_params=soft_update(state.target_params, params, tau),
        updates=state.updates + jnp.where(learning, cfg.updates_per_rollout, 0),
    )
    return state, {"loss": loss, "q_mean": q_mean, "epsilon": _epsilon(p, state)}
