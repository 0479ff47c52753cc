"""jaxrl's Gymnasium observation wrappers, as Gymnasium's own are written: importable
classes that record their constructor arguments (``gymnasium.utils.RecordConstructorArgs``),
so that an env's ``spec`` rebuilds the whole stack and Gymnasium's
``utils.env_checker.check_env`` passes (it rebuilds the env from its spec). This module
imports gymnasium (the ``gym`` extra): ``envs.gymnasium`` imports it only once gymnasium
is found.

* ``FlattenWrapper`` (as RLHive's): any observation (a ``Dict`` or ``Tuple``: MiniGrid's
  ``{"image", "direction", "mission"}``) becomes one flat float32 vector ``[D]`` through
  ``gymnasium.spaces.flatten`` of the space without its non-numeric entries (``Text``,
  MiniGrid's ``MissionSpace``): a ``Discrete(n)`` entry an ``n``-long one-hot vector, a
  ``Box`` raveled and cast to float32 (values unchanged).
* ``PermuteImageWrapper``: image obs ``transpose(axes)``; default CHW -> HWC (RLHive's
  goes HWC -> CHW, ``axes=(2, 0, 1)``, for PyTorch; jaxrl's Flax convolutions want
  channels last).
* ``PixelWrapper``: uint8 frames ``[H, W, C * stack_size]``: the env's ``rgb_array``
  rendering (``pixels``) or its image observation, grayscale and resized
  (``pixels.host_frame``), the ``stack_size`` latest stacked on the channel axis, oldest
  first, ``stack_size`` copies of the first frame after a reset (``pixels.push``).
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs

from jaxrl.envs import pixels as px
from jaxrl.types import ConfigError

NUMERIC = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)


def numeric_space(space: spaces.Space) -> spaces.Space | None:
    """``space`` without its non-numeric entries (anything but ``NUMERIC``); None if none."""
    if isinstance(space, spaces.Dict):
        kept = {k: numeric_space(s) for k, s in space.spaces.items()}
        return spaces.Dict({k: s for k, s in kept.items() if s is not None})
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([s for s in map(numeric_space, space.spaces) if s is not None])
    return space if isinstance(space, NUMERIC) else None


def numeric_obs(space: spaces.Space, obs: Any) -> Any:
    """``obs`` of ``space`` without its non-numeric entries (matches ``numeric_space``)."""
    if isinstance(space, spaces.Dict):
        return {
            k: numeric_obs(s, obs[k])
            for k, s in space.spaces.items()
            if numeric_space(s) is not None
        }
    if isinstance(space, spaces.Tuple):
        return tuple(
            numeric_obs(s, o)
            for s, o in zip(space.spaces, obs, strict=True)
            if numeric_space(s) is not None
        )
    return obs


class FlattenWrapper(gym.ObservationWrapper, RecordConstructorArgs):
    """Any observation -> flat float32 ``[D]``, ``D = gymnasium.spaces.flatdim`` of the
    numeric part of the space (module docstring)."""

    def __init__(self, env: gym.Env):
        RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.source = env.observation_space
        self.numeric = numeric_space(self.source)
        flat = spaces.flatten_space(self.numeric)
        low, high = flat.low.astype(np.float32), flat.high.astype(np.float32)
        self.observation_space = spaces.Box(low, high, dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        kept = numeric_obs(self.source, observation)
        return spaces.flatten(self.numeric, kept).astype(np.float32)


class PermuteImageWrapper(gym.ObservationWrapper, RecordConstructorArgs):
    """Image obs ``transpose(axes)``; default CHW -> HWC. ConfigError unless the
    observation is a Box of ``len(axes)`` dimensions."""

    def __init__(self, env: gym.Env, axes: tuple[int, ...] = (1, 2, 0)):
        RecordConstructorArgs.__init__(self, axes=tuple(axes))
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != len(axes):
            raise ConfigError(f"permute_image needs a {len(axes)}-d Box observation, got {space}")
        self.axes = tuple(axes)
        self.observation_space = spaces.Box(
            space.low.transpose(axes), space.high.transpose(axes), dtype=space.dtype
        )

    def observation(self, observation: Any) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(observation, self.axes))


class PixelWrapper(gym.Wrapper, RecordConstructorArgs):
    """uint8 frame stacks ``[H, W, C * stack_size]`` of the rendering (``pixels``) or of
    the image observation (module docstring). ConfigError where the frames are not images
    ``[H, W, C]``."""

    def __init__(
        self,
        env: gym.Env,
        pixels: bool = False,
        resize: int | None = None,
        grayscale: bool = False,
        stack_size: int = 1,
    ):
        RecordConstructorArgs.__init__(
            self, pixels=pixels, resize=resize, grayscale=grayscale, stack_size=stack_size
        )
        gym.Wrapper.__init__(self, env)
        self.pixels, self.resize, self.grayscale = pixels, resize, grayscale
        self.stack_size = stack_size
        if pixels:
            env.reset()
            shape = np.shape(env.render())
        else:
            shape = env.observation_space.shape or ()
        if len(shape) != 3:
            raise ConfigError(
                f"{env.spec.id if env.spec else env}: resize, grayscale and stack_size need "
                f"image observations, got shape {shape}; add pixels: true"
            )
        h, w, c = px.host_frame(np.zeros(shape, np.uint8), resize, grayscale).shape
        self.observation_space = spaces.Box(0, 255, (h, w, c * stack_size), np.uint8)
        self.frames: np.ndarray | None = None

    def frame(self, observation: Any) -> np.ndarray:
        image = self.env.render() if self.pixels else observation
        return px.host_frame(np.asarray(image), self.resize, self.grayscale)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.frames = np.concatenate([self.frame(observation)] * self.stack_size, axis=-1)
        return self.frames, info

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        frames = cast(np.ndarray, self.frames)  # reset first (Gymnasium's OrderEnforcing)
        frame = self.frame(observation)
        self.frames = px.push(frames[None], frame[None], np.zeros(1, bool), np)[0]
        return self.frames, reward, terminated, truncated, info
