"""Networks for continuous control: actors and (ensembles of) Q critics.

* ``DeterministicActor``: ``obs -> tanh(MLP) [..., A]`` in ``[-1, 1]`` (DDPG, TD3).
* ``SquashedGaussianActor``: ``obs -> (mean, log_std) [..., A]`` of the pre-tanh Gaussian
  (SAC; sample with ``jaxrl.ops.squashed_gaussian``), ``log_std`` clipped to
  ``[log_std_min, log_std_max]`` (-20, 2 as in SAC's reference code and Stable-Baselines3).
* ``QCritic``: ``(obs, action) -> Q [...]`` from the concatenation ``[obs, action]``.
* ``CriticEnsemble``: ``num_critics`` independent ``QCritic``s evaluated in one vmapped
  call (``flax.linen.vmap`` over stacked parameters), ``-> Q [num_critics, ...]``: the twin
  critics of TD3 and SAC (Fujimoto et al. 2018) with ``num_critics=2``, DDPG's with 1.

Hidden layers are ReLU ``Dense`` layers (``jaxrl.networks.MLP``) with Flax's default
initialization (LeCun normal weights, zero biases).

Image observations: ``encoder`` (a zero-argument function returning a torso module, e.g.
``functools.partial(networks.make_torso, "nature", obs_shape, (50,))``) builds a
convolutional encoder inside each network, whose features replace the flattened
observation. Each actor and each critic of an ensemble owns its encoder, trained by its
own loss (the separate encoders of CleanRL's ``sac_atari.py``, Christodoulou 2019; not
SAC-AE's/DrQ's shared critic encoder). With ``encoder`` None (the default) the networks
are as they were, parameter for parameter.

CURL's SAC (Laskin et al. 2020; ``agents/off_policy/sac.py`` with ``curl``) shares one encoder
instead: ``CriticEnsemble(shared_encoder=True)`` applies one encoder to the observation and
the critics' heads to its features, and ``SquashedGaussianActor(detach_encoder=True)``
stops the gradient at its encoder's output (its encoder's parameters are the critic's,
copied in by the agent: the actor's loss does not train them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.torsos import MLP

Encoder = Callable[[], nn.Module]


def _features(
    encoder: Encoder | None,
    hidden: Sequence[int],
    obs_ndim: int,
    obs: jax.Array,
    detach: bool = False,
):
    """``MLP(hidden)`` of the observation, or of ``encoder()``'s features of it (with
    ``detach``, no gradient reaches the encoder)."""
    if encoder is None:
        return MLP(hidden, obs_ndim=obs_ndim)(obs)
    features = encoder()(obs)
    return MLP(hidden)(jax.lax.stop_gradient(features) if detach else features)


class DeterministicActor(nn.Module):
    """``obs [..., *obs_shape] -> action [..., action_dim]`` float32 in ``[-1, 1]``."""

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    obs_ndim: int = 1
    encoder: Encoder | None = None

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = _features(self.encoder, self.hidden_sizes, self.obs_ndim, obs)
        return jnp.tanh(nn.Dense(self.action_dim)(x))


class SquashedGaussianActor(nn.Module):
    """``obs [..., *obs_shape] -> (mean, log_std)``, each ``[..., action_dim]`` float32."""

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    obs_ndim: int = 1
    log_std_min: float = -20.0
    log_std_max: float = 2.0
    encoder: Encoder | None = None
    detach_encoder: bool = False  # CURL's SAC: the encoder's output without gradient

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = _features(self.encoder, self.hidden_sizes, self.obs_ndim, obs, self.detach_encoder)
        mean = nn.Dense(self.action_dim, name="mean")(x)
        log_std = nn.Dense(self.action_dim, name="log_std")(x)
        return mean, jnp.clip(log_std, self.log_std_min, self.log_std_max)


class QCritic(nn.Module):
    """``(obs [..., *obs_shape], action [..., A]) -> Q [...]`` float32."""

    hidden_sizes: Sequence[int] = (256, 256)
    obs_ndim: int = 1
    encoder: Encoder | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        if self.encoder is not None:
            obs = self.encoder()(obs)  # [..., F]
        else:
            obs = obs.astype(jnp.float32)
            obs = obs.reshape(obs.shape[: obs.ndim - self.obs_ndim] + (-1,))
        x = jnp.concatenate([obs, action.astype(jnp.float32)], axis=-1)
        x = MLP(self.hidden_sizes)(x)
        return nn.Dense(1)(x)[..., 0]


class CriticEnsemble(nn.Module):
    """``num_critics`` independently initialized ``QCritic``s: ``-> Q [num_critics, ...]``.

    Parameters are stacked on a leading axis of size ``num_critics``. With
    ``shared_encoder`` one ``encoder()`` (unstacked, outside ``critics``) feeds every
    critic's head its features ``[..., F]`` (CURL's and SAC-AE's critic).
    """

    num_critics: int = 2
    hidden_sizes: Sequence[int] = (256, 256)
    obs_ndim: int = 1
    encoder: Encoder | None = None
    shared_encoder: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        encoder, obs_ndim = self.encoder, self.obs_ndim
        if self.shared_encoder and encoder is not None:
            obs, encoder, obs_ndim = encoder()(obs), None, 1
        ensemble = nn.vmap(
            QCritic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        kw: dict[str, Any] = {} if encoder is None else {"encoder": encoder}
        return ensemble(self.hidden_sizes, obs_ndim, name="critics", **kw)(obs, action)
