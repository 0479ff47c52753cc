"""The actor-critic learner with a memory cell (recurrent PPO, ``--agent.cell``).

The network is ``networks.recurrent.MemoryActorCritic``: the skeleton's torsos and heads
with a memory cell of ``networks/memory.py`` (LSTM, GRU, minGRU) between them. Its state
lives in the per-env carry (``types.py``): ``init_carry(N)`` is the cell's zeros, ``act``
advances it and records the carry it was given in ``extras["carry"]``, and the runners
reset it to zeros after an episode's last step. The update is the skeleton's
(``agents/on_policy/core.py``: GAE, epochs x minibatches, the objective's loss) with three
changes that make it a sequence learner, as in PureJaxRL's ``ppo_rnn.py``:

* the rollout keeps each env's carry at the rollout's start (``extras["carry"][0]``);
* a minibatch is ``N / num_minibatches`` whole env sequences ``[T, n]``, not ``[B]``
  samples drawn from all steps (``num_envs`` must divide by ``num_minibatches``);
* the loss re-runs the network over each sequence from its stored carry
  (``MemoryActorCritic.unroll``, the cell's own ``scan``), the carry reset to zeros where
  an episode started inside the rollout (the previous step's ``terminated | truncated``),
  and back-propagates through the whole unroll (truncated BPTT over ``T`` steps).

GAE's values are those acting recorded; ``V(x_{t+1})`` at a truncation is the critic run
from the carry after step ``t`` (an unroll with the acting parameters), so the bootstrap
sees the episode's own history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.on_policy.batches import after_update, learning_rewards
from jaxrl.agents.on_policy.config import ActorCriticConfig
from jaxrl.agents.on_policy.core import (
    ActorCriticParts,
    ActorCriticState,
    Objective,
    actor_critic_parts,
    gradient_step,
    learning_rate,
    make_network,
    objective_terms,
    part_learning_rates,
    run_epochs,
)
from jaxrl.agents.on_policy.recurrent_learner import (
    RecurrentActing,
    episode_starts,
    recurrent_acting,
)
from jaxrl.buffers.rollout import RolloutBatch
from jaxrl.networks.memory import MemoryCell, make_cell
from jaxrl.networks.recurrent import MemoryActorCritic, memory_carry
from jaxrl.ops.returns import gae
from jaxrl.types import Agent, ConfigError, EnvSpec, Transition, main_obs

Array = jax.Array


class SequenceBatch(NamedTuple):
    """Whole env sequences: ``rollout`` a ``RolloutBatch`` with leaves ``[N, T, ...]``
    (env first), ``carry`` each env's carry at the rollout's start (leaves ``[N, ...]``),
    ``starts`` ``[N, T]`` bool: an episode starts at step ``t`` inside the rollout."""

    rollout: RolloutBatch
    carry: Any
    starts: Array


def env_major(tree: Any) -> Any:
    """Every leaf ``[T, N, ...]`` as ``[N, T, ...]`` (and back)."""
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), tree)


class SequenceParts(NamedTuple):
    """The recurrent counterparts of ``ActorCriticParts`` for a ``MemoryActorCritic``:
    acting: its ``RecurrentActing``; unroll: ``(params, carry [n], obs [T, n], starts
    [T, n]) -> (carries, dist [T, n, ...], value [T, n])`` on normalized observations,
    illegal actions masked."""

    acting: RecurrentActing
    unroll: Callable[..., tuple[Any, Any, Array]]


def sequence_parts(
    spec: EnvSpec, cfg: ActorCriticConfig, parts: ActorCriticParts, cell: MemoryCell
) -> SequenceParts:
    """The ``SequenceParts`` of ``parts`` (``core.actor_critic_parts``) with ``cell``."""
    network = make_network(spec, cfg, MemoryActorCritic, cell=cell)

    def init_carry(num_envs: int) -> Any:
        return memory_carry(cell, num_envs, cfg.shared_torso)

    acting = recurrent_acting(spec, parts, network, init_carry)

    def unroll(params: Any, carry: Any, obs: Any, starts: Array):
        out = network.apply(params, carry, main_obs(obs), starts, method=MemoryActorCritic.unroll)
        carries, dist, value = cast(tuple[Any, Any, Array], out)
        return carries, acting.masked(dist, obs), value

    return SequenceParts(acting, unroll)


def make_sequence_actor_critic(
    spec: EnvSpec,
    cfg: ActorCriticConfig,
    objective: Objective,
    name: str,
    cell_name: str,
    cell_size: int,
) -> Agent:
    """The ``Agent`` of an actor-critic learner with the memory cell ``cell_name`` of
    ``cell_size`` units (module docstring); ``ConfigError`` for a cell that does not exist
    or an action space the skeleton cannot handle."""
    cell = make_cell(cell_name, cell_size)
    parts = actor_critic_parts(spec, cfg, objective.hparams, name)
    seq = sequence_parts(spec, cfg, parts, cell)
    network, unroll = seq.acting.network, seq.unroll

    def loss_fn(params: Any, hparams: Any, mb: SequenceBatch):
        rollout = env_major(mb.rollout)  # [T, n, ...]
        _, dist, value = unroll(params, mb.carry, rollout.obs, mb.starts.T)
        T, n = value.shape
        flat = lambda x: x.reshape(T * n, *x.shape[2:])
        dist = jax.tree.map(flat, dist) if parts.discrete else (flat(dist[0]), dist[1])
        batch = jax.tree.map(flat, rollout)
        return objective_terms(parts, cfg, objective, hparams, dist, flat(value), batch)

    def sequence_batch(state: ActorCriticState, rollout: Transition):
        """``(batch, return_stats, discounted_return)``: the rollout as whole env sequences
        with GAE advantages and targets, and the reward-scaling statistics after it."""
        h = state.hparams
        obs, next_obs = parts.norm_obs(state, rollout.obs), parts.norm_obs(state, rollout.next_obs)
        return_stats, discounted_return, reward = learning_rewards(cfg, state, rollout)
        starts = episode_starts(rollout.terminated | rollout.truncated)
        carry = jax.tree.map(lambda c: c[0], rollout.extras["carry"])
        carries, _, _ = unroll(state.params, carry, obs, starts)
        T, N = starts.shape
        flat = lambda x: x.reshape(T * N, *x.shape[2:])
        next_value = network.apply(
            state.params,
            jax.tree.map(flat, carries),
            flat(main_obs(next_obs)),
            method=MemoryActorCritic.value,
        )
        value = rollout.extras["value"]
        advantage, target = gae(
            reward,
            value,
            cast(Array, next_value).reshape(T, N),
            rollout.terminated,
            rollout.truncated,
            h.gamma,
            h.gae_lambda,
        )
        action = rollout.action if parts.discrete else rollout.extras["raw_action"]
        sequences = RolloutBatch(obs, action, rollout.extras["log_prob"], value, advantage, target)
        batch = SequenceBatch(env_major(sequences), carry, starts.T)
        return batch, return_stats, discounted_return

    def update(state: ActorCriticState, rollout: Transition, key: Array):
        epochs, num_minibatches = objective.update_epochs, objective.num_minibatches
        num_envs = rollout.reward.shape[1]
        if num_envs % num_minibatches:
            raise ConfigError(
                f"agent '{name}' with a cell: num_envs = {num_envs} is not divisible by "
                f"num_minibatches = {num_minibatches} (a minibatch is whole env sequences)"
            )
        batch, return_stats, discounted_return = sequence_batch(state, rollout)
        lr = learning_rate(cfg, state)
        rates = part_learning_rates(cfg, state.params, lr)
        step = gradient_step(loss_fn, parts.optimizer, state.hparams, rates)
        carry = (state.params, state.opt_state)
        (params, opt_state), aux = run_epochs(key, carry, batch, step, epochs, num_minibatches)
        gradient_steps = epochs * num_minibatches
        state = after_update(
            cfg, state, rollout, params, opt_state, return_stats, discounted_return, gradient_steps
        )
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        metrics = {k: v.mean() for k, v in zip(names, aux, strict=True)}
        metrics["lr"] = lr
        return state, metrics

    return seq.acting.agent(update)
