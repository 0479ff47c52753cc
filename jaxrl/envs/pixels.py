"""Pixel observations and frame stacks for any environment, chosen by env options.

``--env.pixels true --env.resize 64 --env.grayscale true --env.stack_size 3`` (the
options of ``OPTIONS``, given to ``envs.make``) turn an environment's observation into
``uint8 [H, W, C * stack_size]`` frames, the ``k`` latest stacked on the channel axis,
oldest first (``frames[..., :C]`` is ``t - k + 1``, ``frames[..., -C:]`` is ``t``): the
channels-last layout of jaxrl's Atari env and of Emote's ``FrameStack`` (``frame_stack``)
and RLHive's ``stack_size``. At the start of an episode the stack holds ``k`` copies of
its first frame (Gymnasium's ``FrameStackObservation(padding_type="reset")``).

* ``pixels``: observe a rendering instead of the state. JAX-native envs are drawn in JAX
  from their vector observation by a renderer of ``RENDERERS`` (Pendulum-v1), so the
  wrapped env still runs inside the fused runner; ``gym:`` envs are rendered by Gymnasium
  (``render_mode="rgb_array"``, ``AddRenderObservation``) in ``envs.gymnasium``.
* ``resize``: square side of the frame (nearest-neighbour sampling on the host; JAX
  renderers draw at that size directly); ``grayscale``: ITU-R 601 luma
  ``0.299 R + 0.587 G + 0.114 B`` (as OpenCV's and Emote's ``WarpFrame``), one channel.
* ``stack_size``: frames per observation (1: none). Applies to image observations too
  (e.g. MinAtar's, whose dtype is kept).

Frames are stored as uint8 (the torsos divide integer frames by 255). ``final_obs`` (the
true last observation of an ending episode) is the stack with the episode's last frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.types import ConfigError, Env
from jaxrl.validation import check_int

OPTIONS = ("pixels", "resize", "grayscale", "stack_size")
LUMA = (0.299, 0.587, 0.114)
DEFAULT_SIZE = 64


def pendulum_frame(obs: jax.Array, size: int) -> jax.Array:
    """Pendulum-v1 drawn from its observation ``[cos th, sin th, thdot]``: ``[size, size]``
    float32 in [0, 1], a white rod of length 0.4 size from the centre (up is ``th = 0``,
    Gymnasium's picture) on black, anti-aliased over one pixel."""
    cos, sin = obs[0], obs[1]
    centre = size / 2.0
    rows, cols = jnp.mgrid[0:size, 0:size].astype(jnp.float32) + 0.5
    px, py = cols - centre, centre - rows  # x right, y up
    tx, ty = 0.4 * size * sin, 0.4 * size * cos
    t = jnp.clip((px * tx + py * ty) / (tx * tx + ty * ty), 0.0, 1.0)
    dist = jnp.hypot(px - t * tx, py - t * ty)
    return jnp.clip(size / 16.0 + 0.5 - dist, 0.0, 1.0)


RENDERERS: dict[str, Callable[[jax.Array, int], jax.Array]] = {"Pendulum-v1": pendulum_frame}


@dataclasses.dataclass(frozen=True)
class PixelOptions:
    """The checked options (module docstring).

    Attributes:
      pixels: observe a rendering instead of the state (JAX-native renderers, or
        Gymnasium's for ``gym:`` envs).
      resize: the frame's square side in pixels; None: 64.
      grayscale: one luma channel instead of RGB.
      stack_size: the latest frames stacked on the channel axis per observation (1: none).
    """

    pixels: bool = False
    resize: int | None = None
    grayscale: bool = False
    stack_size: int = 1

    @property
    def active(self) -> bool:
        return self.pixels or self.resize is not None or self.grayscale or self.stack_size > 1


def options(kwargs: dict[str, Any]) -> PixelOptions:
    """Pops ``OPTIONS`` out of ``kwargs`` and checks them (one-line ``ConfigError``)."""
    if "frame_stack" in kwargs:  # Emote's make_vision_box2d_env(frame_stack=...)
        if "stack_size" in kwargs:
            raise ConfigError("env options 'frame_stack' and 'stack_size' are the same; give one")
        kwargs["stack_size"] = kwargs.pop("frame_stack")
    given = {k: kwargs.pop(k) for k in OPTIONS if k in kwargs}
    for key in ("pixels", "grayscale"):
        if key in given and not isinstance(given[key], bool):
            raise ConfigError(f"env option {key} must be true or false, got {given[key]!r}")
    if given.get("resize") is not None:
        given["resize"] = check_int("env option resize", given["resize"])
    if "stack_size" in given:
        given["stack_size"] = check_int("env option stack_size", given["stack_size"])
    return PixelOptions(**given)


def push(frames: Any, frame: Any, done: Any, xp: Any = jnp) -> Any:
    """The stack after ``frame``: ``frames [N, H, W, C*k]`` shifted by one frame with
    ``frame [N, H, W, C]`` last, or ``k`` copies of ``frame`` where ``done [N]`` (a new
    episode's first frame). ``xp``: ``jax.numpy`` or ``numpy``."""
    c = frame.shape[-1]
    k = frames.shape[-1] // c
    shifted = xp.concatenate([frames[..., c:], frame], axis=-1)
    fresh = xp.concatenate([frame] * k, axis=-1)
    return xp.where(done.reshape((-1, 1, 1, 1)), fresh, shifted)


class PixelState(NamedTuple):
    """The wrapped env's state and the current stack ``[N, H, W, C*k]``."""

    inner: Any
    frames: jax.Array


def wrap(env: Env, opts: PixelOptions) -> Env:
    """``env`` (JAX-native) with pixel observations and/or frame stacks (module docstring).

    Raises ``ConfigError`` for ``pixels`` on an env with no JAX renderer, or ``resize`` /
    ``grayscale`` / ``stack_size`` on vector observations without ``pixels``."""
    spec = env.spec
    if spec.obs_extras:
        raise ConfigError(f"env {spec.name!r}: pixel options need a plain observation array")
    if opts.pixels and spec.name not in RENDERERS:
        raise ConfigError(
            f"env {spec.name!r} has no JAX renderer for pixels; renderable: "
            f"{', '.join(RENDERERS)}; or use gym:{spec.name} (rendered by Gymnasium)"
        )
    if not opts.pixels and len(spec.obs_shape) != 3:
        raise ConfigError(
            f"env {spec.name!r} has vector observations {spec.obs_shape}: resize, "
            "grayscale and stack_size need images; add --env.pixels true"
        )
    frame_fn = _frame_fn(spec, opts)
    probe = jax.eval_shape(frame_fn, jax.ShapeDtypeStruct((1, *spec.obs_shape), spec.obs_dtype))
    h, w, c = probe.shape[1:]
    k = opts.stack_size

    def reset(key):
        inner, ts = env.reset(key)
        frame = frame_fn(ts.obs)
        frames = jnp.concatenate([frame] * k, axis=-1)
        info = {**ts.info, "final_obs": frames}
        return PixelState(inner, frames), ts._replace(obs=frames, info=info)

    def step(state, action, key):
        inner, ts = env.step(state.inner, action, key)
        done = ts.terminated | ts.truncated
        final = push(state.frames, frame_fn(ts.info["final_obs"]), jnp.zeros_like(done))
        frames = push(state.frames, frame_fn(ts.obs), done)
        info = {**ts.info, "final_obs": final}
        return PixelState(inner, frames), ts._replace(obs=frames, info=info)

    new_spec = dataclasses.replace(spec, obs_shape=(h, w, c * k), obs_dtype=str(probe.dtype))
    return env._replace(spec=new_spec, reset=reset, step=step)


def _frame_fn(spec: Any, opts: PixelOptions) -> Callable[[jax.Array], jax.Array]:
    """``obs [N, *obs_shape] -> frame [N, H, W, C]``: rendered (uint8), grayscale, resized."""
    size = opts.resize or DEFAULT_SIZE

    def frame(obs):
        if opts.pixels:
            gray = jax.vmap(lambda o: RENDERERS[spec.name](o, size))(obs)[..., None]
            x = gray if opts.grayscale else jnp.concatenate([gray] * 3, axis=-1)
            return jnp.round(x * 255.0).astype(jnp.uint8)
        x = obs
        if opts.grayscale and x.shape[-1] == 3:
            luma = jnp.tensordot(x.astype(jnp.float32), jnp.asarray(LUMA), axes=([-1], [0]))
            luma = jnp.round(luma) if obs.dtype == jnp.uint8 else luma
            x = luma[..., None].astype(obs.dtype)
        if opts.resize is not None:
            rows = (jnp.arange(size) * x.shape[1]) // size
            cols = (jnp.arange(size) * x.shape[2]) // size
            x = x[:, rows][:, :, cols]
        return x

    return frame


def host_frame(obs: np.ndarray, resize: int | None, grayscale: bool) -> np.ndarray:
    """One host frame ``[H, W, C]`` -> uint8 ``[resize, resize, 1 or C]``: luma if
    ``grayscale``, nearest-neighbour resized (rows ``i * H // resize``)."""
    x = np.asarray(obs)
    if grayscale and x.shape[-1] == 3:
        x = np.round(x.astype(np.float32) @ np.asarray(LUMA, np.float32))[..., None]
    if resize is not None:
        rows = (np.arange(resize) * x.shape[0]) // resize
        cols = (np.arange(resize) * x.shape[1]) // resize
        x = x[rows][:, cols]
    return x.astype(np.uint8)
