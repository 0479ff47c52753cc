"""Atari through ale-py's XLA vector env: names, the Env contract (same-step auto-reset,
final observation, raw score, terminated vs truncated), preprocessing options, sticky
actions, episodic life, members of a vmap split from one vector env (a nested vmap
refused), and a small Pong training program."""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs import atari
from jaxrl.types import ConfigError


def rollout(env, actions, key=0):
    """Resets with ``PRNGKey(key)`` and steps ``actions [T, N]`` in one jitted scan;
    returns the reset TimeStep and the stacked step TimeSteps as NumPy."""
    return roller(env)(actions, key)


def roller(env):
    """``rollout`` for ``env`` compiled once: ``(actions, key=0) -> (first, steps)``."""

    def run(key, actions):
        state, first = env.reset(key)

        def body(state, action):
            state, ts = env.step(state, action, key)
            return state, ts

        return first, jax.lax.scan(body, state, actions)[1]

    run = jax.jit(run)

    def call(actions, key=0):
        out = run(jax.random.PRNGKey(key), jnp.asarray(actions, jnp.int32))
        return jax.tree.map(np.asarray, out)

    call.run = lambda key, actions: jax.tree.map(np.asarray, run(key, actions))
    return call


def test_names_resolve_and_games_are_listed():
    for name in ("Pong", "pong", "Pong-v5", "ALE/Pong-v5"):
        assert envs.canonical_name(name) == "ALE/Pong-v5"
    assert envs.canonical_name("Breakout") == "ALE/Breakout-v5"
    assert envs.canonical_name("MsPacman") == "ALE/MsPacman-v5"
    listed = [n for n in envs.available() if n.startswith("ALE/")]
    assert len(listed) == len(atari.GAMES) > 100
    assert envs.family("Pong") == "atari" and envs.family("CartPole") is None
    from ale_py import roms

    assert set(atari.GAMES) <= set(roms.get_all_rom_ids())


def test_importing_jaxrl_does_not_import_ale_py():
    code = "import sys, jaxrl; jaxrl.envs.canonical_name('Pong'); print('ale_py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_contract_auto_reset_truncation_and_frame_stack():
    # 40 frames = 10 agent steps per episode: truncated at steps 9 and 19.
    env = envs.make("Pong", num_envs=2, max_num_frames_per_episode=40, noop_max=0)
    # Its state is a handle to this process's emulators: a resume restarts the env.
    assert not env.state_is_portable and envs.make("CartPole").state_is_portable
    assert env.spec.obs_shape == (84, 84, 4) and env.spec.obs_dtype == "uint8"
    assert env.spec.max_episode_steps == 10 and env.spec.action_space.n == 6
    actions = np.random.default_rng(0).integers(0, 6, size=(25, 2))
    first, ts = rollout(env, actions)
    assert first.obs.shape == (2, 84, 84, 4) and first.obs.dtype == np.uint8
    assert (first.obs[..., :3] == 0).all() and first.obs[..., 3].any()  # zero-padded stack
    assert ts.obs.dtype == np.uint8 and ts.obs.shape == (25, 2, 84, 84, 4)
    done = ts.terminated | ts.truncated
    assert not ts.terminated.any()
    np.testing.assert_array_equal(np.nonzero(ts.truncated[:, 0])[0], [9, 19])
    np.testing.assert_array_equal(ts.truncated[:, 0], ts.truncated[:, 1])
    np.testing.assert_array_equal(ts.info["episode_done"], done)
    np.testing.assert_array_equal(ts.info["episode_length"], np.where(done, 10, 0))
    # The raw score of each ended episode is the sum of its rewards (|r| <= 1 in Pong).
    returns = np.cumsum(ts.reward, axis=0)
    np.testing.assert_array_equal(ts.info["episode_return"][9], returns[9])
    np.testing.assert_array_equal(ts.info["episode_return"][19], returns[19] - returns[9])
    # Where no episode ended, final_obs is obs; where one did, obs is the next episode's
    # first (zero-padded) observation and final_obs the true last one.
    np.testing.assert_array_equal(ts.info["final_obs"][~done], ts.obs[~done])
    assert (ts.obs[done][..., :3] == 0).all()
    assert (ts.info["final_obs"][done][..., :3] != 0).any()
    # Frames are last, newest last: each step shifts the stack by one frame.
    prev = np.concatenate([first.obs[None], ts.obs[:-1]])
    np.testing.assert_array_equal(ts.info["final_obs"][..., :3], prev[..., 1:])


def test_preprocessing_options_change_shape_and_stack():
    env = envs.make("Breakout", num_envs=3, img_height=42, img_width=32, stack_num=2)
    assert env.spec.obs_shape == (42, 32, 2) and env.spec.max_episode_steps == 27_000
    first, ts = rollout(env, np.ones((3, 3)))
    assert first.obs.shape == (3, 42, 32, 2) and ts.obs.shape == (3, 3, 42, 32, 2)
    assert ts.obs.dtype == np.uint8
    np.testing.assert_array_equal(ts.obs[1:, ..., 0], ts.obs[:-1, ..., 1])
    full = envs.make("Breakout", num_envs=1, full_action_space=True, frameskip=2)
    assert full.spec.action_space.n == 18 and full.spec.max_episode_steps == 54_000


def test_seeded_reset_is_deterministic_and_sticky_actions_act():
    up, down = np.full((30, 2), 2), np.full((30, 2), 3)  # Pong: RIGHT (up) and LEFT (down)
    plain = roller(envs.make("Pong", num_envs=2, repeat_action_probability=0.0, noop_max=0))
    a, b, c = plain(up)[1], plain(up)[1], plain(down)[1]
    np.testing.assert_array_equal(a.obs, b.obs)  # same key, same actions: same frames
    assert (a.obs != c.obs).any()  # the actions move the paddle
    # With repeat probability 1 every frame repeats the previous action (NOOP after the
    # reset): what the agent chooses has no effect.
    sticky = roller(envs.make("Pong", num_envs=2, repeat_action_probability=1.0, noop_max=0))
    stuck = sticky(up)[1].obs
    np.testing.assert_array_equal(stuck, sticky(down)[1].obs)
    np.testing.assert_array_equal(stuck, plain(np.zeros((30, 2)))[1].obs)


def test_reward_clipping_keeps_the_raw_score():
    # Space Invaders pays 5 to 30 per invader; 400 frames = 100 steps per episode.
    kwargs = dict(num_envs=2, max_num_frames_per_episode=400)
    actions = np.random.default_rng(1).integers(0, 6, size=(120, 2))
    _, raw = rollout(envs.make("SpaceInvaders", reward_clipping=False, **kwargs), actions)
    _, clipped = rollout(envs.make("SpaceInvaders", **kwargs), actions)
    assert raw.reward.max() > 1  # the same seed and actions give the same game
    np.testing.assert_array_equal(clipped.reward, np.clip(raw.reward, -1, 1))
    np.testing.assert_array_equal(clipped.info["episode_return"], raw.info["episode_return"])
    np.testing.assert_array_equal(raw.info["episode_return"][99], raw.reward[:100].sum(0))


def test_episodic_life_terminates_on_a_lost_life_but_scores_the_game():
    env = envs.make("Breakout", num_envs=2, episodic_life=True, repeat_action_probability=0.0)
    actions = np.random.default_rng(2).integers(0, 4, size=(400, 2))
    first, ts = rollout(env, actions)
    lives = np.concatenate([first.info["lives"][None], ts.info["lives"]])
    life_lost = ts.terminated & ~ts.info["episode_done"]
    assert life_lost.sum() >= 4  # Breakout has 5 lives
    np.testing.assert_array_equal(life_lost, (lives[1:] < lives[:-1]) & ~ts.info["episode_done"])
    assert not ts.truncated.any()
    # The next life starts from a zeroed stack, as after a reset (Dopamine).
    assert (ts.obs[life_lost][..., :3] == 0).all()
    # Whole games only are scored: their raw return is the sum of all their rewards.
    env_done = ts.info["episode_done"]
    assert env_done.any()
    t, e = np.argwhere(env_done)[0]
    assert ts.info["episode_return"][t, e] == ts.reward[: t + 1, e].sum()
    assert (ts.info["episode_length"][env_done] > 0).all()
    assert (ts.info["episode_length"][life_lost] == 0).all()


def test_user_mistakes_are_one_line_config_errors(monkeypatch):
    for kwargs, fragment in [
        ({"repeat_action_probability": 2}, "repeat_action_probability"),
        ({"noop_max": -1}, "noop_max"),
        ({"stack_num": "4"}, "stack_num"),
        ({"episodic_life": 1}, "episodic_life"),
        ({"grayscale": False}, "unknown option 'grayscale'"),
    ]:
        with pytest.raises(ConfigError, match=fragment):
            envs.make("Pong", num_envs=1, **kwargs)
    env = envs.make("Pong", num_envs=2)
    keys = jax.random.split(jax.random.PRNGKey(0), 6).reshape(2, 3, 2)
    with pytest.raises(ConfigError, match="cannot be vmapped twice"):  # one level of members
        jax.vmap(jax.vmap(env.reset))(keys)
    monkeypatch.setitem(sys.modules, "ale_py", None)  # as if ale-py were not installed
    with pytest.raises(ConfigError, match=r"pip install 'jaxrl\[atari\]'"):
        envs.make("Pong")


def test_vmapped_members_step_one_vector_env_split_per_member():
    """``jax.vmap`` of size K over reset and step runs one vector env of K x N emulators;
    member i's frames, rewards and episode ends are exactly those of an unbatched env
    reset with member i's key and stepped with member i's actions."""
    env = envs.make("Pong", num_envs=2, max_num_frames_per_episode=80)
    members, steps = 3, 30
    keys = jax.random.split(jax.random.PRNGKey(0), members)
    actions = np.random.default_rng(0).integers(0, 6, size=(steps, members, 2))

    def run(key, actions):
        state, first = env.reset(key)
        return first, jax.lax.scan(lambda s, a: env.step(s, a, key), state, actions)[1]

    first, ts = jax.tree.map(
        np.asarray, jax.jit(jax.vmap(run, in_axes=(0, 1)))(keys, jnp.asarray(actions, jnp.int32))
    )
    assert ts.obs.shape == (members, steps, 2, 84, 84, 4)
    # One vector env of 3 x 2 emulators was made for the members (besides the env's own).
    (made,) = env.reset.member_envs.values()
    assert made[1].num_envs == 6 and list(env.reset.member_envs) == [3]
    single = roller(env)
    for i in range(members):
        one_first, one = single.run(keys[i], jnp.asarray(actions[:, i], jnp.int32))
        np.testing.assert_array_equal(first.obs[i], one_first.obs)
        for name in ("obs", "reward", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(ts, name)[i], getattr(one, name), err_msg=name)
        np.testing.assert_array_equal(ts.info["episode_return"][i], one.info["episode_return"])
    assert ts.truncated.sum() == members * 2  # one 20-step episode ended per env
    assert (ts.obs[0] != ts.obs[1]).any()  # the members' emulators are seeded apart
