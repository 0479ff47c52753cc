"""Frames of the MuJoCo envs (``*-mjx``, ``*-brax``), drawn by MuJoCo's own renderer.

``make_renderer(name, options).frame(core) -> uint8 [HEIGHT, WIDTH, 3]`` draws one env's
state (``VectorEnvState.core`` of one env: MJX's ``Data`` or Brax's ``State``) with
``mujoco.Renderer``: the joint positions are copied into a CPU ``MjData`` of the same
model (Gymnasium's XML for MJX, Brax's ``sys.mj_model`` for Brax), ``mj_kinematics`` places
the bodies, and a camera tracking the torso looks from the side at Gymnasium's
``DEFAULT_CAMERA_CONFIG`` distance and elevation.

Headless: MuJoCo picks its OpenGL platform from ``MUJOCO_GL`` when ``mujoco`` is first
imported. ``headless_gl()`` (run by ``jaxrl.envs`` on import) sets ``MUJOCO_GL=egl`` where
none is set, no display is, and libEGL is found (Debian: ``libegl1``, ``libegl-mesa0``:
Mesa's software rasterizer renders without a GPU); ``MUJOCO_GL=osmesa`` (``libosmesa6``)
works too. ``check()`` makes one OpenGL context, so an env that cannot render here is
refused in one line before anything runs.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from jaxrl.types import ConfigError

HEIGHT, WIDTH = 240, 320  # multiples of 16, as video codecs want
#: task -> Gymnasium v5's camera distance (``DEFAULT_CAMERA_CONFIG``)
DISTANCE = {"HalfCheetah": 4.0, "Hopper": 3.0, "Walker2d": 4.0, "Ant": 4.0, "Humanoid": 4.0}
ELEVATION = -20.0


def headless_gl() -> None:
    """``MUJOCO_GL=egl`` where it is unset, no display is set and libEGL is found (a
    desktop keeps MuJoCo's default, GLFW); call before ``mujoco`` is imported."""
    if sys.platform != "linux" or "MUJOCO_GL" in os.environ:
        return
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return
    if ctypes.util.find_library("EGL") is not None:
        os.environ["MUJOCO_GL"] = "egl"


@functools.cache
def check() -> None:
    """ConfigError (one line) unless mujoco imports and makes an OpenGL context here."""
    try:
        import mujoco
    except ImportError:
        raise ConfigError("MuJoCo rendering needs mujoco: pip install 'jaxrl[mujoco]'") from None
    try:
        with warnings.catch_warnings():  # GLFW warns before it fails without a display
            warnings.simplefilter("ignore")
            mujoco.Renderer(mujoco.MjModel.from_xml_string("<mujoco/>"), 16, 16).close()
    except Exception as e:  # noqa: BLE001 (GLFW, EGL and OSMesa fail each in their own way)
        gl = os.environ.get("MUJOCO_GL", "glfw")
        raise ConfigError(
            f"MuJoCo cannot render here (MUJOCO_GL={gl}: {type(e).__name__}): set MUJOCO_GL=egl "
            "(Debian: apt-get install libegl1 libegl-mesa0) or MUJOCO_GL=osmesa (libosmesa6)"
        ) from None


class Scene(NamedTuple):
    """What drawing one MuJoCo env needs: its CPU model, ``qpos(core) -> [nq]`` of one
    env's core state, and the seconds between two env steps."""

    model: Any
    qpos: Callable[[Any], Any]
    dt: float


def _scene(name: str, options: Mapping[str, Any]) -> Scene:
    """The ``Scene`` of env ``name`` (``HalfCheetah-mjx``) made with ``options``."""
    import mujoco

    task, _, suffix = name.rpartition("-")
    backend = options.get("backend", "mjx" if suffix == "mjx" else "brax")
    if backend == "mjx":
        from jaxrl.envs.mjx import TASKS, asset_path

        model = mujoco.MjModel.from_xml_path(asset_path(TASKS[task].xml))
        return Scene(model, lambda core: core.qpos, model.opt.timestep * TASKS[task].frame_skip)
    from brax import envs as brax_envs

    from jaxrl.envs.mujoco import brax_name

    pipeline = "generalized" if backend == "brax" else backend
    env = brax_envs.get_environment(brax_name(task), backend=pipeline)
    return Scene(env.sys.mj_model, lambda core: core.pipeline_state.q, float(env.dt))


class Drawing(NamedTuple):
    """``frame(core) -> uint8 [HEIGHT, WIDTH, 3]`` of one env's core state, and the frames
    per second of real time (one per env step)."""

    frame: Callable[[Any], np.ndarray]
    fps: int


def make_renderer(name: str, options: Mapping[str, Any]) -> Drawing:
    """The ``Drawing`` of MuJoCo env ``name`` (canonical: ``HalfCheetah-mjx``) made with
    ``options`` (ConfigError, one line, where MuJoCo cannot render: ``check``)."""
    import mujoco

    check()
    scene = _scene(name, options)
    model, data = scene.model, mujoco.MjData(scene.model)
    renderer = mujoco.Renderer(model, HEIGHT, WIDTH)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = 1  # the torso of every task
    camera.distance = DISTANCE.get(name.rpartition("-")[0], 4.0)
    camera.elevation, camera.azimuth = ELEVATION, 90.0  # from the side (-y), x to the right

    def frame(core: Any) -> np.ndarray:
        data.qpos[:] = np.asarray(scene.qpos(core), np.float64)
        mujoco.mj_kinematics(model, data)
        renderer.update_scene(data, camera)
        return renderer.render().copy()

    return Drawing(frame, max(1, round(1.0 / scene.dt)))
