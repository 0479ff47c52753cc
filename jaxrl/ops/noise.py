r"""Exploration noise for continuous actions as pure functions over explicit state.

The generators of machin (``machin.frame.noise.generator``), rewritten so that every random
draw comes from a PRNG key and every piece of state is an array the caller carries:

* ``gaussian_noise``: :math:`\mu + \sigma\varepsilon` (machin's ``NormalNoiseGen``).
* ``clipped_gaussian_noise``: ``clip(mu + sigma * eps, low, high)`` (``ClippedNormalNoiseGen``
  with ``nmin``/``nmax``).
* ``uniform_noise``: :math:`U(\text{low}, \text{high})` (``UniformNoiseGen`` with
  ``umin``/``umax``).
* ``ou_init`` / ``ou_step``: the Ornstein-Uhlenbeck process of
  ``OrnsteinUhlenbeckNoiseGen(shape, mu, sigma, theta=0.15, dt=1e-2, x0=None)``,
  discretized by Euler-Maruyama (Uhlenbeck & Ornstein 1930; DDPG, Lillicrap et al. 2016):

  .. math:: x_{n+1} = x_n + \theta(\mu - x_n)\,\Delta t + \sigma\sqrt{\Delta t}\,\varepsilon_n,
            \quad \varepsilon_n \sim \mathcal N(0, I),

  its state ``x`` (``[num_envs, *action_shape]``) carried by the caller (an agent keeps it
  in its state and resets it per environment at episode ends, as machin's ``reset()``).

Every parameter (``mu``, ``sigma``, ``low``, ``high``, ``theta``, ``dt``) is a scalar or an
array broadcastable to the action shape, so each action dimension may have its own
(machin's per-dimension ``noise_param`` lists); parameters may be traced (e.g. read from an
agent's ``hparams`` in a vmapped sweep).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import FloatOrArray

Array = jax.Array


def gaussian_noise(
    key: jax.Array, shape: tuple[int, ...], mu: FloatOrArray = 0.0, sigma: FloatOrArray = 1.0
) -> Array:
    """``mu + sigma * N(0, 1)`` of ``shape`` (float32); ``mu``/``sigma`` broadcast to it."""
    return mu + sigma * jax.random.normal(key, shape, jnp.float32)


def clipped_gaussian_noise(
    key: jax.Array,
    shape: tuple[int, ...],
    mu: FloatOrArray = 0.0,
    sigma: FloatOrArray = 1.0,
    low: ArrayLike = -1.0,
    high: ArrayLike = 1.0,
) -> Array:
    """``clip(mu + sigma * N(0, 1), low, high)`` of ``shape`` (float32)."""
    return jnp.clip(gaussian_noise(key, shape, mu, sigma), low, high)


def uniform_noise(
    key: jax.Array, shape: tuple[int, ...], low: FloatOrArray = 0.0, high: ArrayLike = 1.0
) -> Array:
    """``low + (high - low) * U[0, 1)`` of ``shape`` (float32), per-dimension bounds."""
    return low + (jnp.asarray(high) - low) * jax.random.uniform(key, shape, jnp.float32)


def ou_init(shape: tuple[int, ...], x0: ArrayLike | None = None) -> Array:
    """The OU state at the start: ``x0`` broadcast to ``shape``, or zeros (machin's default)."""
    if x0 is None:
        return jnp.zeros(shape, jnp.float32)
    return jnp.broadcast_to(jnp.asarray(x0, jnp.float32), shape)


def ou_step(
    x: ArrayLike,
    key: jax.Array,
    mu: ArrayLike = 0.0,
    sigma: ArrayLike = 1.0,
    theta: ArrayLike = 0.15,
    dt: ArrayLike = 1e-2,
) -> tuple[Array, Array]:
    r"""One Euler-Maruyama step of the OU process (module docstring).

    Args:
      x: ``[...]`` float32 state :math:`x_n`.
      key: PRNG key for :math:`\varepsilon_n` (one normal draw of ``x``'s shape).
      mu, sigma, theta, dt: scalars or arrays broadcastable to ``x`` (machin's defaults).

    Returns:
      ``(noise, new_state)``, both :math:`x_{n+1}` (the noise *is* the new state).
    """
    x = jnp.asarray(x, jnp.float32)
    eps = jax.random.normal(key, x.shape, jnp.float32)
    x = x + theta * (mu - x) * dt + sigma * jnp.sqrt(dt) * eps
    return x, x
