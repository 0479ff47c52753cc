"""pgx board games as jaxrl envs: the multi-player contract (spec, [N, 2] rewards,
current player, masks, auto-reset) on hand-written move sequences, and the scripted
opponent's win/block detection against a NumPy reference."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pgx")

from jaxrl import envs  # noqa: E402
from jaxrl.envs import games  # noqa: E402
from jaxrl.types import ACTION_MASK, OBS  # noqa: E402


@functools.cache
def compiled(name):
    env = envs.make(name, num_envs=2)  # one compile per game, shared by the tests
    return env, jax.jit(env.reset), jax.jit(env.step)


def play(name, moves, seed=0):
    """Plays ``moves`` (one action per step, the same in both envs); returns the env,
    the first player ``[2]`` and the timesteps after reset and after each move."""
    env, reset, step = compiled(name)
    num_envs = env.spec.num_envs
    state, ts = reset(jax.random.PRNGKey(seed))
    first = np.asarray(ts.info["current_player"])
    out = [ts]
    for i, a in enumerate(moves):
        state, ts = step(state, jnp.full((num_envs,), a, jnp.int32), jax.random.PRNGKey(i))
        out.append(jax.device_get(ts))
    return env, first, out


def test_tic_tac_toe_win_rewards_turns_and_reset():
    # X (first mover) takes the top row: 0, 1, 2 against O's 3, 4.
    env, first, out = play("tic_tac_toe", [0, 3, 1, 4, 2])
    spec = env.spec
    assert (spec.num_players, spec.turn_based, spec.action_space.n) == (2, True, 9)
    assert spec.obs_spec[OBS].shape == (3, 3, 2) and spec.has_action_mask
    for t, ts in enumerate(out[1:-1], start=1):
        expected_player = (first + t) % 2
        np.testing.assert_array_equal(ts.info["current_player"], expected_player)
        assert not ts.terminated.any() and (ts.reward == 0).all()
    # The mask after 0, 3, 1, 4: those four cells are illegal.
    mask = np.asarray(out[4].obs[ACTION_MASK][0])
    np.testing.assert_array_equal(np.flatnonzero(~mask), [0, 1, 3, 4])
    # Plane 0 is the player to move: X after four moves (0, 1); plane 1 O's 3, 4; after
    # a fifth move, O to move sees its own 3, 4 in plane 0.
    planes = np.asarray(out[4].obs[OBS][0])
    np.testing.assert_array_equal(np.flatnonzero(planes[..., 0]), [0, 1])
    np.testing.assert_array_equal(np.flatnonzero(planes[..., 1]), [3, 4])
    planes = np.asarray(out[3].obs[OBS][0])
    np.testing.assert_array_equal(np.flatnonzero(planes[..., 0]), [3])
    np.testing.assert_array_equal(np.flatnonzero(planes[..., 1]), [0, 1])
    last = out[-1]
    assert last.terminated.all() and not last.truncated.any()
    expected = np.zeros((2, 2), np.float32)
    expected[np.arange(2), first] = 1.0
    expected[np.arange(2), 1 - first] = -1.0
    np.testing.assert_array_equal(last.reward, expected)
    np.testing.assert_array_equal(last.info["episode_return"], expected)
    np.testing.assert_array_equal(last.info["episode_length"], [5, 5])
    # final_obs shows the full row; obs is already a fresh empty board.
    np.testing.assert_array_equal(np.asarray(last.info["final_obs"][OBS]).sum((1, 2, 3)), [5, 5])
    assert np.asarray(last.obs[OBS]).sum() == 0 and np.asarray(last.obs[ACTION_MASK]).all()


def test_tic_tac_toe_draw():
    # X: 0 1 5 6 8, O: 2 3 4 7 -> a full board without a line.
    _, _, out = play("tic_tac_toe", [0, 2, 1, 3, 5, 4, 6, 7, 8])
    assert all(not ts.terminated.any() for ts in out[1:-1])
    assert out[-1].terminated.all()
    np.testing.assert_array_equal(out[-1].reward, np.zeros((2, 2)))
    np.testing.assert_array_equal(out[-1].info["episode_length"], [9, 9])


def test_connect_four_vertical_win_full_column_and_illegal_move():
    # First mover drops in column 3 four times, the other in column 0: a vertical four.
    _, first, out = play("connect_four", [3, 0, 3, 0, 3, 0, 3], seed=1)
    assert out[-1].terminated.all()
    winner = np.asarray(first)
    np.testing.assert_array_equal(out[-1].reward[np.arange(2), winner], [1.0, 1.0])
    np.testing.assert_array_equal(out[-1].reward[np.arange(2), 1 - winner], [-1.0, -1.0])
    # Column 0 filled by alternating pieces: illegal after six; a seventh move there loses.
    _, first, out = play("connect_four", [0] * 7, seed=2)
    mask = np.asarray(out[6].obs[ACTION_MASK])
    np.testing.assert_array_equal(mask, [[False] + [True] * 6] * 2)
    assert not any(ts.terminated.any() for ts in out[1:7])
    mover = (first + 6) % 2
    assert out[7].terminated.all()
    np.testing.assert_array_equal(out[7].reward[np.arange(2), mover], [-1.0, -1.0])
    np.testing.assert_array_equal(out[7].reward[np.arange(2), 1 - mover], [1.0, 1.0])


def np_wins(board_me, board_opp, line, gravity, plane):
    """NumPy reference: actions completing ``line`` in a row for ``plane``'s pieces."""
    H, W = board_me.shape
    own = board_me if plane == 0 else board_opp
    occupied = board_me | board_opp
    result = []
    for a in range(W if gravity else H * W):
        if gravity:
            empty = [r for r in range(H) if not occupied[r, a]]
            if not empty:
                result.append(False)
                continue
            cell = (max(empty), a)
        else:
            cell = divmod(a, W)
            if occupied[cell]:
                result.append(False)
                continue
        b = own.copy()
        b[cell] = True
        found = False
        for r, c, (dr, dc) in itertools.product(
            range(H), range(W), [(0, 1), (1, 0), (1, 1), (1, -1)]
        ):
            cells = [(r + i * dr, c + i * dc) for i in range(line)]
            if all(0 <= y < H and 0 <= x < W and b[y, x] for y, x in cells):
                found = True
        result.append(found)
    return np.array(result)


@pytest.mark.parametrize("game", [games.TIC_TAC_TOE, games.CONNECT_FOUR])
def test_wins_and_scripted_against_numpy(game):
    rng = np.random.default_rng(0)
    count = 48
    boards = np.zeros((count, game.rows, game.cols, 2), np.float32)
    for n in range(count):  # random positions reached by legal play
        for k in range(rng.integers(3, game.rows * game.cols // 2)):
            occupied = boards[n].any(-1)
            if game.gravity:
                cols = [c for c in range(game.cols) if not occupied[0, c]]
                c = rng.choice(cols)
                r = max(r for r in range(game.rows) if not occupied[r, c])
            else:
                r, c = divmod(rng.choice(np.flatnonzero(~occupied.ravel())), game.cols)
            boards[n, r, c, (k + n) % 2] = 1.0
    wins = jax.jit(
        jax.vmap(lambda p, i: games.wins(game, p, i), in_axes=(0, None)), static_argnums=1
    )
    for plane in (0, 1):
        got = np.asarray(wins(jnp.asarray(boards), plane))
        for n in range(count):
            ref = np_wins(
                boards[n, ..., 0] > 0, boards[n, ..., 1] > 0, game.line, game.gravity, plane
            )
            np.testing.assert_array_equal(got[n], ref)
    # The scripted choice: a win where one exists, else a block, else any legal action.
    occupied = boards.any(-1)
    mask = ~occupied[:, 0, :] if game.gravity else ~occupied.reshape(count, -1)
    obs = {OBS: jnp.asarray(boards), ACTION_MASK: jnp.asarray(mask)}
    win0, win1 = (np.asarray(wins(jnp.asarray(boards), p)) & mask for p in (0, 1))
    assert win0.any() and (win1.any(-1) & ~win0.any(-1)).any()  # both cases occur
    for seed in range(3):
        action = np.asarray(games.scripted_action(game, obs, jax.random.PRNGKey(seed)))
        for n in range(count):
            allowed = win0[n] if win0[n].any() else win1[n] if win1[n].any() else mask[n]
            assert allowed[action[n]]


def pettingzoo_game(rng):
    """A random legal game of PettingZoo's connect_four_v3: per move, the column, the
    mask and board planes seen by the player to move before it, and the rewards
    ``[first mover, second mover]`` after the last move."""
    connect_four_v3 = pytest.importorskip("pettingzoo.classic.connect_four_v3")
    env = connect_four_v3.env()
    env.reset(seed=int(rng.integers(1 << 30)))
    moves, masks, planes = [], [], []
    while True:
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        mask = obs["action_mask"].astype(bool)
        moves.append(int(rng.choice(np.flatnonzero(mask))))
        masks.append(mask)
        planes.append(obs["observation"].astype(np.float32))
        env.step(moves[-1])
    rewards = [env.rewards["player_0"], env.rewards["player_1"]]
    return moves, masks, planes, rewards


def test_connect_four_agrees_with_pettingzoo():
    rng = np.random.default_rng(0)
    for game in range(6):
        moves, masks, planes, rewards = pettingzoo_game(rng)
        _, first, out = play("connect_four", moves, seed=game)
        for t in range(len(moves)):
            np.testing.assert_array_equal(np.asarray(out[t].obs[ACTION_MASK][0]), masks[t])
            np.testing.assert_array_equal(np.asarray(out[t].obs[OBS][0]), planes[t])
            if t > 0:
                assert not out[t].terminated.any()
        last = out[len(moves)]
        assert last.terminated.all()
        by_seat = last.reward[0, [first[0], 1 - first[0]]]  # [first mover, second mover]
        np.testing.assert_array_equal(by_seat, rewards)
