"""Torsos: observation -> feature vector, and ``QNetwork`` (torso + head)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.noisy import dense


class MLP(nn.Module):
    """A multilayer perceptron with ReLU activations after every layer.

    Input ``[..., *obs_shape]`` is flattened to ``[..., prod(obs_shape)]`` and cast to
    float32; integer (uint8 image) inputs are divided by 255 first.
    Output ``[..., hidden_sizes[-1]]`` float32.

    With ``noisy`` every layer is a ``NoisyLinear`` (Fortunato et al. 2018) named
    ``NoisyLinear_<i>`` instead of ``Dense_<i>``; ``apply`` then needs
    ``rngs={"noise": key}`` unless called with ``deterministic=True`` (mean weights).
    """

    hidden_sizes: Sequence[int]
    obs_ndim: int = 1
    noisy: bool = False
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, obs: jax.Array, deterministic: bool = False) -> jax.Array:
        x = obs.astype(jnp.float32)
        if jnp.issubdtype(obs.dtype, jnp.integer):
            x = x / 255.0
        x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))
        for size in self.hidden_sizes:
            layer = dense(size, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic)
            x = nn.relu(layer(x))
        return x


class NatureCNN(nn.Module):
    """The convolutional torso of Mnih et al. 2015 ("Nature DQN"), then dense layers.

    ``[..., H, W, C]`` (uint8 frames are divided by 255) through Conv(32, 8x8, stride 4),
    Conv(64, 4x4, stride 2), Conv(64, 3x3, stride 1), each VALID-padded with ReLU,
    flattened, then ``Dense(size)`` + ReLU for each of ``hidden_sizes`` (512 in the paper).
    Output ``[..., hidden_sizes[-1]]`` float32 (or the flattened conv features if empty).
    """

    hidden_sizes: Sequence[int] = (512,)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.astype(jnp.float32)
        if jnp.issubdtype(obs.dtype, jnp.integer):
            x = x / 255.0
        for features, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
            conv = nn.Conv(features, (kernel, kernel), (stride, stride), padding="VALID")
            x = nn.relu(conv(x))
        x = x.reshape(x.shape[:-3] + (-1,))
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


class MinAtarCNN(nn.Module):
    """The MinAtar DQN torso of Young & Tian 2019: Conv(16, 3x3, stride 1, VALID) + ReLU,
    flattened, then ``Dense(size)`` + ReLU for each of ``hidden_sizes`` (128 in the paper).

    Input ``[..., 10, 10, C]`` (float 0/1 MinAtar planes; integer inputs are divided by
    255 as in the other torsos). Output ``[..., hidden_sizes[-1]]`` float32.
    """

    hidden_sizes: Sequence[int] = (128,)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.astype(jnp.float32)
        if jnp.issubdtype(obs.dtype, jnp.integer):
            x = x / 255.0
        x = nn.relu(nn.Conv(16, (3, 3), (1, 1), padding="VALID")(x))
        x = x.reshape(x.shape[:-3] + (-1,))
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


def _accepts_deterministic(module: nn.Module) -> bool:
    return "deterministic" in inspect.signature(module.__call__).parameters


class QNetwork(nn.Module):
    """A torso followed by a head: ``obs [..., *obs_shape] -> head output``.

    The output is ``Q [..., num_actions]`` for ``QHead`` / ``DuelingHead`` and logits
    ``[..., num_actions, num_atoms]`` for the categorical heads.

    ``deterministic`` is passed on to the torso and the head when their ``__call__``
    takes a ``deterministic`` argument (the modules of ``jaxrl.networks`` do), so that a
    network with noisy layers can be evaluated with its mean weights:
    ``net.apply(params, obs, deterministic=True)``; a noisy network otherwise needs
    ``rngs={"noise": key}``.
    """

    torso: nn.Module
    head: nn.Module

    @nn.compact
    def __call__(self, obs: jax.Array, deterministic: bool = False) -> jax.Array:
        if deterministic:
            torso_kw = {"deterministic": True} if _accepts_deterministic(self.torso) else {}
            head_kw = {"deterministic": True} if _accepts_deterministic(self.head) else {}
        else:
            torso_kw, head_kw = {}, {}
        return self.head(self.torso(obs, **torso_kw), **head_kw)
