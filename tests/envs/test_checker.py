"""``jaxrl.envs.check`` and ``jaxrl check-env``: each way an env can break the contract is
caught (rollouts written by hand for what the checker reads of a rollout; small fake envs
for jit, vmap, layout and determinism), a sound env and built-in envs pass, and jaxrl's
Gymnasium wrappers pass Gymnasium's own ``check_env``.

The whole registry is checked with ``JAXRL_CHECK_ALL_ENVS=1``: about an hour on the shared
2-core CPU, 6 s an Atari game and one to several minutes a MuJoCo task (benchmarks/journal/
2026-12-02-env-checker-registry.md); the suite checks a built-in env of Box actions
(Pendulum) beside the fake ones."""

from __future__ import annotations

import dataclasses
import os

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.check_env import main as check_env_main
from jaxrl.envs import checker, gym_wrappers
from jaxrl.envs.core import make_vector_env
from jaxrl.types import ACTION_MASK, OBS, ArraySpec, Box, Discrete, Env, EnvSpec, TimeStep
from tests.envs import test_gymnasium  # noqa: F401  (registers gym:jaxrl-test/Dict-v0, CHW-v0)
from tests.helpers import one_line_error

N, LIMIT = 2, 4
SPEC = EnvSpec("Count-v0", (1,), "float32", Discrete(2), N, LIMIT)


def counted_rollout(steps: int = 9) -> tuple[TimeStep, TimeStep]:
    """A sound rollout of the counting env, by hand: ``obs`` the steps taken in the
    episode; env 0 terminates at its 3rd step, env 1 is truncated at the 4th (``LIMIT``);
    reward 1 a step. Returns (reset's TimeStep, TimeSteps ``[T, N]``)."""
    zeros = np.zeros(N, np.float32)
    obs0 = np.zeros((N, 1), np.float32)
    info0 = {"final_obs": obs0, "episode_return": zeros, "episode_length": np.zeros(N, np.int32)}
    first = TimeStep(obs0, zeros, zeros.astype(bool), zeros.astype(bool), info0)
    pos = np.zeros(N, np.int32)
    rows = []
    for _ in range(steps):
        pos = pos + 1
        term = np.array([pos[0] == 3, False])
        trunc = ~term & (pos >= LIMIT)
        done = term | trunc
        final = pos[:, None].astype(np.float32)
        info = {
            "final_obs": final,
            "episode_return": np.where(done, pos, 0).astype(np.float32),
            "episode_length": np.where(done, pos, 0).astype(np.int32),
        }
        pos = np.where(done, 0, pos)
        rows.append(
            TimeStep(pos[:, None].astype(np.float32), np.ones(N, np.float32), term, trunc, info)
        )
    return first, jax.tree.map(lambda *x: np.stack(x), *rows)


def broken(later: TimeStep, **changes) -> TimeStep:
    """``later`` with fields or ``info`` entries replaced by ``f(later)``."""
    info = dict(later.info)
    fields = {}
    for key, f in changes.items():
        if key in info:
            info[key] = f(later)
        else:
            fields[key] = f(later)
    return later._replace(info=info, **fields)


def test_a_sound_rollout_has_no_problems():
    first, later = counted_rollout()
    assert checker.check_reset(SPEC, first) == []
    assert checker.check_rollout(SPEC, first, later) == []


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"truncated": lambda ts: ts.truncated | ts.terminated}, "both true at once"),
        (  # the time limit ignored: no flag at the 4th step, the episode runs on
            {"truncated": lambda ts: np.zeros_like(ts.truncated)},
            "ran past max_episode_steps (4) without truncated",
        ),
        (
            {"truncated": lambda ts: ts.terminated, "terminated": lambda ts: ts.truncated & False},
            "truncated before the time limit",
        ),
        ({"episode_length": lambda ts: ts.info["episode_length"] * 2}, "info['episode_length'] 6"),
        (
            {"episode_return": lambda ts: ts.info["episode_return"] + 0.5},
            "rewards since its start sum to 3.0",
        ),
        ({"final_obs": lambda ts: ts.obs}, "auto-reset: at all 5 episode ends obs equals"),
        ({"obs": lambda ts: ts.info["final_obs"]}, "the env does not reset"),
        ({"final_obs": lambda ts: ts.obs + 0.5}, "final_obs'] differs from obs where no episode"),
        (
            {"reward": lambda ts: np.where(ts.terminated, np.nan, ts.reward)},
            "a reward is not finite",
        ),
        (
            {"episode_length": lambda ts: ts.info["episode_length"].astype(np.int64)},
            "info['episode_length'] must be int32",
        ),
    ],
)
def test_a_broken_rollout_is_caught(changes, fragment):
    first, later = counted_rollout()
    problems = checker.check_rollout(SPEC, first, broken(later, **changes))
    assert any(fragment in p for p in problems), problems


def test_a_broken_reset_and_mask_are_caught():
    first, later = counted_rollout()
    assert checker.check_reset(SPEC, first._replace(reward=first.reward + 1)) == [
        "reset: must return reward 0 and terminated, truncated False"
    ]
    moved = first._replace(info={**first.info, "final_obs": first.obs + 1})
    assert checker.check_reset(SPEC, moved) == ["reset: info['final_obs'] must equal obs"]
    missing = first._replace(info={"final_obs": first.obs})
    assert checker.check_reset(SPEC, missing) == [
        "reset: info must hold episode_return, episode_length"
    ]
    masked = dataclasses.replace(SPEC, obs_extras=(ArraySpec(ACTION_MASK, (2,), "bool"),))
    mask = np.ones((len(later.reward), N, 2), bool)
    mask[5, 1] = False  # env 1 has no legal action at step 5
    obs = {OBS: later.obs, ACTION_MASK: mask}
    final = {OBS: later.info["final_obs"], ACTION_MASK: mask}
    later = later._replace(obs=obs, info={**later.info, "final_obs": final})
    obs0 = {OBS: first.obs, ACTION_MASK: np.ones((N, 2), bool)}
    first = first._replace(obs=obs0, info={**first.info, "final_obs": obs0})
    assert checker.check_reset(masked, first) == []
    problems = checker.check_rollout(masked, first, later)
    assert problems == ["step: the action mask leaves an env with no legal action"]


def test_a_bad_spec_is_caught():
    bad = dataclasses.replace(SPEC, num_envs=0, action_space=Box((2,), (-1.0,), (1.0,)))
    assert checker.check_spec(bad) == [
        "spec: num_envs must be a positive int, got 0",
        "spec: Box(2,) needs 2 low and high bounds, got 1 and 1",
    ]
    assert checker.check(object()) == [
        "not a jaxrl.types.Env (envs.make_vector_env builds one): object"
    ]


def counting_env(num_envs: int = N, **broken) -> Env:
    """The counting env above as JAX code (``make_vector_env``); ``broken`` replaces
    ``reset_fn`` or ``step_fn``'s reward."""

    def reset_fn(key):
        return jnp.zeros((), jnp.int32), jnp.zeros((1,), jnp.float32)

    def step_fn(pos, action, key):
        pos = pos + 1
        reward = broken.get("reward", lambda key: jnp.float32(1.0))(key)
        return pos, pos[None].astype(jnp.float32), reward, pos == 3

    return make_vector_env(
        name="Count-v0",
        obs_shape=(1,),
        obs_dtype="float32",
        action_space=Discrete(2),
        max_episode_steps=LIMIT,
        num_envs=num_envs,
        reset_fn=broken.get("reset_fn", reset_fn),
        step_fn=step_fn,
    )


def host_noise(key):
    """A reward drawn on the host, ignoring the key: not repeatable."""
    draw = lambda: np.float32(np.random.default_rng().random())
    return jax.pure_callback(draw, jax.ShapeDtypeStruct((), jnp.float32), vmap_method="sequential")


def test_the_counting_env_passes_and_broken_ones_are_caught():
    assert envs.check(counting_env(), steps=9) == []
    wrong_shape = lambda key: (jnp.zeros((), jnp.int32), jnp.zeros((3,), jnp.float32))
    assert envs.check(counting_env(reset_fn=wrong_shape), steps=9) == [
        "reset must return obs float32[2, 1] (its spec, num_envs 2), got float32[2, 3]"
    ]
    problems = envs.check(counting_env(reward=host_noise), steps=9)
    assert problems[0] == "determinism: the same key (0) gave a different rollout", problems
    assert any(p.startswith("vmap: a member of a vmapped rollout differs") for p in problems)


def test_an_env_that_cannot_be_traced_is_caught():
    def reset_fn(key):  # Python branching on a traced value
        start = 1.0 if jax.random.uniform(key) > 0.5 else 0.0
        return jnp.zeros((), jnp.int32), jnp.full((1,), start)

    (problem,) = envs.check(counting_env(reset_fn=reset_fn))
    assert problem.startswith("reset(key) and step(state, action [2, ...], key) must trace")


def test_a_gym_env_that_fails_gymnasiums_check_env_is_caught():
    notes = []
    host = envs.make("gym:jaxrl-test/Unseeded-v0", num_envs=1)
    (problem,) = envs.check(host, notes=notes)
    assert problem.startswith("gymnasium check_env: ") and "super().reset(seed=seed)" in problem


def test_an_env_that_fails_under_vmap_is_caught():
    env = counting_env()

    def step(state, action, key):  # a host callback without a vmap_method: no batching
        state, ts = env.step(state, action, key)
        same = jax.ShapeDtypeStruct(ts.reward.shape, jnp.float32)
        reward = jax.pure_callback(lambda r, k: np.asarray(r), same, ts.reward, key)
        return state, ts._replace(reward=reward)

    (problem,) = envs.check(env._replace(step=step), steps=5)
    assert problem.startswith("vmap: reset and step fail under jax.vmap: vmap is only supported")


def test_a_builtin_env_of_box_actions_passes():
    """(Discrete actions: the counting env above, and docs/how-to/custom-env.md's corridor,
    which tests/test_docs.py runs.)"""
    env = envs.make("Pendulum", num_envs=2, max_episode_steps=5)
    assert envs.check(env) == []


ALL = os.environ.get("JAXRL_CHECK_ALL_ENVS") == "1"


@pytest.mark.parametrize("name", sorted(envs.available()) if ALL else [])  # none: skipped
def test_every_registered_env_passes(name):
    _, options = envs.options(name)
    small = {"max_episode_steps": 6} if options is None or "max_episode_steps" in options else {}
    env = envs.make(name, num_envs=2, **small)
    assert envs.check(env, steps=env.spec.max_episode_steps + 1 if small else 8) == []


class ImageEnv(gym.Env):
    """Random CHW uint8 images from the env's seeded generator."""

    observation_space = gym.spaces.Box(0, 255, (3, 4, 5), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(0, 256, (3, 4, 5), np.uint8), {}

    def step(self, action):
        return self.reset()[0], 0.0, False, False, {}


gym.register("jaxrl-test/Image-v0", entry_point=ImageEnv, max_episode_steps=5)


class UnseededEnv(ImageEnv):
    """Its reset ignores the seed (Gymnasium's checker says so)."""

    def reset(self, *, seed=None, options=None):
        return np.zeros((3, 4, 5), np.uint8), {}


gym.register("jaxrl-test/Unseeded-v0", entry_point=UnseededEnv, max_episode_steps=5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: gym_wrappers.FlattenWrapper(gym.make("jaxrl-test/Dict-v0")),
        lambda: gym_wrappers.FlattenWrapper(gym.make("Blackjack-v1")),
        lambda: gym_wrappers.PermuteImageWrapper(gym.make("jaxrl-test/Image-v0")),
        lambda: gym_wrappers.PixelWrapper(
            gym.make("jaxrl-test/Image-v0"), resize=2, grayscale=False, stack_size=3
        ),
        lambda: gym_wrappers.PixelWrapper(
            gym.make("CartPole-v1", render_mode="rgb_array"), True, 8, True, 2
        ),
    ],
)
def test_jaxrl_gym_wrappers_pass_gymnasiums_check_env(make):
    """Gymnasium's checker rebuilds the env from its spec: the wrappers must be importable
    classes that record their arguments (the closures they were failed with
    ``RecordConstructorArgs``)."""
    from gymnasium.utils.env_checker import check_env

    env = make()
    check_env(env, skip_render_check=True)
    assert env.spec.additional_wrappers[-1].entry_point.startswith("jaxrl.envs.gym_wrappers:")


def test_check_env_command(capsys):
    assert check_env_main(["gym:jaxrl-test/Dict-v0"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(
        "gym:jaxrl-test/Dict-v0: passes Gymnasium's check_env (one copy, jaxrl's "
        "wrappers included)\n"
    )
    assert check_env_main(["NoSuchEnv"]) == 2
    one_line_error(capsys, "error: unknown env 'NoSuchEnv'")
    assert check_env_main(["CartPole", "--env.bogus", "1"]) == 2
    one_line_error(capsys, "unknown option 'bogus' for env 'CartPole-v1'")
    assert check_env_main(["CartPole", "--steps", "0"]) == 2
    one_line_error(capsys, "--steps must be >= 1")


def test_check_env_command_lists_each_problem_and_exits_1(capsys, monkeypatch):
    problems = [
        "step: a reward is not finite",
        "determinism: the same key (0) gave a different rollout",
    ]
    monkeypatch.setattr(envs, "check", lambda env, **kwargs: list(problems))
    assert check_env_main(["CartPole"]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"CartPole-v1: {p}" for p in problems]
    assert captured.out == ""
