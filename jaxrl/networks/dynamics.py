"""The probabilistic dynamics ensemble of MBPO (Janner et al. 2019) and PETS (Chua et al.
2018): ``E`` independent MLPs, each a Gaussian over ``D`` outputs (MBPO: the reward and the
state change ``s' - s``), with log-variance bounds learned with the networks.

Sizes are those of the MBPO reference code (github.com/jannerm/mbpo,
``mbpo/models/constructor.py``): 4 hidden layers of 200 units, swish activations.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.ops.model_based import bound_log_var


class _Member(nn.Module):
    hidden_sizes: Sequence[int]
    out_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        for size in self.hidden_sizes:
            x = nn.swish(nn.Dense(size)(x))
        out = nn.Dense(2 * self.out_dim)(x)
        return out[..., : self.out_dim], out[..., self.out_dim :]


class GaussianEnsemble(nn.Module):
    """``E`` Gaussian MLPs on inputs ``[E, B, I]`` float32 (member ``e`` reads row ``e``).

    Returns ``(mean, log_var)``, each ``[E, B, D]`` float32, ``log_var`` soft-bounded by the
    learned ``max_log_var`` / ``min_log_var`` ``[D]`` (initialized at 0.5 and -10, the
    reference code's values; ``ops.model_based.bound_log_var``), and the bounds themselves
    as a third output, for the loss's penalty on their spread.
    """

    num_members: int
    hidden_sizes: Sequence[int]
    out_dim: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array, tuple[jax.Array, jax.Array]]:
        members = nn.vmap(
            _Member,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=0,
            out_axes=0,
            axis_size=self.num_members,
        )(tuple(self.hidden_sizes), self.out_dim)
        mean, log_var = members(x)
        d = self.out_dim
        max_lv = self.param("max_log_var", lambda _: jnp.full((d,), 0.5, jnp.float32))
        min_lv = self.param("min_log_var", lambda _: jnp.full((d,), -10.0, jnp.float32))
        return mean, bound_log_var(log_var, max_lv, min_lv), (max_lv, min_lv)
