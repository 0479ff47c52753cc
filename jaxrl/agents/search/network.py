"""The policy-value network of the search agents: a small ResNet over the board planes.

The shape of pgx's AlphaZero baseline network (Koyamada et al. 2023, ``examples/
alphazero``; Silver et al. 2018's two-headed residual tower), made small for a CPU and
without batch normalization (the pre-activation residual blocks of ``networks.torsos``):
a 3x3 convolution to ``channels``, ``blocks`` residual blocks, then a policy head (1x1
convolution to 2 planes, ReLU, a dense layer to the action logits) and a value head (1x1
convolution to 1 plane, ReLU, dense ``value_hidden`` + ReLU, dense 1, tanh).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.conv import Conv, canonical_backward_default
from jaxrl.networks.torsos import ResidualBlock


class PolicyValueNet(nn.Module):
    """``obs [B, H, W, C]`` float32 -> ``(logits [B, A], value [B])`` float32, value in
    (-1, 1) from the view of the player to move (module docstring)."""

    num_actions: int
    channels: int = 32
    blocks: int = 2
    value_hidden: int = 64

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        canonical = canonical_backward_default()
        x = Conv(self.channels, (3, 3), padding="SAME", canonical_backward=canonical)(obs)
        for _ in range(self.blocks):
            x = ResidualBlock(canonical)(x)
        x = nn.relu(x)
        batch = x.shape[0]
        p = nn.relu(Conv(2, (1, 1), canonical_backward=canonical)(x)).reshape(batch, -1)
        logits = nn.Dense(self.num_actions)(p)
        v = nn.relu(Conv(1, (1, 1), canonical_backward=canonical)(x)).reshape(batch, -1)
        v = nn.relu(nn.Dense(self.value_hidden)(v))
        value = jnp.tanh(nn.Dense(1)(v))[:, 0]
        return logits, value
