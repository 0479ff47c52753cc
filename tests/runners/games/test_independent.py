"""Independent agents in a turn-based game: each agent is handed exactly its player's
stitched transitions (the hand-written reference of scripted_game.py), in order; empty and
full queues are counted; vmap over seeds gives the members of separate runs; bad input
is one ConfigError."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import RunConfig
from jaxrl.runners.games.independent import QUEUE, check_agents, make_multi_agent_runner
from jaxrl.types import OBS, Agent, ConfigError
from tests.runners.games.scripted_game import (
    N,
    make_game,
    one_coin_agent,
    recording_agent,
    reference_stream,
    summing_random_agent,
)

ROLLOUT = 4  # two rounds: each agent is handed 2 transitions per env and iteration


def player_stream(env_index, player, count):
    """The reference transitions of ``player`` in env ``env_index``, in order: player 0
    has two per game (move 0 -> 2, and its final one), player 1 one (its final one)."""
    every = reference_stream(env_index, 3 * count)
    return [t for i, t in enumerate(every) if (i % 3 == 2) == (player == 1)][:count]


@pytest.fixture(scope="module")
def recorded():
    env = make_game()
    per_chunk = ROLLOUT * N  # one iteration per chunk: the recorders see all of it
    config = RunConfig(steps=per_chunk, rollout_len=ROLLOUT, log_every=per_chunk, eval_every=0)
    agents = [recording_agent(env, ROLLOUT // 2) for _ in range(2)]
    runner = make_multi_agent_runner(agents, env, config)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(runner.run_chunk)
    rollouts, metrics = [[], []], []
    for _ in range(24):  # player 1's queue runs dry, player 0's fills (1/3 vs 2/3 per move)
        state, m = run_chunk(state)
        for p in range(2):
            rollouts[p].append(jax.device_get(state.agent_state[p].rollout))
        metrics.append(jax.device_get(m))
    return rollouts, metrics


def test_each_agent_gets_its_players_transitions_in_order(recorded):
    rollouts, metrics = recorded
    for p in range(2):
        clean = 3 if p == 1 else 6  # iterations before player 1's queue first runs dry
        cat = lambda f, p=p, k=clean: np.concatenate([f(r) for r in rollouts[p][:k]])
        obs, action, reward = cat(lambda r: r[0][OBS]), cat(lambda r: r[1]), cat(lambda r: r[2])
        next_obs, terminated = cat(lambda r: r[3][OBS]), cat(lambda r: r[4])
        for e in range(N):
            for t, (o, a, r, o2, term) in enumerate(player_stream(e, p, obs.shape[0])):
                where = f"player {p}, env {e}, transition {t}"
                np.testing.assert_array_equal(obs[t, e], o, err_msg=where)
                assert (action[t, e], reward[t, e], terminated[t, e]) == (a, r, term), where
                np.testing.assert_array_equal(next_obs[t, e], o2, err_msg=where)
    assert sum(m["a1_underflows"].sum() for m in metrics[:3]) == 0
    assert sum(m["a0_drops"].sum() for m in metrics[:6]) == 0


def test_empty_queue_repeats_last_and_full_queue_drops(recorded):
    rollouts, metrics = recorded
    # After 16 warm-up rounds player 1 holds about 10 transitions and loses 1/3 per move
    # pair; player 0 holds about 21 of QUEUE and gains 1/3: both limits are reached.
    underflows = sum(m["a1_underflows"].sum() for m in metrics)
    drops = sum(m["a0_drops"].sum() for m in metrics)
    assert underflows > 0 and drops > 0 and QUEUE == 32
    assert sum(m["a0_underflows"].sum() for m in metrics) == 0
    obs = np.concatenate([r[0][OBS] for r in rollouts[1]])  # [T, N, 2]
    repeats = (np.diff(obs, axis=0) == 0).all(-1).sum()
    assert repeats == underflows  # an underflow hands out the previous transition again
    assert np.isfinite(metrics[-1]["player0_return"]).any()


def test_vmap_over_seeds_equals_separate_runs():
    env = make_game()
    config = RunConfig(steps=4 * N, rollout_len=4, log_every=4 * N, eval_every=0)

    agent = summing_random_agent()
    runner = make_multi_agent_runner([agent, agent], env, config)
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    batched = batch_runner(runner)
    state, _ = jax.jit(batched.run_chunk)(jax.jit(batched.init)(keys))
    single = jax.jit(lambda k: [s.rollout for s in runner.run_chunk(runner.init(k))[0].agent_state])
    separate = np.array([jax.device_get(single(k)) for k in keys])  # [3 seeds, 2 agents]
    batched_sums = np.stack([np.asarray(s.rollout) for s in state.agent_state], axis=1)
    np.testing.assert_array_equal(batched_sums, separate)
    assert len(set(separate[:, 0])) > 1  # the members differ


def test_check_agents_rejects_bad_input():
    from tests.masked_env import make_masked_env

    plain = Agent(None, None, None)
    with pytest.raises(ConfigError, match="turn-based game"):
        check_agents([plain], make_masked_env(), 2)
    with pytest.raises(ConfigError, match="give 2 agents, not 3"):
        check_agents([plain] * 3, make_game(), 2)
    carrying = Agent(None, None, None, init_carry=lambda n: jnp.zeros((n, 3)))
    with pytest.raises(ConfigError, match="carry"):
        check_agents([plain, carrying], make_game(), 2)
    with pytest.raises(ConfigError, match="multiple of the 2 players"):
        check_agents([plain, plain], make_game(), 3)


def test_each_env_explores_with_its_own_key():
    """Agents that draw one exploration sample per ``act`` call (as noisy nets draw one
    parameter noise per forward pass) still explore each env on their own: each agent acts
    per env with the env's own key (``self_play.act_per_env``). On the whole batch every env
    took the same action at every step."""
    env = make_game(num_envs=8)
    config = RunConfig(steps=4 * 8, rollout_len=4, log_every=4 * 8, eval_every=0)
    agent = one_coin_agent(2, 8)  # two transitions per player and iteration
    runner = make_multi_agent_runner([agent, agent], env, config)
    state, _ = jax.jit(runner.run_chunk)(jax.jit(runner.init)(jax.random.PRNGKey(0)))
    for p in range(2):
        actions = np.asarray(state.agent_state[p].rollout)  # [2, 8 envs], player p's
        assert all(len(set(row)) == 2 for row in actions), (p, actions)
