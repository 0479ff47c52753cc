"""The replay of search policies and game outcomes (AlphaZero's training data).

Each position an agent searched is stored with the search's policy over actions and,
once its game has ended, the game's outcome from the view of the player who moved there
(Silver et al. 2018: ``z``). The agent learns from the self-play runner's stitched
transitions (``runners/games/self_play.py``): one env's stream holds the transitions of
the positions of one game, then the game's final transitions (``terminated``, with each
player's outcome as reward), then the next game's. So the entries of an env that still
wait for an outcome are exactly those of its game in progress, and the first final
transition of a game fixes all of them: an entry's outcome is the final transition's
reward where its mover moved with the same parity of moves made (the same player of a
two-player game of alternating moves), else its negation (a zero-sum game). A second
final transition of the same game (the other player's) finds only itself waiting.
Entries whose outcome is not known yet are never sampled.

The ring of ``capacity`` entries overwrites its oldest entries first; fields:
``obs`` (leaves ``[C, ...]``), ``policy [C, A]`` float32, ``value [C]`` float32 (the
outcome), ``env [C]`` int32, ``parity [C]`` int32, ``ready [C]`` bool, ``ptr`` int32 (the
next row to write), ``size`` int32 (rows written, at most ``C``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import shared_field


@flax.struct.dataclass
class OutcomeReplay:
    obs: Any
    policy: jax.Array
    value: jax.Array
    env: jax.Array
    parity: jax.Array
    ready: jax.Array
    ptr: jax.Array = shared_field()
    size: jax.Array = shared_field()


def init(obs_example: Any, num_actions: int, capacity: int) -> OutcomeReplay:
    """An empty replay of ``capacity`` rows shaped like ``obs_example`` (leaves ``[...]``,
    one observation without a batch axis)."""
    zeros = lambda shape, dtype: jnp.zeros((capacity, *shape), dtype)
    return OutcomeReplay(
        obs=jax.tree.map(lambda x: zeros(jnp.shape(x), x.dtype), obs_example),
        policy=zeros((num_actions,), jnp.float32),
        value=zeros((), jnp.float32),
        env=zeros((), jnp.int32),
        parity=zeros((), jnp.int32),
        ready=zeros((), bool),
        ptr=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
    )


def add_step(
    replay: OutcomeReplay,
    obs: Any,
    policy: jax.Array,
    parity: jax.Array,
    done: jax.Array,
    reward: jax.Array,
) -> OutcomeReplay:
    """``replay`` with one step of ``N`` envs' transitions added (module docstring).

    Args:
      obs: the positions searched, leaves ``[N, ...]``; ``policy`` ``[N, A]`` float32 the
        search's policies there; ``parity`` ``[N]`` int32 the moves made before each,
        modulo 2.
      done: ``[N]`` bool, the transition ends its game (its player's final transition);
        ``reward`` ``[N]`` float32, the transition's reward (the player's outcome where
        ``done``).
    """
    capacity = replay.policy.shape[0]
    n = policy.shape[0]
    rows = (replay.ptr + jnp.arange(n)) % capacity
    put = lambda buf, x: buf.at[rows].set(x)
    replay = dataclasses.replace(
        replay,
        obs=jax.tree.map(put, replay.obs, obs),
        policy=put(replay.policy, policy.astype(jnp.float32)),
        value=put(replay.value, jnp.zeros((n,), jnp.float32)),
        env=put(replay.env, jnp.arange(n, dtype=jnp.int32)),
        parity=put(replay.parity, parity.astype(jnp.int32)),
        ready=put(replay.ready, jnp.zeros((n,), bool)),
        ptr=(replay.ptr + n) % capacity,
        size=jnp.minimum(replay.size + n, capacity),
    )
    written = jnp.arange(capacity) < replay.size
    ends = written & ~replay.ready & done[replay.env]
    same = replay.parity == parity[replay.env]
    outcome = jnp.where(same, reward[replay.env], -reward[replay.env])
    value = jnp.where(ends, outcome, replay.value)
    return dataclasses.replace(replay, value=value, ready=replay.ready | ends)


def sample(
    replay: OutcomeReplay, key: jax.Array, batch_size: int
) -> tuple[Any, jax.Array, jax.Array]:
    """``(obs, policy [B, A], value [B])`` of ``batch_size`` rows drawn uniformly, with
    replacement, among the rows whose outcome is known (garbage if there are none: check
    ``ready_count`` first)."""
    weights = replay.ready.astype(jnp.float32)
    p = weights / jnp.maximum(weights.sum(), 1.0)
    rows = jax.random.choice(key, weights.shape[0], (batch_size,), p=p)
    obs = jax.tree.map(lambda x: x[rows], replay.obs)
    return obs, replay.policy[rows], replay.value[rows]


def ready_count(replay: OutcomeReplay) -> jax.Array:
    """int32: the rows whose outcome is known."""
    return replay.ready.sum(dtype=jnp.int32)
