"""One greedy episode as a video, for ``python -m jaxrl.evaluate --video`` and for the
periodic videos of ``--run.video_every`` (``recorders.VideoLog``).

``make_episode(agent, config)`` builds, once, ``episode(agent_state, key) -> frames``: one
episode of one env of ``config``'s env acted greedily (``act(..., explore=False)``), each
frame ``uint8 [H, W, 3]`` with ``H`` and ``W`` multiples of 16, the episode's last frame
the one before it ended (the env has reset by then). What draws a frame, by family:

* classic control: the state, drawn with NumPy (``envs.render.render``);
* MinAtar, Atari, the board games: the observation (``envs.render.observation_frame``);
* MuJoCo (``*-mjx``, ``*-brax``): MuJoCo's own renderer (``envs.mujoco_render``),
  headless through EGL or OSMesa;
* ``gym:`` envs: Gymnasium's ``render_mode="rgb_array"`` of a copy made for the episode.

``check(config, agents, what)`` refuses, in one line, an env that cannot render, a run of
independent agents, or a missing imageio, before anything runs; ``write(path, frames,
fps)`` writes a video file with imageio (``pip install 'jaxrl[video]'``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import jax
import numpy as np

from jaxrl.types import ConfigError

if TYPE_CHECKING:
    from jaxrl.experiment.config import Experiment

Frames = list[np.ndarray]
Episode = Callable[[Any, jax.Array], Frames]


def family(config: Experiment, env: Any = None) -> str:
    """How ``config``'s env is drawn: ``"state"``, ``"observation"``, ``"mujoco"``,
    ``"gym"``, or ``""`` where it cannot be (module docstring); ``env``: one made of
    ``config`` (else one is made, and closed, where the family needs it)."""
    from jaxrl import envs
    from jaxrl.envs.render import RENDERERS, renders

    name = config.env.name
    if name in RENDERERS:
        return "state"
    if envs.group(name) == "mujoco":
        return "mujoco"
    made = env if env is not None else config.env.make(1)
    if getattr(made, "host_loop", False):
        if env is None:
            made.close()
        return "gym" if getattr(made, "renders", False) else ""
    return "observation" if renders(name, tuple(made.spec.obs_shape)) else ""


def check(config: Experiment, agents: int, what: str = "--video") -> None:
    """ConfigError (one line, starting with ``what``) unless one episode of ``config``'s
    env can be recorded: a run of one agent, an env that renders, imageio installed."""
    from jaxrl.envs.render import OBSERVED_FAMILIES

    name = config.env.name
    if agents > 1:
        raise ConfigError(f"{what} records a run of one agent; this run has independent agents")
    kind = family(config)
    if not kind:
        raise ConfigError(
            f"{what}: env '{name}' does not render; environments that do: classic control, "
            f"the {', '.join(OBSERVED_FAMILIES)} and mujoco families, and gym: envs with "
            "render_mode 'rgb_array'"
        )
    try:
        import imageio.v2  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what} needs imageio: pip install 'jaxrl[video]'") from None
    if kind == "mujoco":
        from jaxrl.envs.mujoco_render import check as check_gl

        try:
            check_gl()
        except ConfigError as e:
            raise ConfigError(f"{what}: {e}") from None


def _core(env_state: Any) -> Any:
    """The cores' states of a vector env's state (inside a pixel wrapper's, envs/pixels.py)."""
    return getattr(env_state, "inner", env_state).core


def _drawer(config: Experiment, kind: str) -> tuple[Callable[[Any, Any], np.ndarray], int]:
    """``frame(env_state, obs)`` of the first env of a JAX-native env of ``family``
    ``kind``, and its frames per second."""
    from jaxrl.envs.render import observation_frame, render
    from jaxrl.types import main_obs

    name = config.env.name
    if kind == "state":
        fps = 50 if name == "CartPole-v1" else 30
        return lambda state, obs: render(name, np.asarray(_core(state))[0]), fps
    if kind == "mujoco":
        from jaxrl.envs.mujoco_render import make_renderer

        drawing = make_renderer(name, config.env.options)
        first = lambda state: jax.tree.map(lambda x: np.asarray(x[0]), _core(state))
        return lambda state, obs: drawing.frame(first(state)), drawing.fps
    return lambda state, obs: observation_frame(np.asarray(main_obs(obs))[0]), 30


def make_episode(agent: Any, config: Experiment) -> tuple[Episode, int]:
    """``(episode(agent_state, key) -> frames, fps)`` of ``config``'s env (module
    docstring), its env and jitted functions made once; ``check`` has accepted it."""
    act = jax.jit(lambda s, obs, c, k: agent.act(s, obs, c, k, False)[:2])
    env = config.env.make(1)
    if getattr(env, "host_loop", False):
        return _host_episode(agent, env, act), _host_fps(env)
    frame, fps = _drawer(config, family(config, env))
    reset, step = jax.jit(env.reset), jax.jit(env.step)

    def episode(agent_state: Any, key: jax.Array) -> Frames:
        key, reset_key = jax.random.split(key)
        env_state, ts = reset(reset_key)
        carry = agent.init_carry(1)
        frames = [frame(env_state, ts.obs)]
        for _ in range(env.spec.max_episode_steps):
            key, act_key, step_key = jax.random.split(key, 3)
            action, carry = act(agent_state, ts.obs, carry, act_key)
            env_state, ts = step(env_state, action, step_key)
            if bool(ts.terminated[0] | ts.truncated[0]):
                break  # the env has already reset: the episode's frames are complete
            frames.append(frame(env_state, ts.obs))
        return frames

    return episode, fps


def _host_episode(agent: Any, env: Any, act: Any) -> Episode:
    """``episode`` on a copy of host env ``env`` made to render (Gymnasium's ``rgb_array``)."""
    from jaxrl.envs.render import padded
    from jaxrl.runners.host import _seed

    for driver in ("SDL_AUDIODRIVER", "SDL_VIDEODRIVER"):  # pygame draws off screen, silent
        os.environ.setdefault(driver, "dummy")
    copy = env.spawn(1, render=True)
    env.close()

    def episode(agent_state: Any, key: jax.Array) -> Frames:
        key, reset_key = jax.random.split(key)
        ts = copy.reset(_seed(reset_key))
        carry = agent.init_carry(1)
        frames = [padded(copy.frames()[0])]
        for _ in range(copy.spec.max_episode_steps):
            key, act_key = jax.random.split(key)
            action, carry = act(agent_state, ts.obs, carry, act_key)
            ts = copy.step(jax.device_get(action))
            if bool(ts.terminated[0] | ts.truncated[0]):
                break  # the copy has already reset (SAME_STEP autoreset)
            frames.append(padded(copy.frames()[0]))
        return frames

    return episode


def _host_fps(env: Any) -> int:
    fps = env.vector_env.metadata.get("render_fps") if hasattr(env, "vector_env") else None
    return int(fps) if fps else 30


def write(path: str | Path, frames: Frames, fps: int, what: str = "--video") -> None:
    """``frames`` as a video file at ``path`` (its suffix picks the format: ``.mp4``,
    ``.gif``); ConfigError (one line) where it cannot be written."""
    import imageio.v2 as imageio  # check found it

    try:
        with warnings.catch_warnings():  # imageio-ffmpeg forks ffmpeg; JAX warns about fork
            warnings.simplefilter("ignore", RuntimeWarning)
            imageio.mimwrite(path, cast(Any, frames), fps=fps)
    except (ValueError, RuntimeError, OSError) as e:
        raise ConfigError(f"{what}: cannot write '{path}': {e}".splitlines()[0]) from None
