"""The self-play runner: stitched transitions of a scripted two-player game against a
hand-written reference (the final transition of the player who did not move last
included), the queue never running dry, fixed-opponent matches, and vmap over seeds
giving the members of separate runs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import RunConfig
from jaxrl.runners.games.matches import make_match, outcome_rates
from jaxrl.runners.games.self_play import check_self_play, make_self_play_runner
from jaxrl.types import OBS, Agent, ConfigError
from tests.runners.games.scripted_game import (
    MOVES,
    N,
    make_game,
    one_coin_agent,
    recording_agent,
    reference_stream,
    summing_random_agent,
)


@pytest.fixture(scope="module")
def recorded():
    env = make_game()
    rollout_len = 7
    per_chunk = rollout_len * N  # one iteration per chunk: the recorder sees all of it
    config = RunConfig(
        steps=2 * per_chunk, rollout_len=rollout_len, log_every=per_chunk, eval_every=0
    )
    agent = recording_agent(env, rollout_len)
    runner = make_self_play_runner(agent, env, config)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(runner.run_chunk)
    rollouts, metrics = [], []
    for _ in range(2):
        state, m = run_chunk(state)
        rollouts.append(jax.device_get(state.agent_state.rollout))
        metrics.append(jax.device_get(m))
    return rollouts, metrics


def test_stitched_transitions_equal_reference(recorded):
    rollouts, metrics = recorded
    obs, action, reward, next_obs, terminated, truncated, extras = _columns(rollouts)
    for e in range(N):
        ref = reference_stream(e, obs.shape[0])
        for t, (o, a, r, o2, term) in enumerate(ref):
            where = f"env {e}, transition {t}"
            np.testing.assert_array_equal(obs[t, e], o, err_msg=where)
            assert action[t, e] == a, where
            assert reward[t, e] == r, where
            np.testing.assert_array_equal(next_obs[t, e], o2, err_msg=where)
            assert terminated[t, e] == term and not truncated[t, e], where
            assert extras[t, e] == o[0] * 10 + o[1], where  # act's extras travel along
    for m in metrics:
        assert m["underflows"].sum() == 0
        # Player returns of finished games: 1 + 3 + 1000 (a0 + a2) + 200 for player 0.
        assert np.isfinite(m["player1_return"]).any()


def seat_scores(acts):
    """Game 0's score of each env's seat (env ``e``: player ``e % 2``), ``acts[e]`` the
    actions played at its moves: player 0 gets moves 0 and 2 and 200 from move 1; player 1
    gets move 1 and 100 + 300 from moves 0 and 2."""
    return [
        1 + 1000 * a[0] + 200 + 3 + 1000 * a[2] if e % 2 == 0 else 100 + 2 + 1000 * a[1] + 300
        for e, a in enumerate(acts)
    ]


def _columns(rollouts):
    """Concatenate the recorded rollouts over time: obs/next_obs main arrays and the
    other fields, each ``[T_total, N, ...]``."""
    cat = lambda f: np.concatenate([f(r) for r in rollouts])
    return (
        cat(lambda r: r[0][OBS]),
        cat(lambda r: r[1]),
        cat(lambda r: r[2]),
        cat(lambda r: r[3][OBS]),
        cat(lambda r: r[4]),
        cat(lambda r: r[5]),
        cat(lambda r: r[6]["tag"]),
    )


def test_match_scores_seats():
    env = make_game(num_envs=4)
    agent = recording_agent(env, 1)
    first = lambda obs, key: jnp.zeros(obs[OBS].shape[0], jnp.int32)
    scores = jax.jit(make_match(agent, env, first))(None, jax.random.PRNGKey(0))
    # Seat e % 2. The agent's action in env e at move t (game 0) is (t + e) % 2; the
    # opponent plays 0.
    acts = [[(t + e) % 2 if t % 2 == e % 2 else 0 for t in range(MOVES)] for e in range(4)]
    np.testing.assert_array_equal(np.asarray(scores), seat_scores(acts))


def test_self_match_plays_the_agent_in_every_seat():
    """``make_match(..., None)`` (a cooperative game's evaluation): the agent moves in
    both seats; a score is the seat's return (hand-computed as above, the agent's actions
    at every move)."""
    env = make_game(num_envs=4)
    scores = jax.jit(make_match(recording_agent(env, 1), env, None))(None, jax.random.PRNGKey(0))
    acts = [[(t + e) % 2 for t in range(MOVES)] for e in range(4)]
    np.testing.assert_array_equal(np.asarray(scores), seat_scores(acts))


def test_vmap_over_seeds_equals_separate_runs():
    env = make_game()
    config = RunConfig(steps=4 * N, rollout_len=4, log_every=4 * N, eval_every=0)

    agent = summing_random_agent()
    runner = make_self_play_runner(agent, env, config)
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    batched = batch_runner(runner)
    state, _ = jax.jit(batched.run_chunk)(jax.jit(batched.init)(keys))
    single = jax.jit(lambda k: runner.run_chunk(runner.init(k))[0].agent_state.rollout)
    separate = [float(single(k)) for k in keys]
    np.testing.assert_array_equal(np.asarray(state.agent_state.rollout), separate)
    assert len(set(separate)) > 1  # the members differ


def test_each_env_explores_with_its_own_key():
    """An agent that draws one exploration sample per ``act`` call (as noisy nets draw one
    parameter noise per forward pass) still explores each env on its own: ``act`` runs per
    env with the env's own key. Acting on the whole batch made every env take the same
    action at every step (identical games in every env)."""
    env = make_game(num_envs=8)
    config = RunConfig(steps=4 * 8, rollout_len=4, log_every=4 * 8, eval_every=0)
    runner = make_self_play_runner(one_coin_agent(4, 8), env, config)
    state, _ = jax.jit(runner.run_chunk)(jax.jit(runner.init)(jax.random.PRNGKey(0)))
    actions = np.asarray(state.agent_state.rollout)  # [4 steps, 8 envs], stitched
    assert all(len(set(row)) == 2 for row in actions)  # both actions at every step


def test_connect_four_self_play_games_differ_between_envs():
    """Noisy-net Rainbow self-play on Connect Four: the 8 envs start together from the same
    empty board, yet play different games (the bug: every env played one game, 2% of the
    replay's states distinct)."""
    from jaxrl import agents, envs

    env = envs.make("connect_four", num_envs=8)
    options = dict(hidden_sizes=[16], torso="mlp", n_step=1, learning_starts=10**6)
    small = dict(prioritized=False, distributional=False, dueling=False, double=False)
    agent = agents.make("rainbow", env.spec, **options, **small, buffer_size=8 * 16)
    config = RunConfig(steps=16 * 8, rollout_len=16, log_every=16 * 8, eval_every=0)
    runner = make_self_play_runner(agent, env, config)
    state, _ = jax.jit(runner.run_chunk)(jax.jit(runner.init)(jax.random.PRNGKey(0)))
    buffer = state.agent_state.buffer  # uniform replay: leaves [rows, envs, ...]
    boards = np.asarray(buffer.data.obs[OBS])  # [16, 8, 6, 7, 2]
    distinct = {boards[-1, e].tobytes() for e in range(8)}
    assert len(distinct) >= 6, len(distinct)  # after 16 moves of each env


def test_sweep_members_equal_separate_runs():
    """``--self-play --sweep``: DQN self-play on tic-tac-toe with two learning rates as one
    vmapped program (``batch_runner``, hparams per member) gives each member's separate
    run (same seed, that learning rate); the two members differ."""
    from jaxrl import agents, envs

    env = envs.make("tic_tac_toe", num_envs=4)
    agent = agents.make(
        "dqn", env.spec, hidden_sizes=[8], learning_starts=16, batch_size=8, buffer_size=64
    )
    config = RunConfig(steps=4 * 4 * 4, rollout_len=4, log_every=4 * 4 * 4, eval_every=0)
    runner = make_self_play_runner(agent, env, config)
    key = jax.random.PRNGKey(5)
    base = agent.init(key).hparams
    hparams = [base.replace(lr=jnp.float32(lr)) for lr in (3e-2, 1e-3)]
    batched = batch_runner(runner)
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *hparams)
    state, _ = jax.jit(lambda k, h: batched.run_chunk(batched.init(k, h)))(
        jnp.stack([key, key]), stacked
    )
    run = jax.jit(lambda h: runner.run_chunk(runner.init(key, h))[0].agent_state.params)
    for member, h in enumerate(hparams):
        separate = jax.tree.leaves(run(h))
        together = [x[member] for x in jax.tree.leaves(state.agent_state.params)]
        for a, b in zip(separate, together, strict=True):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    first, second = (np.asarray(x) for x in jax.tree.leaves(state.agent_state.params)[0])
    assert not np.allclose(first, second)


def test_check_self_play_rejects_single_player_env_and_carry():
    from tests.masked_env import make_masked_env

    agent = Agent(None, None, None)
    with pytest.raises(ConfigError, match="turn-based game"):
        check_self_play(agent, make_masked_env())
    carrying = Agent(None, None, None, init_carry=lambda n: jnp.zeros((n, 3)))
    with pytest.raises(ConfigError, match="carry"):
        check_self_play(carrying, make_game())


def test_outcome_rates_against_numpy():
    scores = np.array([1.0, 0.0, -1.0, 1.0, 1.0, -1.0, 0.0, 1.0], np.float32)
    rates = jax.device_get(outcome_rates(jnp.asarray(scores), "scripted"))
    assert rates == pytest.approx(
        {
            "eval_win_scripted": np.mean(scores == 1),
            "eval_draw_scripted": np.mean(scores == 0),
            "eval_loss_scripted": np.mean(scores == -1),
        }
    )
