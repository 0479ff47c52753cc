"""envpool as a second backend of ``jaxrl.envs.atari`` (``--env.backend envpool``).

envpool (Weng et al. 2022, https://github.com/sail-sg/envpool; ``pip install
'jaxrl[envpool]'``) runs Atari emulators on its own C++ thread pool, as ale-py's vector
env does. This module gives ``atari.make_atari`` the same two calls as ale-py's
(``ale_reset(handle, indices [k], seeds [k]) -> (handle, obs [N, S, H, W], lives [N])``
and ``ale_step(handle, action [N]) -> (handle, obs, reward, game_over, truncated,
lives)``), so everything else (same-step auto-reset by partial resets, terminated vs
truncated, episodic life, raw score, reward clipping, the member split of a seed sweep)
is ``atari``'s own code and the ``Env`` contract is the same.

How it runs: envpool 1.2.5's XLA interface (``env.xla()``) works inside ``lax.scan`` with
jax 0.10.2, but its ``recv`` has a fixed output of ``batch_size`` envs and envpool resets
a finished env on the *next* step, ignoring that step's action; a partial reset (the
contract's same-step auto-reset) needs ``env.reset(env_ids)``, which the XLA interface
does not expose. So both calls are ``jax.experimental.io_callback``s (ordered) into
envpool's Python API, inside the jitted program and its ``lax.scan``: one host call per
step, plus one per finished env.

Options, by ``make_atari``'s (ale-py's) names -> envpool's: ``img_height``,
``img_width``, ``stack_num``, ``noop_max`` (0 -> 1: both mean none; envpool 1.2.5
crashes on 0), ``repeat_action_probability``,
``use_fire_reset``, ``full_action_space``, ``num_threads`` (same names);
``frameskip`` -> ``frame_skip``; ``max_num_frames_per_episode`` -> ``max_episode_steps``
= that / ``frameskip`` (envpool counts agent steps); ``maxpool`` must be true (envpool
always max-pools the last two frames); ``episodic_life`` and ``reward_clipping`` are done
by ``atari`` (envpool's own are off); grayscale always. envpool repeats a new episode's
first frame in its stack where ale-py zeroes the older frames: ``atari`` zeroes them, so
observations follow the same rule. Seeding: envpool seeds env ``j`` of a pool with
``seed + j`` when the pool is made; a reset with ``key`` remakes the pool with ``seed``
the first of the emulator seeds ``atari`` derives from ``key``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from jaxrl.types import ConfigError


def task_id(game: str, game_name: str) -> str:
    """envpool's id of ROM ``game`` (``"pong"`` -> ``"Pong-v5"``); ConfigError if envpool
    is missing or does not have it."""
    try:
        import envpool
    except ImportError:
        raise ConfigError(
            "env.backend 'envpool' needs envpool: pip install 'jaxrl[envpool]'"
        ) from None
    task = f"{game_name}-v5"
    if task not in envpool.list_all_envs():
        raise ConfigError(f"envpool has no Atari game {game!r} ({task}); use env.backend ale_py")
    return task


class Pool:
    """The host side: an envpool vector env of ``num_envs`` Atari games, and the latest
    observation of each (what a partial reset reports for the envs it leaves alone)."""

    def __init__(self, task: str, num_envs: int, options: dict[str, Any]):
        if not options["maxpool"]:
            raise ConfigError("env.backend 'envpool' always max-pools frames: maxpool must be true")
        self.task, self.num_envs = task, num_envs
        frameskip = options["frameskip"]
        self.config = dict(
            num_envs=num_envs,
            batch_size=num_envs,
            num_threads=options["num_threads"],
            img_height=options["img_height"],
            img_width=options["img_width"],
            stack_num=options["stack_num"],
            frame_skip=frameskip,
            noop_max=max(1, options["noop_max"]),  # envpool crashes on 0; 0 and 1: none
            repeat_action_probability=options["repeat_action_probability"],
            use_fire_reset=options["use_fire_reset"],
            full_action_space=options["full_action_space"],
            max_episode_steps=max(1, options["max_num_frames_per_episode"] // frameskip),
            episodic_life=False,  # done by `atari` from `lives`
            reward_clip=False,  # done by `atari`, so that the raw score can be logged
            gray_scale=True,
        )
        self.env = self._make(0)
        self.obs = np.zeros((num_envs, *self.env.observation_space.shape), np.uint8)
        self.lives = np.zeros((num_envs,), np.int32)
        self.num_actions = int(self.env.action_space.n)

    def _make(self, seed: int) -> Any:
        import envpool

        return envpool.make(self.task, env_type="gymnasium", seed=seed, **self.config)

    def reset(self, handle, indices, seeds):
        indices, seeds = np.asarray(indices), np.asarray(seeds)
        if seeds[0] >= 0:  # a seeded reset of all the envs: a new pool with that seed
            self.env.close()
            self.env = self._make(int(seeds[0]))
            obs, info = self.env.reset()
        else:
            obs, info = self.env.reset(indices.astype(np.int32))
        ids = np.asarray(info["env_id"])
        self.obs[ids], self.lives[ids] = obs, info["lives"]
        return handle, self.obs.copy(), self.lives.copy()

    def step(self, handle, action):
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(action, np.int32))
        ids = np.asarray(info["env_id"])
        self.obs[ids], self.lives[ids] = obs, info["lives"]
        out = np.zeros((self.num_envs,), np.int32), np.zeros((self.num_envs,), bool)
        reward_, game_over, truncated_ = out[0].copy(), out[1].copy(), out[1].copy()
        reward_[ids], game_over[ids], truncated_[ids] = reward, terminated, truncated
        return handle, self.obs.copy(), reward_, game_over, truncated_, self.lives.copy()

    def close(self) -> None:
        self.env.close()


def calls(pool: Pool, no_vmap: Any) -> tuple[np.ndarray, Any, Any]:
    """``(initial_handle, ale_reset, ale_step)`` of ``pool`` as ordered host callbacks,
    each refusing ``jax.vmap`` (``no_vmap``, as ale-py's)."""
    n = pool.num_envs
    handle = jax.ShapeDtypeStruct((8,), jnp.uint8)
    obs = jax.ShapeDtypeStruct((n, *pool.obs.shape[1:]), jnp.uint8)
    vector = lambda dtype: jax.ShapeDtypeStruct((n,), dtype)  # noqa: E731

    @no_vmap
    def ale_reset(handle_, indices, seeds):
        shapes = (handle, obs, vector(jnp.int32))
        return io_callback(pool.reset, shapes, handle_, indices, seeds, ordered=True)

    @no_vmap
    def ale_step(handle_, action):
        shapes = (handle, obs, vector(jnp.int32), vector(bool), vector(bool), vector(jnp.int32))
        return io_callback(pool.step, shapes, handle_, action, ordered=True)

    return np.zeros((8,), np.uint8), ale_reset, ale_step
