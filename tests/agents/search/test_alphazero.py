"""AlphaZero's parts (agents/search): the search's policy on tic-tac-toe positions checked
by hand, the rebuilt pgx state against the env, and the replay's value targets (each
position's game outcome from its mover's view) against a NumPy reference of whole games."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pgx")
pytest.importorskip("mctx")

from jaxrl import agents, envs  # noqa: E402
from jaxrl.agents.search import mcts, replay  # noqa: E402
from jaxrl.agents.search.alphazero import add_rollout  # noqa: E402
from jaxrl.envs import games  # noqa: E402
from jaxrl.types import ACTION_MASK, OBS, ConfigError, Transition  # noqa: E402

TTT = games.TIC_TAC_TOE


def board(mine, theirs):
    """Tic-tac-toe obs of one board seen by the player to move (cells row-major)."""
    planes = np.zeros((3, 3, 2), np.float32)
    for c in mine:
        planes[c // 3, c % 3, 0] = 1
    for c in theirs:
        planes[c // 3, c % 3, 1] = 1
    return planes


# By hand: the mover holds 0 and 1 and wins at 2; the opponent holds 3 and 4 and wins at 5
# unless blocked (the mover's 0 and 8 make no line with the opponent on 4).
WIN = (board([0, 1], [3, 4]), 2)
BLOCK = (board([0, 8], [3, 4]), 5)


def uniform_network(params, obs):
    """Priors uniform, value 0: what the search finds comes from the rules alone."""
    del params
    return jnp.zeros((obs.shape[0], 9)), jnp.zeros((obs.shape[0],))


@functools.cache
def searched(kind):
    planes = jnp.asarray(np.stack([WIN[0], BLOCK[0]]))
    obs = {OBS: planes, ACTION_MASK: planes.sum(-1).reshape(2, 9) == 0}
    options = mcts.SearchOptions(
        num_simulations=128,
        dirichlet_alpha=0.3,
        dirichlet_fraction=0.25,
        temperature=1.0,
        max_considered=9,
    )
    env = games.pgx_env(TTT)
    run = jax.jit(
        lambda o, k: mcts.search(
            options,
            kind,
            env,
            uniform_network,
            None,
            games.pgx_state(TTT, env, o),
            o[OBS],
            o[ACTION_MASK],
            k,
            False,
        )
    )
    action, policy = run(obs, jax.random.PRNGKey(0))
    return np.asarray(obs[ACTION_MASK]), np.asarray(action), np.asarray(policy)


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_search_policy_puts_most_mass_on_the_win_and_the_block(kind):
    mask, action, policy = searched(kind)
    for i, (_, move) in enumerate([WIN, BLOCK]):
        assert action[i] == move
        assert policy[i].argmax() == move
        assert policy[i, move] > 0.5, policy[i]
        assert np.all(policy[i][~mask[i]] == 0)  # occupied cells get nothing
        np.testing.assert_allclose(policy[i].sum(), 1.0, rtol=1e-5)


def test_pgx_state_rebuilt_from_obs_steps_like_the_env():
    """From each observed position, pgx's step of the rebuilt state gives the env's next
    observation, the mover's reward and the end of the game (connect four, random play)."""
    env = envs.make("connect_four", num_envs=4)
    pgx_env = games.pgx_env(games.CONNECT_FOUR)
    model = jax.jit(
        lambda o, a: jax.vmap(pgx_env.step)(games.pgx_state(games.CONNECT_FOUR, pgx_env, o), a)
    )
    step = jax.jit(env.step)
    state, ts = jax.jit(env.reset)(jax.random.PRNGKey(3))
    ended = 0
    for i in range(30):
        action = games.random_action(ts.obs, jax.random.PRNGKey(100 + i))
        mover = np.asarray(ts.info["current_player"])
        predicted = model(ts.obs, action)
        state, ts = step(state, action, jax.random.PRNGKey(i))
        done = np.asarray(ts.terminated)
        final = np.asarray(ts.info["final_obs"][OBS])
        np.testing.assert_array_equal(np.asarray(predicted.observation), final > 0.5)
        np.testing.assert_array_equal(np.asarray(predicted.terminated), done)
        reward = np.asarray(ts.reward)[np.arange(4), mover]
        np.testing.assert_array_equal(np.asarray(predicted.rewards)[:, 0], reward)
        ended += done.sum()
    assert ended > 0  # some games ended on the way


def stream(rng, length):
    """One env's stitched stream (runners/games/self_play.py's order) of random games:
    per game of ``L`` moves (move ``k`` by seat ``(first + k) % 2``) the mid transitions of
    moves 0..L-3, then the final transitions of seats 0 and 1; each item is ``(moves
    made, done, reward, true outcome for its mover, game index)``."""
    items, game = [], 0
    while len(items) < length:
        moves = int(rng.integers(5, 10))
        first = int(rng.integers(2))
        winner = int(rng.integers(-1, 2))  # -1: a draw, else the winning seat
        outcome = lambda seat, w=winner: 0.0 if w < 0 else (1.0 if seat == w else -1.0)
        for k in range(moves - 2):
            items.append((k, False, 0.0, outcome((first + k) % 2), game))
        for seat in (0, 1):  # each seat's last move: moves - 1 or moves - 2
            k = moves - 1 if (first + moves - 1) % 2 == seat else moves - 2
            items.append((k, True, outcome(seat), outcome(seat), game))
        game += 1
    return items[:length]


def test_replay_value_targets_are_each_movers_game_outcome():
    rng = np.random.default_rng(0)
    T, N, steps = 4, 3, 12
    streams = [stream(rng, T * steps) for _ in range(N)]
    policies = rng.random((T * steps, N, 9)).astype(np.float32)
    cells = np.arange(9)
    buffer = replay.init({OBS: jnp.zeros((3, 3, 2)), ACTION_MASK: jnp.zeros(9, bool)}, 9, 1000)
    add = jax.jit(lambda b, r: add_rollout(TTT, b, r))
    for s in range(steps):
        ts = range(s * T, (s + 1) * T)
        made = np.array([[streams[e][t][0] for e in range(N)] for t in ts])
        planes = np.zeros((T, N, 3, 3, 2), np.float32)  # ``made`` pieces on each board
        planes[..., 0] = (cells < made[..., None]).reshape(T, N, 3, 3)
        obs = {OBS: jnp.asarray(planes), ACTION_MASK: jnp.zeros((T, N, 9), bool)}
        field = lambda i, dtype, ts=ts: jnp.asarray(
            [[streams[e][t][i] for e in range(N)] for t in ts], dtype
        )
        rollout = Transition(
            obs,
            jnp.zeros((T, N), jnp.int32),
            field(2, jnp.float32),
            obs,
            field(1, bool),
            jnp.zeros((T, N), bool),
            {"policy": jnp.asarray(policies[s * T : (s + 1) * T])},
        )
        buffer = add(buffer, rollout)
    # The NumPy reference: row t * N + e holds item t of env e; its target is the true
    # outcome once a final transition of its game has been handed over, else not ready.
    for t in range(T * steps):
        for e in range(N):
            row = t * N + e
            _, _, _, truth, game = streams[e][t]
            over = any(d and g == game for _, d, _, _, g in streams[e][: T * steps])
            assert bool(buffer.ready[row]) == over, (t, e)
            if over:
                assert float(buffer.value[row]) == truth, (t, e)
            np.testing.assert_array_equal(np.asarray(buffer.policy[row]), policies[t, e])
    obs, _, value = replay.sample(buffer, jax.random.PRNGKey(0), 256)
    assert set(np.asarray(value).tolist()) <= {-1.0, 0.0, 1.0}
    assert int(buffer.size) == T * steps * N


def test_alphazero_needs_a_game_with_legal_moves_and_rules():
    with pytest.raises(ConfigError, match="has no legal-action mask"):
        agents.make("alphazero", envs.make("CartPole-v1").spec)


def test_greedy_act_searches_eval_simulations():
    """PUCT's policy is the root's visit counts over the simulations run: training moves
    search ``num_simulations`` (counts in 1/4), greedy ones ``eval_simulations`` (in 1/96:
    the win gets nearly all of them)."""
    spec = envs.make("tic_tac_toe", num_envs=1).spec
    agent = agents.make("alphazero", spec, num_simulations=4, eval_simulations=96, blocks=0)
    state = agent.init(jax.random.PRNGKey(0))
    planes = jnp.asarray(WIN[0])[None]
    obs = {OBS: planes, ACTION_MASK: planes.sum(-1).reshape(1, 9) == 0}
    for explore, sims in [(True, 4), (False, 96)]:
        act = jax.jit(functools.partial(agent.act, explore=explore))
        _, _, extras = act(state, obs, None, jax.random.PRNGKey(1))
        visits = np.asarray(extras["policy"])[0] * sims
        np.testing.assert_allclose(visits, np.round(visits), atol=1e-3)
        assert round(visits.sum()) == sims
    assert visits[WIN[1]] > 48
