"""JAX-native tasks with observations of several inputs: an image and a feature vector.

Each is a classic-control task (``envs/classic.py``) whose observation is a dict
``{"obs": uint8 [size, size, 1], "velocity": float32 [k]}`` (``EnvSpec.obs_extras``): the
image draws the positions, the vector carries the velocities, so that each input holds
what the other lacks (one image shows no velocity: ``envs/pomdp.py``'s stateless tasks).
The ``multi`` torso (``networks.multi_input``) reads both; every other torso sees the
image alone.

* ``MultiInputCartPole-v1``: CartPole-v1's dynamics; the image draws the cart at ``x``
  (the track ``[-2.4, 2.4]`` across the frame) and the pole at four times its angle (the
  ``+-12`` degrees before termination become ``+-48``); ``velocity`` is ``[x_dot,
  theta_dot]``. ``Discrete(2)``, 500 steps.
* ``MultiInputPendulum-v1``: Pendulum-v1's dynamics; the image is ``pixels.pendulum_frame``
  (the rod at its angle), ``velocity`` is ``[theta_dot]``. ``Box(1,)`` in ``[-2, 2]``,
  200 steps.

``size`` (16) is the frame's side. Drawings are anti-aliased over one pixel, float [0, 1]
rounded to uint8 (the torsos divide integer frames by 255).
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from jaxrl.envs.classic import CARTPOLE, PENDULUM, ControlCore, control_env
from jaxrl.envs.pixels import pendulum_frame
from jaxrl.types import Array, ArraySpec, Env, PRNGKey
from jaxrl.validation import check_int

VELOCITY = "velocity"
DEFAULT_SIZE = 16


def _segment(size: int, x0, y0, tx, ty, half_width: float) -> Array:
    """``[size, size]`` float32 in [0, 1]: the segment from ``(x0, y0)`` to ``(x0 + tx, y0
    + ty)`` (pixel units, x right, y up from the bottom row's edge), ``half_width`` thick,
    anti-aliased over one pixel."""
    rows, cols = jnp.mgrid[0:size, 0:size].astype(jnp.float32) + 0.5
    px, py = cols - x0, (size - rows) - y0
    t = jnp.clip((px * tx + py * ty) / (tx * tx + ty * ty + 1e-12), 0.0, 1.0)
    return jnp.clip(half_width + 0.5 - jnp.hypot(px - t * tx, py - t * ty), 0.0, 1.0)


def cartpole_frame(obs: Array, size: int) -> Array:
    """CartPole drawn from its state ``[x, x_dot, theta, theta_dot]``: ``[size, size]``
    float32 in [0, 1], the cart a bar a quarter of the frame wide at height ``size / 4``
    and the pole ``0.6 size`` long at ``4 theta`` from upright (module docstring)."""
    x, theta = obs[0], obs[2]
    cx = size / 2.0 + x / 2.4 * (size / 2.0 - size / 8.0)
    cy = size / 4.0
    cart = _segment(size, cx - size / 8.0, cy, size / 4.0, 0.0, size / 32.0)
    angle = 4.0 * theta
    length = 0.6 * size
    pole = _segment(size, cx, cy, length * jnp.sin(angle), length * jnp.cos(angle), size / 32.0)
    return jnp.maximum(cart, pole)


def with_image(
    core: ControlCore,
    name: str,
    frame: Callable[[Array, int], Array],
    velocity: tuple[int, ...],
    size: int,
) -> ControlCore:
    """``core`` observing ``{"obs": frame(obs, size) as uint8 [size, size, 1], "velocity":
    obs[velocity]}``, named ``name``."""
    kept = np.asarray(velocity)

    def observe(obs: Array) -> dict[str, Array]:
        image = jnp.round(frame(obs, size) * 255.0).astype(jnp.uint8)[..., None]
        return {"obs": image, VELOCITY: obs[kept]}

    def reset(key: PRNGKey):
        state, obs = core.reset(key)
        return state, observe(obs)

    def step(state: Array, action: Array, key: PRNGKey):
        state, obs, reward, terminated = core.step(state, action, key)
        return state, observe(obs), reward, terminated

    return ControlCore(name, len(velocity), core.action_space, reset, step)


def _env(core: ControlCore, num_envs: int, max_episode_steps: int, size: int) -> Env:
    velocity = (ArraySpec(VELOCITY, (core.obs_size,), "float32"),)
    return control_env(core, num_envs, max_episode_steps, (size, size, 1), "uint8", velocity)


def multi_input_cartpole(
    num_envs: int = 1, *, max_episode_steps: int = 500, size: int = DEFAULT_SIZE
) -> Env:
    """CartPole-v1 as an image of the positions and a vector of the velocities (module
    docstring): ``Discrete(2)``, obs ``{"obs": uint8 [size, size, 1], "velocity": [2]}``."""
    size = check_int("env option size", size, minimum=8)
    core = with_image(CARTPOLE, "MultiInputCartPole-v1", cartpole_frame, (1, 3), size)
    return _env(core, num_envs, max_episode_steps, size)


def multi_input_pendulum(
    num_envs: int = 1, *, max_episode_steps: int = 200, size: int = DEFAULT_SIZE
) -> Env:
    """Pendulum-v1 as an image of the rod and its angular velocity (module docstring):
    ``Box(1,)``, obs ``{"obs": uint8 [size, size, 1], "velocity": [1]}``."""
    size = check_int("env option size", size, minimum=8)
    core = with_image(PENDULUM, "MultiInputPendulum-v1", pendulum_frame, (2,), size)
    return _env(core, num_envs, max_episode_steps, size)
