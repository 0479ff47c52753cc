"""What every torso does to its input first, and the names of the built-in torsos."""

from __future__ import annotations

import jax
import jax.numpy as jnp

TORSOS = ("auto", "mlp", "nature", "impala", "minatar", "multi")


def scale_obs(obs: jax.Array) -> jax.Array:
    """float32, integer (uint8 frame) inputs divided by 255."""
    x = obs.astype(jnp.float32)
    return x / 255.0 if jnp.issubdtype(obs.dtype, jnp.integer) else x
