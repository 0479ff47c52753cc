"""Training opponents other than the current self in self-play: past snapshots of the
agent's parameters, and the game's scripted opponent.

Pure self-play trains against the current policy only; once it mostly meets itself it can
drift away from play it no longer sees (measured on Connect Four:
benchmarks/journal/2026-11-24-main-after-merges-1020.md). The common remedy is to make
some of the games against earlier versions of the agent: fictitious self-play (Heinrich &
Silver 2016, "Deep Reinforcement Learning from Self-Play in Imperfect-Information Games"),
OpenAI Five's 80% of games against the current self and 20% against past ones (Berner et
al. 2019, "Dota 2 with Large Scale Deep Reinforcement Learning", section 4.2), AlphaStar's
league (Vinyals et al. 2019).

Here, with ``M = RunConfig.opponent_pool`` snapshots:

* every ``RunConfig.opponent_every`` env steps (rounded up to whole iterations) the
  agent's ``params`` are copied into the ring, slot ``k % M`` for the ``k``-th snapshot
  (0-based), so the ring holds the last ``M`` snapshots;
* the first ``K = round(RunConfig.opponent_envs * N)`` of the ``N`` envs are split into
  ``M`` groups of ``G = K / M`` consecutive envs; in group ``m``, env ``i`` has snapshot
  ``m`` play seat ``i % P`` (so both seats are played by each snapshot), with the same
  exploration as the learner (``explore=True``, its own key per env); a slot not yet
  written plays the current params (self-play);
* every stitched transition is learned from, the snapshot's moves included: one-step
  Q-learning is off-policy, so a move of any policy is a valid transition of the game.

With ``RunConfig.opponent_scripted`` the next ``S = round(opponent_scripted * N)`` envs
(``K`` to ``K + S``) have the game's scripted opponent (``matches.opponents``: win if it
can, block if it must, else random) in seat ``i % P``. This is the curriculum of the
PettingZoo/AgileRL Connect Four DQN self-play tutorial (https://pettingzoo.farama.org/
tutorials/agilerl/DQN/), whose lessons train against random and such "weak" heuristic
opponents before and beside self-play.

The ring lives in the runner's per-env carry (``self_play.Stitch.pool``) but is not per
env: its leaves lead with ``[M]``, with ``M <= N / P < N``, so a device mesh (which splits
the leaves that lead with ``N``) replicates it. Its counter is a ``shared_field``: under
``--seeds`` every member snapshots at the same iteration, and the copy stays a real
branch.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import Agent, ConfigError, PRNGKey, shared_field


@flax.struct.dataclass
class Pool:
    """The ring of snapshots: ``params`` leaves ``[M, ...]`` (the agent's ``params``) and
    the iterations run so far (int32, shared by the members of a vmapped run)."""

    params: Any
    iterations: jax.Array = shared_field()


class PoolLayout(NamedTuple):
    """Static sizes: ``size`` snapshots (M), ``envs`` envs with a snapshot in one seat (K),
    a snapshot every ``every`` iterations, ``players`` seats (P), ``scripted`` envs with
    the scripted opponent in one seat (S)."""

    size: int
    envs: int
    every: int
    players: int
    scripted: int = 0

    @classmethod
    def of(
        cls,
        size: int,
        fraction: float,
        every_steps: int,
        steps_per_iteration: int,
        num_envs: int,
        players: int,
        scripted_fraction: float = 0.0,
    ) -> PoolLayout:
        """The layout of ``RunConfig``'s ``opponent_pool`` (``size``), ``opponent_envs``
        (``fraction``), ``opponent_every`` (``every_steps``) and ``opponent_scripted``
        (``scripted_fraction``); ``ConfigError`` (one line) unless the
        ``round(fraction * num_envs)`` envs split into ``size`` groups of at least
        ``players`` envs each (every snapshot plays every seat), the scripted envs number
        at least ``players`` where there are any, and both fit in ``num_envs``."""
        envs = round(fraction * num_envs) if size else 0
        if size and (envs % size or envs // size < players):
            raise ConfigError(
                f"run.opponent_pool {size} with run.opponent_envs {fraction} gives {envs} of "
                f"{num_envs} envs: they must split into {size} groups of at least {players} "
                f"envs (a multiple of {size * players}): give more envs (--num-envs) or a "
                f"smaller --run.opponent_pool"
            )
        scripted = round(scripted_fraction * num_envs)
        if scripted_fraction and scripted < players:
            raise ConfigError(
                f"run.opponent_scripted {scripted_fraction} gives {scripted} of {num_envs} "
                f"envs; it needs at least {players} (one per seat)"
            )
        if envs + scripted > num_envs:
            raise ConfigError(
                f"run.opponent_envs and run.opponent_scripted take {envs} + {scripted} envs; "
                f"there are {num_envs}"
            )
        every = max(1, -(-every_steps // steps_per_iteration))
        return cls(size, envs, every, players, scripted)


def init(layout: PoolLayout, params: Any) -> Pool:
    """An empty ring shaped like ``params`` (no slot written yet)."""
    ring = jax.tree.map(lambda x: jnp.zeros((layout.size, *x.shape), x.dtype), params)
    return Pool(ring, jnp.zeros((), jnp.int32))


def written(layout: PoolLayout, pool: Pool) -> jax.Array:
    """How many slots hold a snapshot: ``min(iterations // every, M)`` (int32 scalar)."""
    return jnp.minimum(pool.iterations // layout.every, layout.size)


def snapshot(layout: PoolLayout, pool: Pool, params: Any) -> Pool:
    """The ring at the start of an iteration: where ``iterations`` is a positive multiple
    of ``every``, ``params`` copied into slot ``(iterations // every - 1) % M``."""
    due = (pool.iterations > 0) & (pool.iterations % layout.every == 0)
    slot = (pool.iterations // layout.every - 1) % layout.size

    def write(ring: Any) -> Any:
        return jax.tree.map(lambda r, p: r.at[slot].set(p), ring, params)

    return dataclasses.replace(
        pool, params=jax.lax.cond(due, write, lambda ring: ring, pool.params)
    )


def snapshot_params(layout: PoolLayout, pool: Pool, params: Any) -> Any:
    """The params each group plays with: leaves ``[M, ...]``, slot ``m`` where it has been
    written, else the current ``params`` (self-play until the ring fills)."""
    filled = jnp.arange(layout.size) < written(layout, pool)
    return jax.tree.map(
        lambda r, p: jnp.where(filled.reshape(-1, *([1] * p.ndim)), r, p[None]), pool.params, params
    )


def act(
    layout: PoolLayout,
    agent: Agent,
    agent_state: Any,
    opponent_params: Any,
    obs: Any,
    carry: Any,
    player: jax.Array,
    action: jax.Array,
    key: PRNGKey,
    act_per_env: Any,
    scripted: Any = None,
) -> jax.Array:
    """``action`` ``[N]`` with the snapshots' and the scripted opponent's moves in their
    seats (module docstring).

    ``opponent_params``: ``snapshot_params(...)`` (None without snapshots); ``obs``, ``carry``:
    leaves ``[N, ...]``; ``player`` ``[N]`` int32, the player to move; ``act_per_env``: the
    self-play runner's per-env ``act`` (``(agent, state, obs, carry, key) -> (action,
    carry, extras)``); ``scripted``: the game's ``(obs, key) -> actions`` opponent."""
    K, M, S, P = layout.envs, layout.size, layout.scripted, layout.players
    snapshot_key, scripted_key = jax.random.split(key)
    seat = jnp.arange(K + S) % P
    if M:
        groups = lambda tree: jax.tree.map(lambda x: x[:K].reshape(M, K // M, *x.shape[1:]), tree)

        def group_act(params: Any, o: Any, c: Any, k: PRNGKey) -> jax.Array:
            return act_per_env(agent, agent_state.replace(params=params), o, c, k)[0]

        theirs = jax.vmap(group_act)(
            opponent_params, groups(obs), groups(carry), jax.random.split(snapshot_key, M)
        ).reshape(K)
        mine = action[:K]
        action = action.at[:K].set(
            jnp.where(player[:K] == seat[:K], theirs.astype(mine.dtype), mine)
        )
    if S:
        theirs = scripted(jax.tree.map(lambda x: x[K : K + S], obs), scripted_key)
        mine = action[K : K + S]
        action = action.at[K : K + S].set(
            jnp.where(player[K : K + S] == seat[K:], theirs.astype(mine.dtype), mine)
        )
    return action
