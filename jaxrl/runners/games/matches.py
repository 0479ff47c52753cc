"""Games of a greedy agent against fixed opponents, for the self-play runner's evaluations.

An opponent is ``(obs [N, ...], key) -> actions [N]`` int32: ``games.random_action``
(uniform among legal moves) for every turn-based game, and ``games.scripted_action`` (win
if it can, block if it must, else random) for the games of ``envs.games``; in the
cooperative games (``COOPERATIVE``: Hanabi) also ``self``, the greedy agent in every seat
(its self-play score, the measure of such a game). In a match the agent takes seat
``env % P`` of the evaluation env, and a game's score is the agent's return at its end
(+1 win, 0 draw, -1 loss in the board games; the team's score in Hanabi).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.envs import games
from jaxrl.types import ACTION_MASK, Agent, Env, EnvSpec, PRNGKey, player_view

Opponent = Callable[[Any, PRNGKey], jax.Array]  # (obs [N, ...], key) -> actions [N]
COOPERATIVE = ("hanabi",)  # games whose players share one reward: evaluated in self-play


def opponents(env: Env) -> dict[str, Opponent | None]:
    """The fixed opponents of ``env``: ``random``, ``scripted`` for ``envs.games``, and
    ``self`` (None: the agent itself) for the ``COOPERATIVE`` games."""
    spec = env.spec
    random = _mover_random(spec) if spec.players else games.random_action
    found: dict[str, Opponent | None] = {"random": random}
    if env.spec.name in COOPERATIVE:
        found["self"] = None
    game = games.GAMES.get(env.spec.name)
    if game is not None:
        found["scripted"] = lambda obs, key: games.scripted_action(game, obs, key)
    return found


def _mover_random(spec: EnvSpec) -> Opponent:
    """Uniform among the legal moves of the player to move, in a game whose players
    differ (``EnvSpec.players``: the mover is the one whose view has a legal move)."""

    def act(obs: Any, key: PRNGKey) -> jax.Array:
        keys = jax.random.split(key, spec.num_players)
        each = jnp.stack([games.random_action(o, k) for o, k in zip(obs, keys, strict=True)], 1)
        mover = jnp.argmax(jnp.stack([o[ACTION_MASK].any(-1) for o in obs], 1), axis=1)
        return jnp.take_along_axis(each, mover[:, None], 1)[:, 0]

    return act


def outcome_rates(scores: jax.Array, opponent: str) -> dict[str, jax.Array]:
    """``{"eval_win_<opponent>": ..., "eval_draw_...", "eval_loss_..."}``: the fractions
    of ``scores`` ``[G]`` (a game's +1, 0 or -1 for the agent) that are wins (> 0), draws
    (0) and losses (< 0); float32 scalars summing to 1."""
    return {
        f"eval_win_{opponent}": (scores > 0).mean(dtype=jnp.float32),
        f"eval_draw_{opponent}": (scores == 0).mean(dtype=jnp.float32),
        f"eval_loss_{opponent}": (scores < 0).mean(dtype=jnp.float32),
    }


def make_match(
    agent: Agent, env: Env, opponent: Opponent | None, player: int | None = None
) -> Callable[[Any, PRNGKey], jax.Array]:
    """``match(agent_state, key) -> scores [env.spec.num_envs]``: one game per env, the
    greedy agent in seat ``env % P`` (``player``: in that seat of every env, seeing that
    player's view) against ``opponent`` in the others (None: the greedy agent in every
    seat); the score is the agent's return at the game's end (+1 win, 0 draw, -1 loss)."""
    spec = env.spec
    seat = jnp.arange(spec.num_envs) % spec.num_players
    if player is not None:
        seat = jnp.full(spec.num_envs, player, jnp.int32)
    view = (lambda obs: obs) if player is None else (lambda obs: player_view(spec, obs, player))
    initial_carry = agent.init_carry(spec.num_envs)

    def match(agent_state: Any, key: PRNGKey) -> jax.Array:
        key, reset_key = jax.random.split(key)
        env_state, ts = env.reset(reset_key)

        def cond(loop):
            return (~loop[4].all()) & (loop[6] < spec.max_episode_steps)

        def body(loop):
            env_state, ts, carry, key, finished, scores, t = loop
            key, act_key, opp_key, step_key = jax.random.split(key, 4)
            mine, carry, _ = agent.act(agent_state, view(ts.obs), carry, act_key, False)
            theirs = mine if opponent is None else opponent(ts.obs, opp_key)
            action = jnp.where(ts.info["current_player"] == seat, mine, theirs)
            env_state, ts = env.step(env_state, action, step_key)
            done = ts.terminated | ts.truncated
            score = jnp.take_along_axis(ts.info["episode_return"], seat[:, None], 1)[:, 0]
            scores = jnp.where(done & ~finished, score, scores)
            return env_state, ts, carry, key, finished | done, scores, t + 1

        zeros = jnp.zeros(spec.num_envs, jnp.float32)
        loop = (env_state, ts, initial_carry, key, zeros > 0, zeros, jnp.zeros((), jnp.int32))
        return jax.lax.while_loop(cond, body, loop)[5]

    return match
