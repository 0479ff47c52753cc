"""Heads: feature vector -> action values."""

from __future__ import annotations

import flax.linen as nn
import jax


class QHead(nn.Module):
    """Linear action-value head: ``[..., F] -> [..., num_actions]`` (Mnih et al. 2015)."""

    num_actions: int

    @nn.compact
    def __call__(self, features: jax.Array) -> jax.Array:
        return nn.Dense(self.num_actions)(features)


class DuelingHead(nn.Module):
    """Dueling head (Wang et al. 2016, eq. 9): ``Q = V + A - mean_a A``.

    ``[..., F] -> [..., num_actions]``; value and advantage streams each have one hidden
    layer of ``hidden_size`` ReLU units when ``hidden_size > 0``, else are linear.
    """

    num_actions: int
    hidden_size: int = 0

    @nn.compact
    def __call__(self, features: jax.Array) -> jax.Array:
        v, a = features, features
        if self.hidden_size:
            v = nn.relu(nn.Dense(self.hidden_size)(v))
            a = nn.relu(nn.Dense(self.hidden_size)(a))
        value = nn.Dense(1)(v)
        advantage = nn.Dense(self.num_actions)(a)
        return value + advantage - advantage.mean(axis=-1, keepdims=True)
