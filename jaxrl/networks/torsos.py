"""Torsos: observation -> feature vector."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    """A multilayer perceptron with ReLU activations after every layer.

    Input ``[..., *obs_shape]`` is flattened to ``[..., prod(obs_shape)]`` and cast to
    float32; integer (uint8 image) inputs are divided by 255 first.
    Output ``[..., hidden_sizes[-1]]`` float32.
    """

    hidden_sizes: Sequence[int]
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.astype(jnp.float32)
        if jnp.issubdtype(obs.dtype, jnp.integer):
            x = x / 255.0
        x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


class QNetwork(nn.Module):
    """A torso followed by a head: ``obs [..., *obs_shape] -> Q [..., num_actions]``."""

    torso: nn.Module
    head: nn.Module

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return self.head(self.torso(obs))
