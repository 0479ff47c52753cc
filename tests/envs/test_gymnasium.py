"""Host-side Gymnasium envs: the vector env equals a plain loop over single Gymnasium envs
(same-step auto-reset, true final observations, time limit as truncation, raw episode
statistics); the flatten and permute wrappers equal NumPy references; specs come from the
spaces; user mistakes are one-line ``ConfigError``s."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs.gymnasium import HostEnv, flatten_wrapper, permute_image_wrapper
from jaxrl.types import Box, ConfigError, Discrete

N, LIMIT, STEPS = 3, 15, 50


def test_matches_single_env_loop():
    env = envs.make("gym:CartPole-v1", num_envs=N, max_episode_steps=LIMIT)
    assert isinstance(env, HostEnv) and env.spec.max_episode_steps == LIMIT
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, (STEPS, N)).astype(np.int32)
    actions[:, 0] = 1  # always push right: terminates (pole falls) before the limit

    refs = [gym.make("CartPole-v1", max_episode_steps=LIMIT) for _ in range(N)]
    ref_obs = [r.reset(seed=7 + i)[0] for i, r in enumerate(refs)]
    ts = env.reset(7)
    np.testing.assert_array_equal(ts.obs, np.stack(ref_obs))
    ret, length = np.zeros(N), np.zeros(N, int)
    saw = {"term": False, "trunc": False}
    for t in range(STEPS):
        ts = env.step(actions[t])
        for i, r in enumerate(refs):
            o, rew, term, trunc, _ = r.step(int(actions[t, i]))
            trunc = trunc and not term
            ret[i] += rew
            length[i] += 1
            np.testing.assert_array_equal(ts.info["final_obs"][i], o)
            assert ts.reward[i] == rew and ts.terminated[i] == term and ts.truncated[i] == trunc
            done = term or trunc
            assert ts.info["episode_return"][i] == (ret[i] if done else 0.0)
            assert ts.info["episode_length"][i] == (length[i] if done else 0)
            if done:
                o = r.reset()[0]  # Gymnasium continues the env's own RNG on a plain reset
                ret[i], length[i] = 0.0, 0
                saw["term" if term else "trunc"] = True
            np.testing.assert_array_equal(ts.obs[i], o)
    assert saw == {"term": True, "trunc": True}
    assert ts.obs.dtype == np.float32 and ts.terminated.dtype == bool
    env.close()


class DictEnv(gym.Env):
    """Observations {"pos": Box(2, 3), "dir": Discrete(4), "mission": Text}, like MiniGrid."""

    observation_space = gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
            "dir": gym.spaces.Discrete(4),
            "mission": gym.spaces.Text(10),
        }
    )
    action_space = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)

    def _obs(self):
        self.t += 1
        pos = np.arange(6, dtype=np.float32).reshape(2, 3) / 10 * self.t
        return {"pos": pos, "dir": self.t % 4, "mission": "go"}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        return self._obs(), float(np.sum(action)), self.t >= 3, False, {}


gym.register("jaxrl-test/Dict-v0", entry_point=DictEnv, max_episode_steps=10)


def test_flatten_wrapper_matches_numpy():
    env = flatten_wrapper(DictEnv())
    assert env.observation_space.shape == (10,) and env.observation_space.dtype == np.float32
    obs, _ = env.reset(seed=0)
    # gymnasium's Dict keeps keys sorted: "dir" (one-hot 4) then "pos" (6); "mission" dropped
    expected = np.concatenate([np.eye(4)[1], np.arange(6) / 10]).astype(np.float32)
    np.testing.assert_allclose(obs, expected, rtol=1e-6)
    host = envs.make("gym:jaxrl-test/Dict-v0", num_envs=2)
    assert host.spec.obs_shape == (10,) and host.spec.obs_dtype == "float32"
    assert host.spec.action_space == Box((2,), (-2.0, -2.0), (2.0, 2.0))
    host.reset(0)
    ts = host.step(np.ones((2, 2), np.float32))
    np.testing.assert_allclose(ts.reward, [2.0, 2.0])
    np.testing.assert_allclose(ts.obs[0, 4:], np.arange(6) / 10 * 2, rtol=1e-6)


class CHWEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 255, (3, 4, 5), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.arange(60, dtype=np.uint8).reshape(3, 4, 5), {}

    def step(self, action):
        return self.reset()[0], 0.0, False, False, {}


gym.register("jaxrl-test/CHW-v0", entry_point=CHWEnv, max_episode_steps=5)


def test_permute_image_wrapper_matches_numpy():
    env = permute_image_wrapper(CHWEnv())
    obs, _ = env.reset()
    chw = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    np.testing.assert_array_equal(obs, chw.transpose(1, 2, 0))
    assert obs[2, 3, 1] == chw[1, 2, 3] and env.observation_space.shape == (4, 5, 3)
    host = envs.make("gym:jaxrl-test/CHW-v0", num_envs=2, permute_image=True)
    assert host.spec.obs_shape == (4, 5, 3) and host.spec.obs_dtype == "uint8"
    assert host.spec.action_space == Discrete(2)
    np.testing.assert_array_equal(host.reset(0).obs[1], chw.transpose(1, 2, 0))


@pytest.mark.parametrize(
    "name, kwargs, fragment",
    [
        ("gym:CartPole-v9", {}, "unknown Gymnasium env 'gym:CartPole-v9'; did you mean"),
        ("gym:NoSuchEnv-v0", {}, "unknown Gymnasium env 'gym:NoSuchEnv-v0'"),
        ("gym:CartPole-v1", {"vectorization": "threads"}, "vectorization must be"),
        ("gym:CartPole-v1", {"bogus": 1}, "gym:CartPole-v1:"),
        ("gym:jaxrl-test/CHW-v0", {"permute_image": True, "max_episode_steps": 0}, "must be"),
    ],
)
def test_user_mistakes(name, kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        envs.make(name, **kwargs)
    assert "\n" not in str(info.value)


def test_canonical_name_keeps_prefix():
    assert envs.canonical_name("gym:Acrobot-v1") == "gym:Acrobot-v1"
