"""Atari through envpool (``--env.backend envpool``, ``envs/atari_envpool.py``): the same
Env contract as ale-py's backend (same-step auto-reset, final observation, zero-padded
stacks, truncation, raw score), inside a jitted ``lax.scan`` and split over the members
of a ``vmap``; the backend's mistakes are one-line ConfigErrors and exit 2.

envpool is in the dev extra; its wheels exist for CPython 3.8-3.13 on Linux x86_64 and
aarch64 only (none for macOS or Windows), where these tests are skipped."""

from __future__ import annotations

import sys
from importlib.util import find_spec

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.train import main
from jaxrl.types import ConfigError
from tests.helpers import one_line_error

# Found, not imported at collection (the library imports envpool when a test makes an env).
pytestmark = pytest.mark.skipif(find_spec("envpool") is None, reason="envpool not installed")


def rollout(env, actions, keys):
    """Resets with each of ``keys [K, 2]`` and steps ``actions [T, K, N]``, vmapped over
    the K members in one jitted program; NumPy ``(first, steps)``, members first."""

    def run(key, actions):
        state, first = env.reset(key)
        return first, jax.lax.scan(lambda s, a: env.step(s, a, key), state, actions)[1]

    out = jax.jit(jax.vmap(run, in_axes=(0, 1)))(keys, jnp.asarray(actions, jnp.int32))
    return jax.tree.map(np.asarray, out)


def test_envpool_backend_keeps_the_env_contract_and_splits_members():
    # 40 frames = 10 agent steps per episode: truncated at steps 9 and 19.
    kwargs = dict(max_num_frames_per_episode=40, noop_max=0)
    env = envs.make("Pong", num_envs=2, backend="envpool", **kwargs)
    assert env.spec == envs.make("Pong", num_envs=2, **kwargs).spec  # ale-py's
    assert not env.state_is_portable
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    actions = np.random.default_rng(0).integers(0, 6, size=(25, 2, 2))
    first, ts = rollout(env, actions, keys)
    assert first.obs.shape == (2, 2, 84, 84, 4) and ts.obs.shape == (2, 25, 2, 84, 84, 4)
    assert ts.obs.dtype == np.uint8
    # envpool repeats the first frame in a new episode's stack; the backend zeroes it.
    assert (first.obs[..., :3] == 0).all() and first.obs[..., 3].any()
    assert not ts.terminated.any()
    np.testing.assert_array_equal(np.nonzero(ts.truncated[0, :, 0])[0], [9, 19])
    done = ts.truncated
    np.testing.assert_array_equal(ts.info["episode_done"], done)
    np.testing.assert_array_equal(ts.info["episode_length"], np.where(done, 10, 0))
    returns = np.cumsum(ts.reward, axis=1)
    np.testing.assert_array_equal(ts.info["episode_return"][:, 9], returns[:, 9])
    # Same-step auto-reset: obs is the next episode's first, final_obs the true last.
    np.testing.assert_array_equal(ts.info["final_obs"][~done], ts.obs[~done])
    assert (ts.obs[done][..., :3] == 0).all() and (ts.info["final_obs"][done][..., :3]).any()
    prev = np.concatenate([first.obs[:, None], ts.obs[:, :-1]], axis=1)
    np.testing.assert_array_equal(ts.info["final_obs"][..., :3], prev[..., 1:])
    # One pool of 2 x 2 emulators for the two members, which see different games; the
    # same keys and actions give the same frames.
    assert [g.num_envs for _, g in env.reset.member_envs.values()] == [4]
    assert (ts.obs[0] != ts.obs[1]).any()
    np.testing.assert_array_equal(rollout(env, actions, keys)[1].obs, ts.obs)


def test_backend_mistakes_are_one_line_errors(monkeypatch, tmp_path, capsys):
    with pytest.raises(ConfigError, match="unknown env.backend 'gym'.*valid: ale_py, envpool"):
        envs.make("Pong", backend="gym")
    with pytest.raises(ConfigError, match="maxpool must be true"):
        envs.make("Pong", backend="envpool", maxpool=False)
    argv = ["--agent", "random", "--env", "Pong", "--logdir", str(tmp_path), "--env.backend"]
    assert main([*argv, "envpol"]) == 2
    one_line_error(capsys, "unknown env.backend 'envpol'")
    monkeypatch.setitem(sys.modules, "envpool", None)  # as if envpool were not installed
    assert main([*argv, "envpool"]) == 2
    one_line_error(capsys, "pip install 'jaxrl[envpool]'")
    assert list(tmp_path.iterdir()) == []
