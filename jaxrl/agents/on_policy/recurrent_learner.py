"""The recurrent parts of an actor-critic learner (IMPALA's ``lstm`` option).

An LSTM network (``networks/recurrent.py``) keeps its state between the steps of an
episode in the per-env carry of the agent contract (``types.py``): ``init_carry(N)`` is
zeros, ``act`` advances it, and the runners reset it to zeros after an episode's last
step. ``act`` also records the carry it was given in ``extras["carry"]`` (leaves
``[N, lstm_size]``, stacked ``[T, N, lstm_size]`` in a rollout), so that the learner can
re-run the network over the rollout ``[T, N]`` from the rollout's first carry
(``evaluate``): step by step, the carry reset where an episode starts (the previous
step's ``terminated | truncated``), which reproduces acting's carries, logits and values
(with the learner's parameters), and back-propagates through the whole unroll
(truncated BPTT over ``T`` steps, as IMPALA's learner does). The value of a next
observation ``V(x_{t+1})`` is the critic run from the carry after step ``t`` (before any
reset), so the bootstrap at a truncation sees the episode's own history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.on_policy.config import ActorCriticConfig
from jaxrl.agents.on_policy.core import (
    ActorCriticParts,
    ActorCriticState,
    make_network,
    policy_action,
)
from jaxrl.networks.recurrent import RecurrentActorCritic, initial_carry, unroll
from jaxrl.ops import distributions as D
from jaxrl.types import Agent, Box, EnvSpec, action_mask, main_obs

Array = jax.Array


def episode_starts(done: Array) -> Array:
    """``starts [T, N]``: step ``t`` starts an episode where step ``t - 1`` ended one
    (``done [T, N]``); False at ``t = 0``, whose carry the runner has reset already."""
    return jnp.concatenate([jnp.zeros_like(done[:1]), done[:-1]])


class RecurrentActing(NamedTuple):
    """How a recurrent actor-critic ``network`` (``apply(params, carry, obs) -> (carry,
    dist, value)``) acts: init: ``(key) -> ActorCriticState`` with the network's
    parameters and optimizer state; act: the ``Agent.act`` (extras as
    ``ActorCriticParts.act``'s plus ``carry``, the carry it was given); init_carry:
    ``(num_envs) -> carry``; masked: ``(dist, obs) -> dist``, illegal actions masked."""

    network: Any
    init: Callable[[Array], ActorCriticState]
    act: Callable[..., Any]
    init_carry: Callable[[int], Any]
    masked: Callable[[Any, Any], Any]

    def agent(self, update: Callable[..., Any]) -> Agent:
        """The ``Agent`` that acts so and learns by ``update``."""
        return Agent(init=self.init, act=self.act, update=update, init_carry=self.init_carry)


class RecurrentParts(NamedTuple):
    """acting: the LSTM network's ``RecurrentActing``; evaluate: ``(params, carry, obs,
    next_obs, done) -> (dist, value, next_value)`` over a rollout (module docstring):
    ``carry`` the rollout's first, ``obs``/``next_obs`` ``[T, N, ...]`` (normalized),
    ``done`` ``[T, N]``; ``dist`` flattened to ``[T * N, ...]`` (illegal actions masked),
    ``value`` and ``next_value`` ``[T, N]``."""

    acting: RecurrentActing
    evaluate: Callable[..., tuple[Any, Array, Array]]


def recurrent_acting(
    spec: EnvSpec, parts: ActorCriticParts, network: Any, init_carry: Callable[[int], Any]
) -> RecurrentActing:
    """The ``RecurrentActing`` of ``network`` with ``parts``' state and policy."""
    bounds = None
    if isinstance(spec.action_space, Box):
        space = spec.action_space
        bounds = (jnp.asarray(space.low, jnp.float32), jnp.asarray(space.high, jnp.float32))

    def init(key: Array) -> ActorCriticState:
        state = parts.init(key)
        obs = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
        params = network.init(key, init_carry(1), obs)
        return dataclasses.replace(state, params=params, opt_state=parts.optimizer.init(params))

    def masked(dist: Any, obs: Any) -> Any:
        return D.categorical_mask(dist, action_mask(obs)) if parts.discrete else dist

    def act(state: ActorCriticState, obs: Any, carry: Any, key: Array, explore: bool = True):
        obs = parts.norm_obs(state, obs)
        out = network.apply(state.params, carry, main_obs(obs))
        new_carry, dist, value = cast(tuple[Any, Any, Array], out)
        action, extras = policy_action(masked(dist, obs), value, key, explore, bounds)
        return action, new_carry, {**extras, "carry": carry}

    return RecurrentActing(network, init, act, init_carry, masked)


def recurrent_parts(
    spec: EnvSpec, cfg: ActorCriticConfig, parts: ActorCriticParts, lstm_size: int
) -> RecurrentParts:
    """The recurrent counterparts of ``parts`` (``on_policy.actor_critic_parts``) for an
    LSTM of ``lstm_size`` units after the torso that ``cfg`` describes."""
    network = make_network(spec, cfg, RecurrentActorCritic, lstm_size=lstm_size)

    def init_carry(num_envs: int) -> Any:
        return initial_carry(num_envs, lstm_size, cfg.shared_torso)

    acting = recurrent_acting(spec, parts, network, init_carry)

    def evaluate(params: Any, carry: Any, obs: Any, next_obs: Any, done: Array):
        T, N = done.shape
        flat = lambda x: x.reshape(T * N, *x.shape[2:])
        starts = episode_starts(done)
        dist, value, carries = unroll(network, params, carry, init_carry(N), main_obs(obs), starts)
        dist = acting.masked(dist, obs)
        dist = jax.tree.map(flat, dist) if parts.discrete else (flat(dist[0]), dist[1][0])
        next_value = cast(
            Array,
            network.apply(
                params,
                jax.tree.map(flat, carries),
                flat(main_obs(next_obs)),
                method=RecurrentActorCritic.value,
            ),
        )
        return dist, value, next_value.reshape(T, N)

    return RecurrentParts(acting, evaluate)
