"""Two-player turn-based board games from pgx (Koyamada et al. 2023, "Pgx: Hardware-
Accelerated Parallel Game Simulators for Reinforcement Learning"), as vectorized,
auto-resetting jaxrl envs (optional extra ``jaxrl[games]``, pgx 2.6.0).

``tic_tac_toe`` (3x3, three in a row, 9 actions) and ``connect_four`` (6 rows x 7
columns, four in a row, 7 actions: the column to drop a piece into). Both follow the
multi-player contract of ``jaxrl.types``:

* ``EnvSpec.num_players == 2``, ``turn_based == True``; one action ``[N]`` int32 per step,
  played by the player to move, ``info["current_player"]`` ``[N]`` int32 (0 or 1).
* ``obs = {"obs": float32 [N, H, W, 2], "action_mask": bool [N, A]}``: plane 0 holds the
  pieces of the player to move, plane 1 the opponent's (pgx's observation, seen by the
  player to move), so one network plays either side.
* ``reward`` ``[N, 2]`` float32, indexed by player: +1 to the winner and -1 to the loser
  on the step that ends the game, 0 otherwise (a draw is 0 for both).
* pgx draws which player moves first at every reset; an illegal move loses at once
  (pgx's rule; the agents of jaxrl honour the mask, so it never happens to them).
* ``info["episode_return"]`` ``[N, 2]`` per player, ``info["episode_length"]`` ``[N]``
  moves of both players; the time limit is the longest possible game, so games end by
  termination only.

``scripted_action`` is the fixed opponent "win if it can, block if it must, else random"
over the same observation, computed from the board planes (``wins``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.envs.core import close_episodes, fresh_episodes, turn_based_spec, where_done
from jaxrl.types import ACTION_MASK, OBS, Array, Env, PRNGKey, TimeStep
from jaxrl.validation import check_int

NUM_PLAYERS = 2


class Game(NamedTuple):
    """What the scripted opponent and the env need to know of a board game.

    ``pgx_id``: pgx's name; ``rows``/``cols``: board size; ``line``: pieces in a row that
    win; ``gravity``: an action is a column and the piece falls to its lowest empty row
    (row ``rows - 1`` is the bottom), else an action is the cell ``row * cols + col``.
    """

    name: str
    pgx_id: str
    rows: int
    cols: int
    line: int
    gravity: bool

    @property
    def num_actions(self) -> int:
        return self.cols if self.gravity else self.rows * self.cols


TIC_TAC_TOE = Game("tic_tac_toe", "tic_tac_toe", 3, 3, 3, False)
CONNECT_FOUR = Game("connect_four", "connect_four", 6, 7, 4, True)
GAMES = {g.name: g for g in (TIC_TAC_TOE, CONNECT_FOUR)}


class GameEnvState(NamedTuple):
    """``core``: pgx's batched ``State``; ``episode_return`` ``[N, 2]`` float32 and
    ``episode_length`` ``[N]`` int32 of the current games so far."""

    core: Any
    episode_return: Array
    episode_length: Array


def make_game_env(game: Game, num_envs: int) -> Env:
    """The vectorized env of ``game`` with ``num_envs`` boards (module docstring)."""
    import pgx  # the optional extra: imported on first use

    num_envs = check_int("num_envs", num_envs)
    pgx_env = pgx.make(game.pgx_id)
    max_len = game.rows * game.cols
    obs_shape = (game.rows, game.cols, 2)
    spec = turn_based_spec(game.name, obs_shape, game.num_actions, num_envs, max_len, NUM_PLAYERS)
    v_init, v_step = jax.vmap(pgx_env.init), jax.vmap(pgx_env.step)

    def observe(core: Any) -> dict[str, Array]:
        return {OBS: core.observation.astype(jnp.float32), ACTION_MASK: core.legal_action_mask}

    def reset(key: PRNGKey) -> tuple[GameEnvState, TimeStep]:
        core = v_init(jax.random.split(key, num_envs))
        obs = observe(core)
        returns, lengths, false = fresh_episodes(num_envs, NUM_PLAYERS)
        info = {
            "final_obs": obs,
            "episode_return": returns,
            "episode_length": lengths,
            "current_player": core.current_player.astype(jnp.int32),
        }
        return GameEnvState(core, returns, lengths), TimeStep(obs, returns, false, false, info)

    def step(state: GameEnvState, action: Array, key: PRNGKey) -> tuple[GameEnvState, TimeStep]:
        if jnp.shape(action) != (num_envs,):
            raise ValueError(f"{game.name}: expected actions of shape ({num_envs},)")
        keys = jax.random.split(key, 2 * num_envs)
        core = v_step(state.core, action.astype(jnp.int32), keys[:num_envs])
        reward = core.rewards.astype(jnp.float32)
        ep_return = state.episode_return + reward
        ep_length = state.episode_length + 1
        terminated = core.terminated
        truncated = ~terminated & (core.truncated | (ep_length >= max_len))
        done = terminated | truncated
        final_obs = observe(core)
        core = where_done(done, v_init(keys[num_envs:]), core)
        stats, ep_return, ep_length = close_episodes(done, ep_return, ep_length)
        player = core.current_player.astype(jnp.int32)
        info = {"final_obs": final_obs, **stats, "current_player": player}
        new_state = GameEnvState(core, ep_return, ep_length)
        return new_state, TimeStep(observe(core), reward, terminated, truncated, info)

    return Env(spec=spec, reset=reset, step=step)


def tic_tac_toe(num_envs: int = 1) -> Env:
    """Tic-tac-toe (pgx ``tic_tac_toe``): obs ``[3, 3, 2]``, Discrete(9), 2 players."""
    return make_game_env(TIC_TAC_TOE, num_envs)


def connect_four(num_envs: int = 1) -> Env:
    """Connect Four (pgx ``connect_four``): obs ``[6, 7, 2]``, Discrete(7), 2 players."""
    return make_game_env(CONNECT_FOUR, num_envs)


# ------------------------------------------------------------------ scripted opponent
def has_line(board: Array, line: int) -> Array:
    """Whether bool ``board`` ``[H, W]`` holds ``line`` True cells in a row, column or
    diagonal (bool scalar)."""
    H, W = board.shape
    found = jnp.zeros((), bool)
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        h, w = H - dr * (line - 1), W - abs(dc) * (line - 1)
        if h <= 0 or w <= 0:
            continue
        run = jnp.ones((h, w), bool)
        for i in range(line):
            c0 = i * dc if dc >= 0 else (line - 1 - i)
            run &= board[i * dr : i * dr + h, c0 : c0 + w]
        found |= run.any()
    return found


def place(game: Game, planes: Array, action: Array) -> Array:
    """Bool ``[H, W]``: the cell a piece played by ``action`` lands in on ``planes``
    ``[H, W, 2]`` (all False if the column or cell is full)."""
    occupied = planes.any(-1)
    if game.gravity:
        rows = jnp.arange(game.rows)
        empty = ~occupied[:, action]
        lowest = jnp.max(jnp.where(empty, rows, -1))
        col = jnp.arange(game.cols) == action
        return (rows[:, None] == lowest) & col[None, :] & empty.any()
    cell = jnp.arange(game.rows * game.cols).reshape(game.rows, game.cols) == action
    return cell & ~occupied


def wins(game: Game, planes: Array, plane: int) -> Array:
    """Bool ``[A]``: which actions would complete a line for the pieces of ``plane``
    (0: the player to move, 1: the opponent) on one board ``planes`` ``[H, W, 2]``."""
    own = planes[..., plane] > 0.5

    def after(action: Array) -> Array:
        cell = place(game, planes > 0.5, action)
        return cell.any() & has_line(own | cell, game.line)

    return jax.vmap(after)(jnp.arange(game.num_actions))


@functools.partial(jax.jit, static_argnums=0)
def scripted_action(game: Game, obs: dict[str, Array], key: PRNGKey) -> Array:
    """The fixed opponent of ``obs`` ``[N, ...]``: an action that wins at once if there is
    one, else one that blocks an immediate win of the opponent, else uniform among legal
    actions (ties broken uniformly); int32 ``[N]``."""
    mask = obs[ACTION_MASK]
    win = jax.vmap(lambda p: wins(game, p, 0))(obs[OBS]) & mask
    block = jax.vmap(lambda p: wins(game, p, 1))(obs[OBS]) & mask
    choice = jnp.where(
        win.any(-1, keepdims=True), win, jnp.where(block.any(-1, keepdims=True), block, mask)
    )
    logits = jnp.where(choice, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def random_action(obs: dict[str, Array], key: PRNGKey) -> Array:
    """Uniform among the legal actions of ``obs`` ``[N, ...]``; int32 ``[N]``."""
    logits = jnp.where(obs[ACTION_MASK], 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


# ------------------------------------------------------------------ the rules, for search
def pgx_env(game: Game) -> Any:
    """pgx's own env of ``game`` (``init`` / ``step`` of one board), the rules that a
    search agent (``agents/search``) steps inside its tree. Call it outside any jit trace
    (pgx builds arrays when it first imports a game's module)."""
    import pgx  # the optional extra: imported on first use

    return pgx.make(game.pgx_id)


def moves_made(game: Game, obs: dict[str, Array]) -> Array:
    """int32 ``[N]``: the moves made so far on the boards of ``obs`` (its pieces: one per
    move in both games)."""
    del game
    return jnp.round(obs[OBS].reshape(obs[OBS].shape[0], -1).sum(-1)).astype(jnp.int32)


def pgx_state(game: Game, env: Any, obs: dict[str, Array]) -> Any:
    """pgx's batched ``State`` (of ``env = pgx_env(game)``) of the boards of ``obs``
    ``[N, ...]``, rebuilt from the
    planes of the player to move (a board game's observation is its whole position): the
    player to move is pgx's player 0 with colour 0, the game is not over, and
    ``_step_count`` is ``moves_made``. Stepping it with ``env.step`` plays the
    game on from there; its rewards are indexed by that player numbering."""
    planes = obs[OBS] > 0.5
    n = planes.shape[0]
    board = jnp.where(planes[..., 0], 0, jnp.where(planes[..., 1], 1, -1)).reshape(n, -1)
    template = env.init(jax.random.PRNGKey(0))
    zeros = jnp.zeros((n,), jnp.int32)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *jnp.shape(x))), template)
    core = batch._x._replace(color=zeros, board=board.astype(jnp.int32), winner=zeros - 1)
    return batch.replace(
        current_player=zeros,
        observation=planes,
        legal_action_mask=obs[ACTION_MASK],
        _step_count=moves_made(game, obs),
        _x=core,
    )
