"""The fused self-play program for turn-based games: one agent state acts for every player.

The env is a turn-based game of ``P = spec.num_players`` players (``jaxrl.types``:
``info["current_player"]``, reward ``[N, P]``). Each env step, the agent acts on the
observation of the player to move (``act(state, obs, carry, key, True)``, called per env
with the env's own key: ``act_per_env``), and the runner stitches each player's
experience with RLHive's semantics (``MultiAgentRunner``, ``run_one_step`` /
``run_end_step``):

* a player's transition runs from its observation at its turn to its observation at its
  next turn, with the sum of the rewards it received in between (its own move's and the
  other players'), neither terminated nor truncated;
* when the game ends, every player that has moved gets its final transition, from its
  last turn to the game's final observation, with the rewards since that turn, and the
  game's ``terminated`` / ``truncated`` flags.

Stitched transitions complete at irregular times (none at a player's first move, one per
move in mid-game, one per player when the game ends). Each env keeps a first-in first-out
queue of completed transitions, and the runner hands the agent exactly one per env and
step, so ``agent.update`` sees a ``Transition [rollout_len, num_envs]`` as in
``runners/scan.py`` and every replay buffer works unchanged. This never runs dry after
``P`` warm-up steps at ``init``: after ``t`` moves, ``t - pending`` transitions have
completed, with ``pending <= P`` players waiting for their next turn, so the queue
holds at most ``P + 1`` (``make_self_play_runner`` proves it in a metric, ``underflows``,
always 0). The consecutive transitions of one env's stream belong to alternating players:
learners that read windows of consecutive steps (``n_step > 1``, on-policy rollouts) would
mix players, so self-play takes one-step off-policy learners (the CLI checks it).

Exploration is drawn per env (``act_per_env``): a batched ``act`` may draw one exploration
sample per call (noisy nets draw one parameter noise per forward pass, shared by the
batch), and the games start together from one empty board that looks the same to either
first player, so with a batched ``act`` every env plays the same game (measured on Connect
Four with the ``connect_four-rainbow`` preset: 1,021 distinct states in 51,200 stitched
transitions of 32 envs, benchmarks/journal/2026-11-24-connect-four-goal.md).

With ``RunConfig.opponent_pool`` or ``opponent_scripted`` set, some envs have a past
snapshot of the agent, or the game's scripted opponent, in one seat instead of the agent
itself (``runners/games/opponent_pool.py``: the remedies for a learner that drifts once it only
meets itself); every stitched transition is still learned from.

Evaluation plays the greedy agent against fixed opponents (``runners/games/matches.py``: uniform
random, and scripted where the game is one of ``envs.games``), reported as win/draw/loss
rates; a cooperative game (Hanabi) is scored in self-play, the greedy agent in every seat.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp

from jaxrl.runners.base import ChunkLayout, RunConfig, Runner, RunnerState, scanned_runner
from jaxrl.runners.games import opponent_pool
from jaxrl.runners.games.matches import make_match, opponents, outcome_rates
from jaxrl.types import Agent, ConfigError, Env, PRNGKey, Transition


class Pending(NamedTuple):
    """Per env and player (leading axes ``[N, P]``): the observation, action and extras of
    the player's last turn, the rewards it received since, and whether it has one."""

    obs: Any
    action: jax.Array
    extras: Any
    reward: jax.Array  # [N, P] float32
    active: jax.Array  # [N, P] bool


class Queue(NamedTuple):
    """Per env: completed transitions waiting to be handed out (``Transition`` leaves
    ``[N, Q, ...]``, oldest first) and how many there are (``[N]`` int32)."""

    items: Transition
    count: jax.Array  # type: ignore[assignment]  # a field named as tuple.count, saved so


class Stitch(NamedTuple):
    """The runner's per-env carry: the agent's carry, the player to move at ``obs``
    (``[N]`` int32), the pending turns and the queue; with ``RunConfig.opponent_pool``,
    the ring of past snapshots (``opponent_pool.Pool``, not per env), else None."""

    agent: Any
    player: jax.Array
    pending: Pending
    queue: Queue
    pool: Any = None


def _take(tree: Any, index: jax.Array) -> Any:
    """``tree`` leaves ``[N, P, ...]`` -> ``[N, ...]`` at player ``index`` ``[N]``."""
    return jax.tree.map(
        lambda x: jnp.take_along_axis(x, index.reshape(-1, 1, *([1] * (x.ndim - 2))), axis=1)[:, 0],
        tree,
    )


def _put(tree: Any, index: jax.Array, value: Any, players: int) -> Any:
    """``tree`` leaves ``[N, P, ...]`` with player ``index`` ``[N]`` set to ``value``."""
    hot = index[:, None] == jnp.arange(players)[None, :]
    return jax.tree.map(
        lambda x, v: jnp.where(hot.reshape(*hot.shape, *([1] * (x.ndim - 2))), v[:, None], x),
        tree,
        value,
    )


def stitch(pending: Pending, obs: Any, mover: jax.Array, action: jax.Array, extras: Any, ts: Any):
    """One env step of transition stitching (module docstring).

    Args:
      pending: the pending turns before the step.
      obs: the observation ``[N, ...]`` the mover ``[N]`` int32 acted on with ``action``
        ``[N]`` (and ``extras``); ``ts``: the env's ``TimeStep`` after the action.

    Returns:
      ``(pending, completed, valid)``: ``completed`` a ``Transition`` with leaves
      ``[N, 1 + P, ...]`` (slot 0: the mover's previous turn, completed by this turn;
      slot ``1 + p``: player ``p``'s final transition where the game ended), ``valid``
      ``[N, 1 + P]`` bool, which slots hold a transition.
    """
    N, P = pending.reward.shape
    false = jnp.zeros((N,), bool)
    mid = Transition(
        _take(pending.obs, mover),
        _take(pending.action, mover),
        _take(pending.reward, mover),
        obs,
        false,
        false,
        _take(pending.extras, mover),
    )
    mid_valid = _take(pending.active, mover)
    pending = Pending(
        _put(pending.obs, mover, obs, P),
        _put(pending.action, mover, action, P),
        _put(pending.extras, mover, extras, P),
        _put(pending.reward, mover, jnp.zeros((N,), jnp.float32), P),
        _put(pending.active, mover, jnp.ones((N,), bool), P),
    )
    reward = pending.reward + ts.reward
    done = ts.terminated | ts.truncated
    each = lambda x: jnp.broadcast_to(x[:, None], (N, P, *x.shape[1:]))
    final = Transition(
        pending.obs,
        pending.action,
        reward,
        jax.tree.map(each, ts.info["final_obs"]),
        each(ts.terminated),
        each(ts.truncated),
        pending.extras,
    )
    final_valid = pending.active & done[:, None]
    completed = jax.tree.map(lambda m, f: jnp.concatenate([m[:, None], f], axis=1), mid, final)
    valid = jnp.concatenate([mid_valid[:, None], final_valid], axis=1)
    pending = pending._replace(
        reward=jnp.where(done[:, None], 0.0, reward),
        active=pending.active & ~done[:, None],
    )
    return pending, completed, valid


def push(queue: Queue, completed: Transition, valid: jax.Array) -> Queue:
    """``queue`` with the valid slots of ``completed`` appended in slot order."""
    size = jax.tree.leaves(queue.items)[0].shape[1]
    held = jnp.arange(size)[None, :] < queue.count[:, None]
    keep = jnp.concatenate([held, valid], axis=1)  # [N, Q + K]
    order = jnp.argsort(~keep, axis=1, stable=True)[:, :size]
    both = jax.tree.map(lambda q, c: jnp.concatenate([q, c], axis=1), queue.items, completed)
    items = jax.tree.map(
        lambda x: jnp.take_along_axis(x, order.reshape(*order.shape, *([1] * (x.ndim - 2))), 1),
        both,
    )
    return Queue(items, queue.count + valid.sum(axis=1, dtype=jnp.int32))


def pop(queue: Queue) -> tuple[Queue, Transition, jax.Array]:
    """``(queue without its oldest items, those items [N, ...], underflow [N] bool)``."""
    first = jax.tree.map(lambda x: x[:, 0], queue.items)
    rest = jax.tree.map(lambda x: jnp.roll(x, -1, axis=1), queue.items)
    empty = queue.count == 0
    return Queue(rest, jnp.maximum(queue.count - 1, 0)), first, empty


def act_per_env(
    agent: Agent, agent_state: Any, obs: Any, carry: Any, key: PRNGKey
) -> tuple[jax.Array, Any, Any]:
    """``agent.act(agent_state, obs, carry, key, True)`` with each env's own key: ``act``
    of a batch of one (leaves ``[1, ...]``) vmapped over the ``N`` envs of ``obs`` and
    ``carry`` (leaves ``[N, ...]``) with ``jax.random.split(key, N)``, so that every
    exploration draw (noisy nets' parameter noise, epsilon-greedy's coin and action) is
    independent per env (module docstring). Returns ``act``'s outputs, leaves ``[N, ...]``."""
    num_envs = jax.tree.leaves(obs)[0].shape[0]
    one = lambda tree: jax.tree.map(lambda x: x[None], tree)

    def act(o: Any, c: Any, k: PRNGKey):
        outputs = agent.act(agent_state, one(o), one(c), k, True)
        return jax.tree.map(lambda x: x[0], outputs)

    return jax.vmap(act)(obs, carry, jax.random.split(key, num_envs))


def game_stats(done: jax.Array, info: dict[str, Any], underflow: jax.Array) -> dict:
    """One step's sums over the ``[N]`` envs of a game: ``episodes``, player 0's
    ``episode_return_sum``, ``episode_length_sum``, ``player_return_sum`` ``[P]`` (from
    ``info["episode_return"]`` ``[N, P]``, counted where ``done``) and ``underflows``."""
    returns = info["episode_return"]
    return {
        "episodes": done.sum(),
        "episode_return_sum": jnp.where(done, returns[:, 0], 0.0).sum(),
        "episode_length_sum": jnp.where(done, info["episode_length"], 0).sum(),
        "player_return_sum": jnp.where(done[:, None], returns, 0.0).sum(axis=0),
        "underflows": underflow.sum(),
    }


def check_self_play(agent: Agent, env: Env) -> None:
    """ConfigError unless ``env`` is a turn-based game and ``agent`` keeps no carry."""
    spec = env.spec
    if spec.num_players < 2 or not spec.turn_based:
        raise ConfigError(
            f"self-play needs a turn-based game of 2+ players; '{spec.name}' has "
            f"{spec.num_players} player(s){'' if spec.turn_based else ', simultaneous moves'}"
        )
    if jax.tree.leaves(agent.init_carry(1)):
        raise ConfigError("self-play takes agents without a per-env carry (dqn, rainbow)")


def _empty(env: Env, agent: Agent, agent_state: Any, obs: Any, player: jax.Array) -> Stitch:
    """A ``Stitch`` with nothing pending or queued, shaped like ``agent.act``'s outputs."""
    P = env.spec.num_players
    N = env.spec.num_envs
    carry = agent.init_carry(N)
    action, _, extras = jax.eval_shape(
        lambda s, o, c: agent.act(s, o, c, jax.random.PRNGKey(0), True), agent_state, obs, carry
    )
    pending, one = empty_pending(obs, action, extras, N, P)
    items = jax.tree.map(zeros_of((N, P + 1)), one)
    return Stitch(carry, player, pending, Queue(items, jnp.zeros((N,), jnp.int32)))


def zeros_of(lead: tuple[int, ...]):
    """``s -> zeros(lead + s.shape[1:])``: an array (or shape) with its env axis replaced."""
    return lambda s: jnp.zeros((*lead, *s.shape[1:]), s.dtype)


def empty_pending(
    obs: Any, action: Any, extras: Any, num_envs: int, num_players: int
) -> tuple[Pending, Transition]:
    """Nothing pending for any player (``[N, P, ...]`` zeros), and the shapes of one
    stitched ``Transition`` of ``[N, ...]`` (obs, act outputs of ``[N, ...]`` leaves)."""
    N, P = num_envs, num_players
    per_player = lambda tree: jax.tree.map(zeros_of((N, P)), tree)
    obs_shape = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), obs)
    pending = Pending(
        per_player(obs_shape),
        per_player(action),
        per_player(extras),
        jnp.zeros((N, P), jnp.float32),
        jnp.zeros((N, P), bool),
    )
    flag = jax.ShapeDtypeStruct((N,), jnp.dtype(bool))
    reward = jax.ShapeDtypeStruct((N,), jnp.dtype(jnp.float32))
    return pending, Transition(obs_shape, action, reward, obs_shape, flag, flag, extras)


def make_self_play_runner(
    agent: Agent, env: Env, config: RunConfig, eval_env: Env | None = None
) -> Runner:
    """The chunked self-play program (module docstring), a ``Runner`` like
    ``scan.make_runner``'s whose ``RunnerState.carry`` is a ``Stitch``.

    Metrics per iteration, besides the agent's: ``step``, ``episodes`` (games finished),
    ``episode_return_sum`` / ``episode_length_sum`` (player 0's return; moves),
    ``player{p}_return`` (mean over the iteration's games, NaN if none), ``underflows``
    (always 0, see the module docstring); on a chunk that evaluates, ``eval_return`` (the
    mean score against the random opponent; in a cooperative game, in self-play, also
    ``eval_self_return``) and ``eval_{win,draw,loss}_{opponent}``.
    """
    check_self_play(agent, env)
    P, N = env.spec.num_players, env.spec.num_envs
    layout = ChunkLayout.of(config, N)
    eval_env = eval_env or env
    matches = {name: make_match(agent, eval_env, opp) for name, opp in opponents(env).items()}
    headline = "self" if "self" in matches else "random"  # a cooperative game: self-play
    evaluate = matches[headline]
    initial_agent_carry = agent.init_carry(N)
    pool = scripted = None
    if config.opponent_pool or config.opponent_scripted:
        pool = opponent_pool.PoolLayout.of(
            config.opponent_pool,
            config.opponent_envs,
            config.opponent_every,
            layout.steps_per_iteration,
            N,
            P,
            config.opponent_scripted,
        )
    if config.opponent_pool:
        shapes = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
        if not hasattr(shapes, "params"):
            raise ConfigError("run.opponent_pool needs an agent whose state has 'params'")
    if config.opponent_scripted:
        scripted = opponents(env).get("scripted")
        if scripted is None:
            raise ConfigError(
                f"run.opponent_scripted needs a game with a scripted opponent "
                f"(connect_four, tic_tac_toe); '{env.spec.name}' has none"
            )

    def env_step(state: RunnerState, key: PRNGKey, emit: bool, opponent_params: Any = None):
        act_key, step_key = jax.random.split(key)
        carry: Stitch = state.carry
        action, agent_carry, extras = act_per_env(
            agent, state.agent_state, state.obs, carry.agent, act_key
        )
        if pool is not None and emit:  # pure self-play's keys stay as they were
            step_key, pool_key = jax.random.split(step_key)
            action = opponent_pool.act(
                pool,
                agent,
                state.agent_state,
                opponent_params,
                state.obs,
                carry.agent,
                carry.player,
                action,
                pool_key,
                act_per_env,
                scripted,
            )
        env_state, ts = env.step(state.env_state, action, step_key)
        done = ts.terminated | ts.truncated
        pending, completed, valid = stitch(
            carry.pending, state.obs, carry.player, action, extras, ts
        )
        queue = push(carry.queue, completed, valid)
        out, underflow = None, jnp.zeros((N,), bool)
        if emit:
            queue, out, underflow = pop(queue)
        agent_carry = jax.tree.map(
            lambda c, c0: jnp.where(done.reshape(-1, *([1] * (c.ndim - 1))), c0, c),
            agent_carry,
            initial_agent_carry,
        )
        carry = Stitch(agent_carry, ts.info["current_player"], pending, queue, carry.pool)
        state = dataclasses.replace(state, env_state=env_state, obs=ts.obs, carry=carry)
        return state, (out, game_stats(done, ts.info, underflow))

    def init(key: PRNGKey, hparams: Any = None) -> RunnerState:
        key, agent_key, env_key, warm_key = jax.random.split(key, 4)
        agent_state = agent.init(agent_key)
        if hparams is not None:
            agent_state = agent_state.replace(hparams=hparams)
        env_state, ts = env.reset(env_key)
        carry = _empty(env, agent, agent_state, ts.obs, ts.info["current_player"])
        if config.opponent_pool:
            carry = carry._replace(pool=opponent_pool.init(cast(Any, pool), agent_state.params))
        state = RunnerState(agent_state, env_state, ts.obs, carry, key, jnp.zeros((), jnp.int32))
        # P warm-up moves fill the queues (module docstring); nothing is learned from them.
        state, _ = jax.lax.scan(
            lambda s, k: env_step(s, k, False), state, jax.random.split(warm_key, P)
        )
        return state

    def iteration(state: RunnerState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        keys = jax.random.split(rollout_key, config.rollout_len)
        opponent_params = None
        if config.opponent_pool:
            layout = cast(opponent_pool.PoolLayout, pool)  # set with config.opponent_pool
            ring = opponent_pool.snapshot(layout, state.carry.pool, state.agent_state.params)
            opponent_params = opponent_pool.snapshot_params(layout, ring, state.agent_state.params)
            state = dataclasses.replace(state, carry=state.carry._replace(pool=ring))
        state, (rollout, stats) = jax.lax.scan(
            lambda s, k: env_step(s, k, True, opponent_params), state, keys
        )
        agent_state, agent_metrics = agent.update(state.agent_state, rollout, update_key)
        if config.opponent_pool:
            pool_state = state.carry.pool
            ring = dataclasses.replace(pool_state, iterations=pool_state.iterations + 1)
            state = dataclasses.replace(state, carry=state.carry._replace(pool=ring))
        stats = {k: v.sum(axis=0) for k, v in stats.items()}
        games = stats["episodes"]
        metrics = {k: stats[k] for k in ("episodes", "episode_return_sum", "episode_length_sum")}
        metrics["underflows"] = stats["underflows"].astype(jnp.float32)
        for p in range(P):
            mean = stats["player_return_sum"][p] / jnp.maximum(games, 1)
            metrics[f"player{p}_return"] = jnp.where(games > 0, mean, jnp.nan)
        metrics.update({k: jnp.asarray(v, jnp.float32) for k, v in agent_metrics.items()})
        return dataclasses.replace(state, agent_state=agent_state, key=key), metrics

    def evaluate_all(agent_state: Any, key: PRNGKey) -> dict[str, jax.Array]:
        rates = {}
        for name, match_key in zip(matches, jax.random.split(key, len(matches)), strict=True):
            scores = matches[name](agent_state, match_key)
            if name == headline:
                rates["eval_return"] = scores.mean()
            if name == "self":
                rates["eval_self_return"] = scores.mean()
            else:
                rates.update(outcome_rates(scores, name))
        return rates

    return scanned_runner(env, init, iteration, evaluate, evaluate_all, layout)
