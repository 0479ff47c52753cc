"""MPE simple_spread through JaxMARL: rewards against a NumPy reference of the MPE
definition, truncation at 25 steps with the true final observation and the episode's
return, and the parameter-sharing layout equal to the multi-player one, row for row."""

from importlib.util import find_spec

import jax
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.marl import simple_spread

# JaxMARL (in the dev extra) is imported by the first env made, not at collection.
pytestmark = pytest.mark.skipif(find_spec("jaxmarl") is None, reason="jaxmarl not installed")

N, P, STEPS = 2, 3, 26  # one whole episode and the first step of the next


def numpy_reward(p_pos, local_ratio=0.5, radius=0.15):
    """Agent ``i``'s reward ``[P]`` from entity positions ``[2 P, 2]`` (agents first)."""
    agents, landmarks = p_pos[:P], p_pos[P:]
    cover = sum(-min(np.linalg.norm(a - lm) for a in agents) for lm in landmarks)
    rewards = []
    for i in range(P):
        hits = sum(np.linalg.norm(agents[i] - agents[j]) < 2 * radius for j in range(P) if j != i)
        rewards.append(local_ratio * -hits + (1 - local_ratio) * cover)
    return np.array(rewards)


@pytest.fixture(scope="module")
def episode():
    raw = simple_spread(N, shared=False)
    flat = simple_spread(N)

    def run(key):
        reset_key, key = jax.random.split(key)
        state, ts = raw.reset(reset_key)
        fstate, fts = flat.reset(reset_key)

        def body(carry, k):
            state, fstate = carry
            act_key, step_key = jax.random.split(k)
            action = jax.random.randint(act_key, (N, P), 0, 5)
            state, ts = raw.step(state, action, step_key)
            fstate, fts = flat.step(fstate, action.reshape(N * P), step_key)
            return (state, fstate), (ts, fts, state.core.p_pos)

        return jax.lax.scan(body, (state, fstate), jax.random.split(key, STEPS))[1]

    return raw, flat, jax.device_get(jax.jit(run)(jax.random.PRNGKey(0)))


def test_spec_and_registry(episode):
    raw, flat, _ = episode
    assert (raw.spec.num_players, raw.spec.turn_based, raw.spec.obs_shape) == (P, False, (18,))
    assert raw.spec.action_space.n == 5 and raw.spec.max_episode_steps == 25
    assert flat.spec.num_envs == N * P and flat.spec.num_players == 1
    assert envs.make("mpe:simple_spread", num_envs=4).spec.num_envs == 4 * P


def test_rewards_against_numpy(episode):
    _, _, (ts, _, p_pos) = episode
    for t in range(24):  # steps before the episode's end, whose state is not reset
        for g in range(N):
            np.testing.assert_allclose(ts.reward[t, g], numpy_reward(p_pos[t, g]), rtol=1e-5)
    assert (ts.reward[:, :, 0] == ts.reward[:, :, 1]).mean() > 0.5  # mostly shared


def test_truncation_final_obs_and_return(episode):
    _, _, (ts, _, _) = episode
    ends = ts.truncated.any(axis=1)
    assert ends.tolist() == [t == 24 for t in range(STEPS)] and not ts.terminated.any()
    np.testing.assert_allclose(ts.info["episode_return"][24], ts.reward[:25].sum(0), rtol=1e-5)
    assert (ts.info["episode_length"][24] == 25).all()
    assert not np.allclose(ts.info["final_obs"][24], ts.obs[24])  # the next episode began
    np.testing.assert_array_equal(ts.info["final_obs"][:24], ts.obs[:24])


@pytest.mark.default_codegen  # bit for bit: two layouts computed in one program
def test_shared_layout_is_the_players_flattened(episode):
    _, _, (ts, fts, _) = episode
    flat = lambda x: x.reshape(STEPS, N * P, *x.shape[3:])
    np.testing.assert_array_equal(fts.obs, flat(ts.obs))
    np.testing.assert_array_equal(fts.reward, flat(ts.reward))
    np.testing.assert_array_equal(fts.info["episode_return"], flat(ts.info["episode_return"]))
    np.testing.assert_array_equal(fts.truncated, np.repeat(ts.truncated, P, axis=1))


@pytest.fixture(scope="module")
def hanabi_games():
    """Two Hanabi games stepped 120 times with uniform legal moves (one program)."""
    from jaxrl.envs.games import random_action

    env = envs.make("hanabi", num_envs=2)

    def run(key):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts = carry
            act_key, step_key = jax.random.split(k)
            action = random_action(ts.obs, act_key)
            state, nxt = env.step(state, action, step_key)
            return (state, nxt), (ts.obs["action_mask"], ts.info["current_player"], action, nxt)

        _, out = jax.lax.scan(body, (state, ts), jax.random.split(key, 120))
        return ts, out

    first, out = jax.jit(run)(jax.random.PRNGKey(3))
    return env, first, jax.tree.map(np.asarray, out)


def test_hanabi_turns_masks_and_scores(hanabi_games):
    """Hanabi through JaxMARL: the mover's legal moves (never JaxMARL's no-op), turns that
    alternate within a game, one team reward for both players, and an episode return that
    is the sum of a game's rewards (NumPy), a score in [0, 25]."""
    env, first, (mask, player, action, ts) = hanabi_games
    spec = env.spec
    assert (spec.num_players, spec.turn_based, spec.obs_shape) == (2, True, (658,))
    assert spec.action_space.n == 21 and first.obs["obs"].shape == (2, 658)
    assert np.asarray(first.info["current_player"]).tolist() == [0, 0]
    assert mask.shape == (120, 2, 21) and not mask[..., 20].any() and mask.any(-1).all()
    assert mask[np.arange(120)[:, None], np.arange(2)[None, :], action].all()
    np.testing.assert_array_equal(ts.reward[..., 0], ts.reward[..., 1])
    done = ts.terminated | ts.truncated
    assert done.any(axis=0).all() and not ts.truncated.any()
    for env_index in range(2):
        running, turn = 0.0, 0
        for t in range(120):
            assert player[t, env_index] == turn % 2
            running += ts.reward[t, env_index, 0]
            turn += 1
            if done[t, env_index]:
                returns = ts.info["episode_return"][t, env_index]
                assert returns[0] == returns[1] == pytest.approx(running)
                assert 0.0 <= running <= 25.0
                running, turn = 0.0, 0


def test_continuous_actions_push_the_agents():
    """``continuous``: JaxMARL's ``Box(0, 1, (5,))`` forces (no-op, left, right, down, up); five
    steps of the right force move every agent right of where the no-op leaves it, and y stays."""
    env = simple_spread(N, shared=False, continuous=True)
    assert env.spec.action_space.shape == (5,) and env.spec.action_space.high == (1.0,) * 5

    def five(action):
        state, _ = env.reset(jax.random.PRNGKey(0))
        for k in jax.random.split(jax.random.PRNGKey(1), 5):
            state, _ = env.step(state, action, k)
        return state.core.p_pos[:, :P]  # [N, P, 2]

    still = np.zeros((N, P, 5), np.float32)
    right = still.copy()
    right[..., 2] = 1.0
    moved, rest = jax.device_get(jax.jit(five)(right)), jax.device_get(jax.jit(five)(still))
    assert (moved[..., 0] > rest[..., 0] + 0.01).all()
    np.testing.assert_allclose(moved[..., 1], rest[..., 1], atol=1e-6)
