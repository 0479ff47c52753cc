"""N independent agents in a turn-based game: one agent state and one replay buffer per
player, in the fused program of ``runners/games/self_play.py`` (self-play is the case of one
agent shared by every player; RLHive's ``MultiAgentRunner`` with ``num_agents`` and
``self_play: False``).

Each env step, every agent acts on the observation (``act(state_p, obs, (), key_p, True)``,
per env with the env's own key: ``self_play.act_per_env``, so that noisy nets do not play
one game in every env) and the env takes the action of the agent whose player is to move
(``info["current_player"]``). Transitions are stitched exactly as in self-play
(``self_play.stitch``: RLHive's semantics, final transitions for every player at a game's
end), but each completed transition goes to the queue of the player it belongs to (slot 0
of ``stitch``'s output: the mover's; slot ``1 + p``: player ``p``'s final one).

A rollout of ``T = rollout_len`` steps is ``T / P`` rounds of ``P`` steps; after step ``j``
of a round, player ``j``'s queue hands one transition per env to agent ``j``, so agent
``p``'s ``update`` sees a ``Transition [T / P, num_envs]`` and every replay buffer works
unchanged. Unlike self-play's single stream, the split of completed transitions between
players is not exactly ``1 / P`` per step (who moves first and a game's length decide it),
so each player's queue is a bounded first-in first-out buffer of ``QUEUE`` transitions,
filled to about ``WARMUP_ROUNDS`` per player at ``init``: where one is empty when its
agent is due, the agent is handed again the transition it was handed last (metric
``a{p}_underflows``), and where one is full a completed transition is dropped (metric
``a{p}_drops``). Both are counted per iteration and are rare in board games (the surplus
of one player over the other changes by at most one per game, as a random walk).

In a game whose players differ (``EnvSpec.players``: each its own observation and action
space), agent ``p`` acts on and learns from player ``p``'s view of the observation
(``jaxrl.types.player_view``); transitions are stitched on the whole observation and cut
to the player's view as they enter its queue, and agent ``p`` is evaluated in seat ``p``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.runners.base import ChunkLayout, RunConfig, Runner, RunnerState, scanned_runner
from jaxrl.runners.games.matches import make_match, opponents, outcome_rates
from jaxrl.runners.games.self_play import (
    Pending,
    Queue,
    act_per_env,
    empty_pending,
    game_stats,
    pop,
    push,
    stitch,
    zeros_of,
)
from jaxrl.types import Agent, ConfigError, Env, PRNGKey, Transition, player_view

QUEUE = 32  # transitions each player's queue holds per env
WARMUP_ROUNDS = QUEUE // 2  # rounds of P moves played at init, nothing learned from them


class Seats(NamedTuple):
    """The runner's per-env carry: the player to move at ``obs`` (``[N]`` int32), the
    pending turns, one queue per player and the transition each agent was handed last
    (``Transition`` leaves ``[N, ...]``, one per player)."""

    player: jax.Array
    pending: Pending
    queues: tuple[Queue, ...]
    last: tuple[Transition, ...]


def check_agents(agents: Sequence[Agent], env: Env, rollout_len: int) -> None:
    """ConfigError (one line) unless ``agents`` can play ``env`` as independent players:
    a turn-based game of ``P >= 2`` players, one agent per player, agents without a
    per-env carry, and ``rollout_len`` a multiple of ``P``."""
    spec = env.spec
    if spec.num_players < 2 or not spec.turn_based:
        raise ConfigError(
            f"independent agents need a turn-based game of 2+ players; '{spec.name}' has "
            f"{spec.num_players} player(s){'' if spec.turn_based else ', simultaneous moves'}"
        )
    if len(agents) != spec.num_players:
        raise ConfigError(
            f"'{spec.name}' has {spec.num_players} players: give {spec.num_players} agents, "
            f"not {len(agents)}"
        )
    if any(jax.tree.leaves(a.init_carry(1)) for a in agents):
        raise ConfigError("independent agents take agents without a per-env carry (dqn, rainbow)")
    if rollout_len % spec.num_players:
        raise ConfigError(
            f"run.rollout_len {rollout_len} must be a multiple of the {spec.num_players} "
            "players (each agent learns every P steps)"
        )


def _mine(env: Env, transition: Transition, p: int) -> Transition:
    """``transition`` with player ``p``'s view of its observations."""
    view = lambda obs: player_view(env.spec, obs, p)
    return transition._replace(obs=view(transition.obs), next_obs=view(transition.next_obs))


def _select(actions: Sequence[jax.Array], player: jax.Array) -> jax.Array:
    """The action ``[N]`` of the agent of ``player`` ``[N]`` among ``actions`` (one per agent)."""
    stacked = jnp.stack(actions, axis=1)  # [N, P]
    return jnp.take_along_axis(stacked, player[:, None], axis=1)[:, 0]


def _empty(env: Env, agents: Sequence[Agent], states: Any, obs: Any, player: jax.Array) -> Seats:
    """``Seats`` with nothing pending or queued, shaped like the agents' ``act`` outputs."""
    P, N = env.spec.num_players, env.spec.num_envs
    views = [player_view(env.spec, obs, p) for p in range(P)]
    shapes = [
        jax.eval_shape(lambda s, o, a=a: a.act(s, o, (), jax.random.PRNGKey(0), True), s, o)
        for a, s, o in zip(agents, states, views, strict=True)
    ]
    action, _, extras = shapes[0]
    expected: Any = jax.tree.structure((action, extras))
    if any(jax.tree.structure(s[::2]) != expected for s in shapes):
        raise ConfigError("independent agents must return the same act outputs (dqn, rainbow)")
    pending, one = empty_pending(obs, action, extras, N, P)
    ones = [_mine(env, one, p) for p in range(P)]
    count = jnp.zeros((N,), jnp.int32)
    queues = tuple(Queue(jax.tree.map(zeros_of((N, QUEUE)), o), count) for o in ones)
    return Seats(player, pending, queues, tuple(jax.tree.map(zeros_of((N,)), o) for o in ones))


def _make_round(agents: tuple[Agent, ...], env: Env):
    """``(env_step, round_)`` of the runner: one move (``env_step(state, key, due)``; after
    it, player ``due``'s queue hands one transition to its agent, none where ``due`` is
    None) and one round of ``P`` moves (``round_(state, key)``)."""
    P, N = env.spec.num_players, env.spec.num_envs

    def env_step(state: RunnerState, key: PRNGKey, due: int | None):
        """One move; ``due``: the player whose queue hands out a transition after it."""
        keys = jax.random.split(key, P + 1)
        seats: Seats = state.carry
        outs = [
            act_per_env(a, s, player_view(env.spec, state.obs, p), (), k)
            for p, (a, s, k) in enumerate(zip(agents, state.agent_state, keys[:P], strict=True))
        ]
        action = _select([o[0] for o in outs], seats.player)
        hot = seats.player[:, None] == jnp.arange(P)[None, :]
        extras = jax.tree.map(
            lambda *xs: jnp.take_along_axis(jnp.stack(xs, 1), seats.player[:, None], 1)[:, 0],
            *[o[2] for o in outs],
        )
        env_state, ts = env.step(state.env_state, action, keys[P])
        done = ts.terminated | ts.truncated
        pending, completed, valid = stitch(
            seats.pending, state.obs, seats.player, action, extras, ts
        )
        owner = jnp.concatenate([hot[:, None, :], jnp.eye(P, dtype=bool)[None].repeat(N, 0)], 1)
        queues, drops = [], []
        for p in range(P):
            mine = valid & owner[..., p]  # [N, 1 + P]
            drops.append(jnp.maximum(seats.queues[p].count + mine.sum(1) - QUEUE, 0).sum())
            queues.append(push(seats.queues[p], _mine(env, completed, p), mine))
        last, out, underflow = list(seats.last), None, jnp.zeros((N,), bool)
        if due is not None:
            queues[due], first, underflow = pop(queues[due])
            out = jax.tree.map(
                lambda old, new: jnp.where(
                    underflow.reshape(-1, *([1] * (new.ndim - 1))), old, new
                ),
                last[due],
                first,
            )
            last[due] = out
        seats = Seats(ts.info["current_player"], pending, tuple(queues), tuple(last))
        state = dataclasses.replace(state, env_state=env_state, obs=ts.obs, carry=seats)
        stats = {**game_stats(done, ts.info, underflow), "drops": jnp.stack(drops)}
        return state, (out, stats)

    def round_(state: RunnerState, key: PRNGKey):
        """``P`` moves; after move ``j``, agent ``j`` is handed one transition per env."""
        outs, stats = [], []
        for j, k in enumerate(jax.random.split(key, P)):
            state, (out, s) = env_step(state, k, j)
            outs.append(out)
            stats.append(s)
        total = jax.tree.map(lambda *xs: sum(xs), *stats)
        total["underflows"] = jnp.stack([s["underflows"] for s in stats])
        return state, (tuple(outs), total)

    return env_step, round_


def make_multi_agent_runner(
    agents: Sequence[Agent], env: Env, config: RunConfig, eval_env: Env | None = None
) -> Runner:
    """The chunked program of independent agents (module docstring): a ``Runner`` like
    ``make_self_play_runner``'s whose ``RunnerState.agent_state`` is a tuple of the
    agents' states (player order) and whose ``carry`` is a ``Seats``.

    Metrics per iteration: ``step``, ``episodes``, ``episode_return_sum`` (player 0's),
    ``episode_length_sum``, ``player{p}_return``; per agent ``a{p}_underflows``,
    ``a{p}_drops`` and its own metrics prefixed ``a{p}_``; on an evaluating chunk, per
    agent ``a{p}_eval_{win,draw,loss}_{opponent}`` and ``eval_return`` (the agents' mean
    score against the random opponent).
    """
    agents = tuple(agents)
    check_agents(agents, env, config.rollout_len)
    P, N = env.spec.num_players, env.spec.num_envs
    layout = ChunkLayout.of(config, N)
    eval_env = eval_env or env
    seat = (lambda p: p) if env.spec.players else (lambda p: None)  # players that differ
    matches = {
        (p, name): make_match(a, eval_env, opp, seat(p))
        for p, a in enumerate(agents)
        for name, opp in opponents(env).items()
        if opp is not None  # "self" (a cooperative game's self-play) is self_play.py's
    }

    env_step, round_ = _make_round(agents, env)

    def init(key: PRNGKey, hparams: Any = None) -> RunnerState:
        key, env_key, warm_key, *agent_keys = jax.random.split(key, 3 + P)
        states = tuple(a.init(k) for a, k in zip(agents, agent_keys, strict=True))
        if hparams is not None:
            states = tuple(s.replace(hparams=h) for s, h in zip(states, hparams, strict=True))
        env_state, ts = env.reset(env_key)
        seats = _empty(env, agents, states, ts.obs, ts.info["current_player"])
        state = RunnerState(states, env_state, ts.obs, seats, key, jnp.zeros((), jnp.int32))
        warm = lambda s, k: (env_step(s, k, None)[0], None)
        state, _ = jax.lax.scan(warm, state, jax.random.split(warm_key, WARMUP_ROUNDS * P))
        return state

    def iteration(state: RunnerState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        keys = jax.random.split(rollout_key, config.rollout_len // P)
        state, (rollouts, stats) = jax.lax.scan(round_, state, keys)
        stats = jax.tree.map(lambda v: v.sum(axis=0), stats)
        games = stats["episodes"]
        metrics = {k: stats[k] for k in ("episodes", "episode_return_sum", "episode_length_sum")}
        for p in range(P):
            mean = stats["player_return_sum"][p] / jnp.maximum(games, 1)
            metrics[f"player{p}_return"] = jnp.where(games > 0, mean, jnp.nan)
            metrics[f"a{p}_underflows"] = stats["underflows"][p].astype(jnp.float32)
            metrics[f"a{p}_drops"] = stats["drops"][p].astype(jnp.float32)
        states = []
        for p, (a, k) in enumerate(zip(agents, jax.random.split(update_key, P), strict=True)):
            s, m = a.update(state.agent_state[p], rollouts[p], k)
            states.append(s)
            metrics.update({f"a{p}_{n}": jnp.asarray(v, jnp.float32) for n, v in m.items()})
        return dataclasses.replace(state, agent_state=tuple(states), key=key), metrics

    def evaluate_all(agent_states: Any, key: PRNGKey) -> dict[str, jax.Array]:
        rates, randoms = {}, []
        for (p, name), k in zip(matches, jax.random.split(key, len(matches)), strict=True):
            scores = matches[p, name](agent_states[p], k)
            if name == "random":
                randoms.append(scores.mean())
            rates.update({f"a{p}_{n}": v for n, v in outcome_rates(scores, name).items()})
        rates["eval_return"] = jnp.stack(randoms).mean()
        return rates

    def evaluate(agent_states: Any, key: PRNGKey) -> jax.Array:
        """Player 0's agent against the random opponent: scores ``[eval episodes]``."""
        return matches[0, "random"](agent_states[0], key)

    return scanned_runner(env, init, iteration, evaluate, evaluate_all, layout)
