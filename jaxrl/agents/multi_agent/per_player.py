"""Independent learners for a simultaneous-move game: one copy of a single-agent learner
per player, each with its own parameters, optimizer and rollout (no parameter sharing),
as one ``Agent`` over the players' layout of ``jaxrl.types`` (obs ``[N, P, ...]``,
actions ``[N, P]``, reward ``[N, P]``). ``ippo`` is PPO so replicated (independent PPO,
de Witt et al. 2020, "Is Independent Learning All You Need in the StarCraft Multi-Agent
Challenge?"); the parameter-sharing IPPO is the single-agent PPO on the shared layout of
``envs/marl.py``.

The players' states are stacked on a leading ``[P]`` axis (``jax.vmap`` of the learner's
``init``), and ``act`` and ``update`` are the learner's, vmapped over that axis with each
player's slice of the observations, actions, rewards and extras; episode flags
(``terminated``/``truncated`` ``[T, N]``) are every player's. Metrics are the means over
players. The learner must keep no per-env carry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.types import Agent, ConfigError, EnvSpec, Transition


def per_player(make: Callable[[EnvSpec], Agent], spec: EnvSpec, name: str) -> Agent:
    """``P = spec.num_players`` independent copies of ``make(player_spec)`` (module
    docstring); ``player_spec`` is ``spec`` as one player sees it (``num_players`` 1)."""
    if spec.num_players < 2 or spec.turn_based:
        raise ConfigError(
            f"{name} needs a simultaneous-move env of 2+ players (mpe:simple_spread with "
            f"--env.shared false); '{spec.name}' has {spec.num_players} player(s)"
        )
    P = spec.num_players
    player_spec = dataclasses.replace(spec, num_players=1, turn_based=False)
    learner = make(player_spec)
    if jax.tree.leaves(learner.init_carry(1)):
        raise ConfigError(f"{name} takes learners without a per-env carry")
    to_players = lambda axis: lambda x: jnp.moveaxis(x, axis, 0)  # player axis first
    from_players = lambda axis: lambda x: jnp.moveaxis(x, 0, axis)

    def init(key: jax.Array) -> Any:
        return jax.vmap(learner.init)(jax.random.split(key, P))

    def act(state: Any, obs: Any, carry: Any, key: jax.Array, explore: bool):
        obs = jax.tree.map(to_players(1), obs)  # [N, P, ...] -> [P, N, ...]
        one = lambda s, o, k: learner.act(s, o, (), k, explore)
        action, _, extras = jax.vmap(one)(state, obs, jax.random.split(key, P))
        return from_players(1)(action), carry, jax.tree.map(from_players(1), extras)

    def update(state: Any, rollout: Transition, key: jax.Array):
        each = lambda x: jnp.broadcast_to(x[None], (P, *x.shape))
        split = Transition(
            jax.tree.map(to_players(2), rollout.obs),
            to_players(2)(rollout.action),
            to_players(2)(rollout.reward),
            jax.tree.map(to_players(2), rollout.next_obs),
            each(rollout.terminated),
            each(rollout.truncated),
            jax.tree.map(to_players(2), rollout.extras),
        )
        state, metrics = jax.vmap(learner.update)(state, split, jax.random.split(key, P))
        return state, jax.tree.map(lambda m: jnp.nanmean(m, axis=0), metrics)

    return Agent(init, act, update)


def make_ippo(spec: EnvSpec, **overrides: Any) -> Agent:
    """Independent PPO: one PPO learner per player, with PPO's options
    (``agents.on_policy.ppo``)."""
    from jaxrl.agents.on_policy.ppo import make_ppo

    return per_player(lambda s: make_ppo(s, **overrides), spec, "ippo")
