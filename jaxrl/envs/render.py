"""RGB frames of the environments, drawn with NumPy: classic control from the state, the
image-like families (MinAtar, Atari, the board games) from the observation.

``render(name, state) -> uint8 [H, W, 3]`` draws one environment's state (a row of
``VectorEnvState.core``: ``[x, x_dot, theta, theta_dot]`` for CartPole-v1, ``[th1, th2,
dth1, dth2]`` for Acrobot-v1, ``[position, velocity]`` for the mountain cars, ``[theta,
thdot]`` for Pendulum-v1) in the layout of Gymnasium's pictures. Used by
``python -m jaxrl.evaluate --video``; ``renderable()`` lists the names it knows.

``observation_frame(obs) -> uint8 [H, W, 3]`` draws what an agent of an image-like family
sees: pixels (``uint8 [H, W, C]``, Atari's stacked grayscale frames: the newest frame,
each pixel 3x3) or a grid of feature planes (``[H, W, C]`` of 0/1, MinAtar's and the
board games': each cell 24 px, coloured by the last plane set in it, black where none
is). ``renders(name)`` says whether env ``name`` has frames of either kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

HEIGHT, WIDTH = 240, 384  # multiples of 16, as video codecs want
BLACK, CART, POLE, BLUE = (0, 0, 0), (40, 40, 40), (202, 152, 101), (60, 90, 200)


def _canvas() -> np.ndarray:
    return np.full((HEIGHT, WIDTH, 3), 255, np.uint8)


def _segment(canvas: np.ndarray, p0, p1, width: float, color) -> None:
    """Paints the pixels within ``width / 2`` of the segment ``p0 -> p1`` (x right, y up)."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    px, py = xs + 0.5, HEIGHT - ys - 0.5
    (x0, y0), (x1, y1) = p0, p1
    dx, dy = x1 - x0, y1 - y0
    t = np.clip(((px - x0) * dx + (py - y0) * dy) / max(dx * dx + dy * dy, 1e-9), 0.0, 1.0)
    dist = np.hypot(px - (x0 + t * dx), py - (y0 + t * dy))
    canvas[dist <= width / 2] = color


def _box(canvas: np.ndarray, left: float, bottom: float, right: float, top: float, color) -> None:
    rows = slice(max(0, int(HEIGHT - top)), max(0, int(HEIGHT - bottom)))
    cols = slice(max(0, int(left)), max(0, int(right)))
    canvas[rows, cols] = color


def cartpole(state: np.ndarray) -> np.ndarray:
    x, _, theta, _ = (float(v) for v in state)
    canvas, scale = _canvas(), WIDTH / 4.8
    cart_x, cart_y = x * scale + WIDTH / 2, 60.0
    _segment(canvas, (0, cart_y), (WIDTH, cart_y), 1, BLACK)
    _box(canvas, cart_x - 20, cart_y - 10, cart_x + 20, cart_y + 10, CART)
    tip = (cart_x + 2 * 0.5 * scale * math.sin(theta), cart_y + 2 * 0.5 * scale * math.cos(theta))
    _segment(canvas, (cart_x, cart_y), tip, 8, POLE)
    return canvas


def acrobot(state: np.ndarray) -> np.ndarray:
    th1, th2 = float(state[0]), float(state[1])
    canvas, scale, origin = _canvas(), HEIGHT / 4.4, (WIDTH / 2, HEIGHT / 2)
    p1 = (origin[0] + scale * math.sin(th1), origin[1] - scale * math.cos(th1))
    p2 = (p1[0] + scale * math.sin(th1 + th2), p1[1] - scale * math.cos(th1 + th2))
    _segment(canvas, (0, origin[1] + scale), (WIDTH, origin[1] + scale), 1, BLACK)
    _segment(canvas, origin, p1, 8, BLUE)
    _segment(canvas, p1, p2, 8, BLUE)
    return canvas


def mountain_car(state: np.ndarray) -> np.ndarray:
    position = float(state[0])
    canvas, scale = _canvas(), WIDTH / 1.8
    height = lambda x: math.sin(3 * x) * 0.45 + 0.55
    xs = np.linspace(-1.2, 0.6, 60)
    for a, b in zip(xs[:-1], xs[1:], strict=True):
        _segment(
            canvas,
            ((a + 1.2) * scale, height(a) * scale),
            ((b + 1.2) * scale, height(b) * scale),
            2,
            BLACK,
        )
    flag = (0.5 + 1.2) * scale
    _segment(canvas, (flag, height(0.5) * scale), (flag, height(0.5) * scale + 30), 2, BLACK)
    car = ((position + 1.2) * scale, height(position) * scale + 8)
    _segment(canvas, car, car, 16, CART)
    return canvas


def pendulum(state: np.ndarray) -> np.ndarray:
    theta = float(state[0])
    canvas, length, origin = _canvas(), HEIGHT * 0.4, (WIDTH / 2, HEIGHT / 2)
    tip = (origin[0] + length * math.sin(theta), origin[1] + length * math.cos(theta))
    _segment(canvas, origin, tip, 12, (204, 77, 77))
    _segment(canvas, origin, origin, 6, BLACK)
    return canvas


RENDERERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "CartPole-v1": cartpole,
    "Acrobot-v1": acrobot,
    "MountainCar-v0": mountain_car,
    "MountainCarContinuous-v0": mountain_car,
    "Pendulum-v1": pendulum,
}


def renderable() -> list[str]:
    return sorted(RENDERERS)


def render(name: str, state: np.ndarray) -> np.ndarray:
    """One frame ``uint8 [HEIGHT, WIDTH, 3]`` of env ``name`` in ``state`` (one env's core)."""
    return RENDERERS[name](np.asarray(state))


OBSERVED_FAMILIES = ("minatar", "atari", "games")  # drawn from the observation
CELL, PIXEL = 24, 3  # px per grid cell, per image pixel
PALETTE = np.array(  # one colour per feature plane (cycled past 10)
    [[230, 80, 60], [250, 200, 60], [90, 190, 90], [70, 130, 220], [200, 110, 210],
     [240, 150, 60], [120, 220, 220], [180, 180, 180], [150, 90, 40], [255, 255, 255]],
    np.uint8,
)  # fmt: skip


def renders(name: str, obs_shape: tuple[int, ...]) -> bool:
    """Whether env ``name`` (canonical) with observations of ``obs_shape`` (one env's) has
    frames: its state's, or its observation's where that is an image or a grid of planes
    ``[H, W, C]`` of an image-like family."""
    from jaxrl import envs

    image = len(obs_shape) == 3 and envs.family(name) in OBSERVED_FAMILIES
    return name in RENDERERS or image


def observation_frame(obs: np.ndarray) -> np.ndarray:
    """One frame ``uint8 [H', W', 3]`` of one env's observation ``[H, W, C]`` (module
    docstring), padded with black to multiples of 16 rows and columns."""
    obs = np.asarray(obs)
    if obs.ndim != 3:
        raise ValueError(f"an observation frame needs [H, W, C], got {obs.shape}")
    if obs.dtype == np.uint8:
        image = obs if obs.shape[-1] == 3 else np.repeat(obs[..., -1:], 3, axis=-1)
        frame = image.repeat(PIXEL, 0).repeat(PIXEL, 1)
    else:
        grid = np.zeros((*obs.shape[:2], 3), np.uint8)
        for plane in range(obs.shape[-1]):
            grid[obs[..., plane] > 0] = PALETTE[plane % len(PALETTE)]
        frame = grid.repeat(CELL, 0).repeat(CELL, 1)
    return padded(frame)


def padded(frame: np.ndarray) -> np.ndarray:
    """``frame`` ``[H, W, 3]`` padded with black to multiples of 16 rows and columns (the
    macroblocks of video codecs)."""
    pad = [(0, -n % 16) for n in frame.shape[:2]] + [(0, 0)]
    return np.pad(frame, pad)
