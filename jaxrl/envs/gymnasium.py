"""Host-side environments: any Gymnasium environment id, as a stateful vectorized env.

``--env gym:LunarLander-v3`` (or ``envs.make("gym:Acrobot-v1", num_envs=8)``) builds a
``HostEnv``: ``num_envs`` copies of ``gymnasium.make(id)`` in a Gymnasium vector env
(``SyncVectorEnv``, or ``AsyncVectorEnv`` with ``vectorization="async"``), stepped from
Python by ``jaxrl.runners.host``. It is not a JAX ``Env`` (it holds state and cannot run
inside ``lax.scan``), but it returns the same ``TimeStep`` with NumPy arrays:

* ``obs`` ``[N, *obs_shape]``, already the next episode's first observation where an
  episode ended, and ``info["final_obs"]`` the true last one. The vector env runs in
  Gymnasium 1.x's ``AutoresetMode.SAME_STEP``: the step that ends an episode also resets
  it and reports the last observation in ``info["final_obs"]``. (The default
  ``NEXT_STEP`` mode would instead spend the next ``step`` call on the reset, ignoring
  its action and returning a reward-0 transition from the last obs to the first, which an
  agent must not learn from.)
* ``reward`` float32, raw; ``terminated`` and ``truncated`` bool, never both true
  (Gymnasium's ``TimeLimit`` may set both; a terminal state wins, as in ``envs.core``).
* ``info["episode_return"]`` / ``info["episode_length"]``: raw return (float32) and
  length (int32) of the episode that ended at this step, 0 elsewhere.

Observation spaces are made into arrays by documented wrappers applied to each copy:

* ``FlattenWrapper`` (as RLHive's): a ``Dict`` or ``Tuple`` observation (e.g. MiniGrid's
  ``{"image", "direction", "mission"}``) becomes one flat float32 vector through
  ``gymnasium.spaces.flatten`` (``Discrete`` entries one-hot, ``Box`` entries raveled and
  cast, not rescaled); non-numeric entries (``Text``, MiniGrid's mission ``MissionSpace``)
  are dropped. Applied automatically to ``Dict`` / ``Tuple`` spaces.
* ``PermuteImageWrapper``: reorders image axes, by default CHW -> HWC (jaxrl's torsos are
  channels-last Flax convolutions; RLHive's permutes the other way for PyTorch). Applied
  when the env option ``permute_image=True``.

Both (and ``PixelWrapper``, for pixel options) are classes of ``envs.gym_wrappers`` that
record their arguments, as Gymnasium's own wrappers do, so one copy
(``HostEnv.make_single``) passes Gymnasium's ``check_env`` (``envs.checker``).

``Box`` observations keep uint8 (images; the torsos divide them by 255) and otherwise
become float32. Action spaces: ``Discrete`` (``start`` 0) and ``Box``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import Any

import numpy as np

from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, TimeStep
from jaxrl.validation import check_int

PREFIX = "gym:"
#: Gymnasium id prefixes whose environments register on importing a module.
_PLUGINS = {"MiniGrid-": "minigrid", "BabyAI-": "minigrid", "ALE/": "ale_py"}


def _gymnasium():
    try:
        import gymnasium
    except ModuleNotFoundError:
        raise ConfigError(
            "gym: envs need gymnasium, which is not installed; pip install 'jaxrl[gym]'"
        ) from None
    return gymnasium


def _import_plugin(env_id: str) -> None:
    for prefix, module in _PLUGINS.items():
        if env_id.startswith(prefix):
            try:
                importlib.import_module(module)
            except ModuleNotFoundError:
                raise ConfigError(
                    f"env 'gym:{env_id}' needs {module!r}, which is not installed"
                ) from None


def check_id(env_id: str) -> str:
    """``env_id`` if Gymnasium knows it (after importing its plugin), else ``ConfigError``."""
    from jaxrl import trust

    trust.check(PREFIX + env_id, f"env '{PREFIX}{env_id}'")
    gym = _gymnasium()
    _import_plugin(env_id)
    registry = gym.envs.registry
    if env_id not in registry and ":" not in env_id:
        close = sorted(k for k in registry if k.split("-")[0] == env_id.split("-")[0])
        hint = f"; did you mean {', '.join('gym:' + k for k in close)}" if close else ""
        raise ConfigError(
            f"unknown Gymnasium env 'gym:{env_id}'{hint} (see gymnasium.pprint_registry())"
        )
    return env_id


def flatten_wrapper(env: Any) -> Any:
    """RLHive's ``FlattenWrapper`` (``gym_wrappers.FlattenWrapper``): ``Dict``/``Tuple``
    (or any) obs -> flat float32 ``[D]``, ``D = gymnasium.spaces.flatdim`` of the space
    without its non-numeric entries; a ``Discrete(n)`` entry becomes an ``n``-long one-hot
    vector, a ``Box`` is raveled and cast to float32 (values unchanged)."""
    _gymnasium()
    from jaxrl.envs import gym_wrappers

    return gym_wrappers.FlattenWrapper(env)


def permute_image_wrapper(env: Any, axes: tuple[int, ...] = (1, 2, 0)) -> Any:
    """``PermuteImageWrapper`` (``gym_wrappers``): image obs ``transpose(axes)``; default
    CHW -> HWC."""
    _gymnasium()
    from jaxrl.envs import gym_wrappers

    return gym_wrappers.PermuteImageWrapper(env, axes)


def pixel_wrapper(env: Any, opts: Any) -> Any:
    """``env`` observing uint8 frames ``[H, W, C * stack_size]`` (``envs.pixels``;
    ``gym_wrappers.PixelWrapper``): its ``rgb_array`` rendering if ``opts.pixels``, grayscale
    and resized, the ``stack_size`` latest stacked on the channel axis."""
    _gymnasium()
    from jaxrl.envs import gym_wrappers

    return gym_wrappers.PixelWrapper(env, opts.pixels, opts.resize, opts.grayscale, opts.stack_size)


def _space_to_jaxrl(space: Any, env_id: str) -> Discrete | Box:
    spaces = _gymnasium().spaces
    if isinstance(space, spaces.Discrete) and int(space.start) == 0:
        return Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        return Box(
            tuple(space.shape),
            tuple(float(x) for x in space.low.ravel()),
            tuple(float(x) for x in space.high.ravel()),
        )
    raise ConfigError(f"gym:{env_id} has action space {space}; jaxrl supports Discrete and Box")


class HostEnv:
    """A Gymnasium vector env with jaxrl's ``TimeStep`` (NumPy arrays); see module docstring.

    ``reset(seed) -> TimeStep`` seeds copy ``i`` with ``seed + i``; ``step(action [N, ...])
    -> TimeStep``; ``spawn(num_envs, render)`` a fresh independent copy (for evaluation;
    ``render``: its copies made with ``render_mode="rgb_array"``, which ``renders`` says
    the env has; ``frames()`` their pictures); ``close()``. ``spec`` is a jaxrl ``EnvSpec``
    built from the spaces; ``make_single()`` builds one Gymnasium env as each copy is
    built, wrappers included (None where unknown).
    """

    # What the execution modes read of an env (``jaxrl.types.Env``): stepped from Python,
    # its state in this process, its copies not vmappable.
    host_loop = True
    state_is_portable = False
    vmappable = False

    def __init__(
        self,
        vector_env: Any,
        spec: EnvSpec,
        build: Any = None,
        make_single: Any = None,
        renders: bool = False,
    ):
        self.vector_env = vector_env
        self.spec = spec
        self._build = build
        self.make_single = make_single
        self.renders = renders
        n = spec.num_envs
        self._return = np.zeros(n, np.float64)
        self._length = np.zeros(n, np.int32)

    def _obs(self, obs: Any) -> np.ndarray:
        return np.asarray(obs, dtype=self.spec.obs_dtype)

    def reset(self, seed: int) -> TimeStep[np.ndarray]:
        obs, _ = self.vector_env.reset(seed=int(seed))
        obs = self._obs(obs)
        n = self.spec.num_envs
        self._return[:] = 0.0
        self._length[:] = 0
        zeros_f, false = np.zeros(n, np.float32), np.zeros(n, bool)
        info = {
            "final_obs": obs,
            "episode_return": zeros_f,
            "episode_length": np.zeros(n, np.int32),
        }
        return TimeStep(obs, zeros_f, false, false.copy(), info)

    def step(self, action: Any) -> TimeStep[np.ndarray]:
        action = np.asarray(action)
        if isinstance(self.spec.action_space, Box):
            action = action.astype(np.float32)
        obs, reward, terminated, truncated, infos = self.vector_env.step(action)
        obs = self._obs(obs)
        reward = np.asarray(reward, np.float32)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool) & ~terminated
        done = terminated | truncated
        final_obs = obs.copy()
        if done.any():
            for i in np.flatnonzero(done):
                final_obs[i] = infos["final_obs"][i]
        self._return += reward
        self._length += 1
        ep_return = np.where(done, self._return, 0.0).astype(np.float32)
        ep_length = np.where(done, self._length, 0).astype(np.int32)
        self._return[done] = 0.0
        self._length[done] = 0
        info = {"final_obs": final_obs, "episode_return": ep_return, "episode_length": ep_length}
        return TimeStep(obs, reward, terminated, truncated, info)

    def spawn(self, num_envs: int, render: bool = False) -> HostEnv:
        """A new, independent ``HostEnv`` of ``num_envs`` copies of the same environment;
        ``render``: each copy made with ``render_mode="rgb_array"`` (``frames``)."""
        if self._build is None:
            raise TypeError("this HostEnv was not made by make_host_env and cannot spawn")
        return self._build(check_int("num_envs", num_envs), render)

    def frames(self) -> list[np.ndarray]:
        """Each copy's ``render()`` (``uint8 [H, W, 3]``) of a ``spawn(n, render=True)``."""
        return [np.asarray(frame) for frame in self.vector_env.call("render")]

    def close(self) -> None:
        self.vector_env.close()


def make_host_env(
    env_id: str,
    num_envs: int = 1,
    max_episode_steps: int | None = None,
    permute_image: bool = False,
    vectorization: str = "sync",
    pixels: bool = False,
    resize: int | None = None,
    grayscale: bool = False,
    stack_size: int = 1,
    **gym_kwargs: Any,
) -> HostEnv:
    """``num_envs`` copies of ``gymnasium.make(env_id, **gym_kwargs)`` as a ``HostEnv``.

    Args:
      env_id: a Gymnasium id (``"LunarLander-v3"``), without the ``gym:`` prefix.
      max_episode_steps: time limit (``truncated``); default the id's registered limit,
        else the env's own ``max_steps`` attribute (MiniGrid), else required.
      permute_image: apply ``PermuteImageWrapper`` (CHW -> HWC).
      vectorization: ``"sync"`` (``SyncVectorEnv``, one process) or ``"async"``
        (``AsyncVectorEnv``, one subprocess per copy).
      pixels, resize, grayscale, stack_size: pixel observations and frame stacks
        (``envs.pixels``; ``pixel_wrapper``).
      gym_kwargs: passed on to ``gymnasium.make``.
    """
    from jaxrl.envs import pixels as px

    opts = px.options(
        dict(pixels=pixels, resize=resize, grayscale=grayscale, stack_size=stack_size)
    )
    if opts.pixels:
        gym_kwargs["render_mode"] = "rgb_array"
    gym = _gymnasium()
    num_envs = check_int("num_envs", num_envs)
    if env_id.startswith(PREFIX):
        env_id = env_id[len(PREFIX) :]
    check_id(env_id)
    if vectorization not in ("sync", "async"):
        raise ConfigError(f"vectorization must be 'sync' or 'async', got {vectorization!r}")
    if max_episode_steps is not None:
        gym_kwargs["max_episode_steps"] = check_int("max_episode_steps", max_episode_steps)

    def make_one(render: bool = False):
        kwargs = dict(gym_kwargs, render_mode="rgb_array") if render else gym_kwargs
        env = gym.make(env_id, **kwargs)
        if isinstance(env.observation_space, gym.spaces.Dict | gym.spaces.Tuple):
            env = flatten_wrapper(env)
        if permute_image:
            env = permute_image_wrapper(env)
        if opts.active:
            env = pixel_wrapper(env, opts)
        return env

    try:
        probe = make_one()
    except TypeError as e:  # an option gymnasium.make or the env does not take
        raise ConfigError(f"gym:{env_id}: {e}") from None
    except gym.error.DependencyNotInstalled as e:
        raise ConfigError(f"gym:{env_id} needs a package that is not installed: {e}") from None
    obs_space, act_space = probe.observation_space, probe.action_space
    limit = probe.spec.max_episode_steps if probe.spec is not None else None
    if limit is None:  # an env that truncates by itself, such as MiniGrid's max_steps
        limit = getattr(probe.unwrapped, "max_steps", None)
    renders = "rgb_array" in (probe.metadata.get("render_modes") or ())
    probe.close()
    if limit is None:
        raise ConfigError(f"gym:{env_id} has no time limit; set --env.max_episode_steps")
    if not isinstance(obs_space, gym.spaces.Box):
        raise ConfigError(f"gym:{env_id} has observation space {obs_space}; expected Box/Dict")
    obs_dtype = "uint8" if obs_space.dtype == np.uint8 else "float32"
    spec = EnvSpec(
        name=PREFIX + env_id,
        obs_shape=tuple(obs_space.shape),
        obs_dtype=obs_dtype,
        action_space=_space_to_jaxrl(act_space, env_id),
        num_envs=num_envs,
        max_episode_steps=int(limit),
    )
    vector_cls = gym.vector.SyncVectorEnv if vectorization == "sync" else gym.vector.AsyncVectorEnv

    def build(n: int, render: bool = False) -> HostEnv:
        mode = gym.vector.AutoresetMode.SAME_STEP
        one = functools.partial(make_one, render)
        vector_env = vector_cls([one] * n, autoreset_mode=mode)
        return HostEnv(vector_env, dataclasses.replace(spec, num_envs=n), build, make_one, renders)

    return build(num_envs)
