"""PettingZoo games on the host (``pz:``): connect_four_v3 through the adapter agrees with
pgx's Connect Four on legality, observations and outcomes for the same move sequences,
and a short self-play run through the fused runner trains on it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pettingzoo.classic.connect_four_v3")

from jaxrl import agents, envs  # noqa: E402
from jaxrl.runners import RunConfig  # noqa: E402
from jaxrl.runners.games.self_play import make_self_play_runner  # noqa: E402
from jaxrl.types import ACTION_MASK, OBS, ConfigError  # noqa: E402
from tests.envs.test_games import play  # noqa: E402


def random_games(count, seed=0):
    """Move sequences of random legal Connect Four games, from PettingZoo's own env."""
    from pettingzoo.classic import connect_four_v3

    rng, games = np.random.default_rng(seed), []
    env = connect_four_v3.env()
    for g in range(count):
        env.reset(seed=g)
        moves = []
        while not any(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            moves.append(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            env.step(moves[-1])
        games.append(moves)
    return games


def test_adapter_agrees_with_pgx_connect_four():
    env = envs.make("pz:connect_four_v3", num_envs=1)
    spec = env.spec
    assert (spec.num_players, spec.turn_based, spec.action_space.n) == (2, True, 7)
    assert spec.obs_shape == (6, 7, 2) and spec.has_action_mask and not env.state_is_portable
    for g, moves in enumerate(random_games(4)):
        _, first, pgx_out = play("connect_four", moves, seed=g)
        state, ts = env.reset(jax.random.PRNGKey(g))
        assert int(ts.info["current_player"][0]) == 0  # PettingZoo: player_0 moves first
        for t, move in enumerate(moves, start=1):
            state, ts = env.step(state, jnp.array([move]), jax.random.PRNGKey(t))
            ref = pgx_out[t]
            last = t == len(moves)
            obs = ts.info["final_obs"]
            ref_obs = ref.info["final_obs"]  # pgx plays the moves in 2 envs: take env 0
            np.testing.assert_array_equal(obs[ACTION_MASK][0], ref_obs[ACTION_MASK][0])
            np.testing.assert_array_equal(obs[OBS][0], ref_obs[OBS][0])
            assert bool(ts.terminated[0]) == bool(ref.terminated[0]) == last
            # Rewards by seat: pgx's player first[0] moved first, PettingZoo's player_0.
            by_seat = np.asarray(ref.reward[0])[[first[0], 1 - first[0]]]
            np.testing.assert_array_equal(np.asarray(ts.reward[0]), by_seat)
        assert int(ts.info["episode_length"][0]) == len(moves)


def test_short_self_play_run_trains():
    env = envs.make("pz:connect_four_v3", num_envs=2)
    agent = agents.make("dqn", env.spec, hidden_sizes=[16], learning_starts=8, batch_size=8)
    config = RunConfig(steps=32, rollout_len=4, log_every=32, eval_every=0)
    runner = make_self_play_runner(agent, env, config)  # one chunk of 4 iterations
    state = runner.init(jax.random.PRNGKey(0))
    before = jax.tree.map(np.asarray, state.agent_state.params)
    state, metrics = jax.jit(runner.run_chunk)(state)
    assert np.isfinite(np.asarray(metrics["loss"])).any()
    changed = jax.tree.map(lambda a, b: not np.array_equal(a, b), before, state.agent_state.params)
    assert any(jax.tree.leaves(changed))
    assert np.asarray(metrics["underflows"]).sum() == 0


def test_unknown_pettingzoo_env():
    with pytest.raises(ConfigError, match="no PettingZoo env 'nope_v0'"):
        envs.make("pz:nope_v0")
