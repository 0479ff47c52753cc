"""Heads: feature vector -> action values (scalar or categorical distributions).

Every head is a ``Head``: it has the keyword-only options ``noisy: bool = False`` and
``sigma0: float = 0.5``. With ``noisy`` its linear layers are ``NoisyLinear`` (Fortunato et
al. 2018) instead of ``nn.Dense``, named ``NoisyLinear_<i>`` in the same order as
``Dense_<i>``; then ``apply`` needs ``rngs={"noise": key}`` unless called with
``deterministic=True`` (mean weights, for greedy evaluation). Without ``noisy`` the
``deterministic`` argument is ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.noisy import dense
from jaxrl.ops.quantile import cosine_embedding

Array = jax.Array


class Head(nn.Module):
    """The options every head has (module docstring), keyword-only: a head's own fields
    (``num_actions``, ...) come first, positionally."""

    _: dataclasses.KW_ONLY
    noisy: bool = False
    sigma0: float = 0.5


def head_layer(head: Head, deterministic: bool) -> Callable[[int], nn.Module]:
    """``n -> layer of n outputs`` for ``head`` (a module with ``noisy`` and ``sigma0``),
    made in the caller's compact scope: ``nn.Dense``, or ``NoisyLinear`` with ``noisy``."""
    return lambda n: dense(n, noisy=head.noisy, sigma0=head.sigma0, deterministic=deterministic)


def dueling_streams(
    layer: Callable[[int], nn.Module],
    features: Array,
    hidden_size: int,
    value_size: int,
    advantage_size: int,
) -> tuple[Array, Array]:
    """The value and advantage streams of a dueling head (Wang et al. 2016), created in
    the order ``[value hidden, advantage hidden,] value, advantage`` inside the caller's
    compact scope; each has one ReLU hidden layer of ``hidden_size`` units when
    ``hidden_size > 0``. Returns ``([..., value_size], [..., advantage_size])``."""
    v, a = features, features
    if hidden_size:
        v = nn.relu(layer(hidden_size)(v))
        a = nn.relu(layer(hidden_size)(a))
    return layer(value_size)(v), layer(advantage_size)(a)


class QHead(Head):
    """Linear action-value head: ``[..., F] -> [..., num_actions]`` (Mnih et al. 2015)."""

    num_actions: int

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        return head_layer(self, deterministic)(self.num_actions)(features)


class DuelingHead(Head):
    """Dueling head (Wang et al. 2016, eq. 9): ``Q = V + A - mean_a A``.

    ``[..., F] -> [..., num_actions]``; value and advantage streams each have one hidden
    layer of ``hidden_size`` ReLU units when ``hidden_size > 0``, else are linear.
    Layers, in creation order: ``[value hidden, advantage hidden,] value, advantage``.
    """

    num_actions: int
    hidden_size: int = 0

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        layer = head_layer(self, deterministic)
        value, advantage = dueling_streams(layer, features, self.hidden_size, 1, self.num_actions)
        return value + advantage - advantage.mean(axis=-1, keepdims=True)


class CategoricalHead(Head):
    r"""Categorical value-distribution head (C51; Bellemare et al. 2017, "A Distributional
    Perspective on Reinforcement Learning", ICML).

    ``[..., F] -> logits [..., num_actions, num_atoms]`` from one linear layer of
    ``num_actions * num_atoms`` outputs (action-major). The distribution of action ``a``
    is ``p_i(s, a) = softmax_i(logits[..., a, :])`` over atoms ``z_i`` of a support
    chosen by the agent; ``Q(s, a) = sum_i z_i p_i(s, a)``
    (``ops.categorical_q_values``).
    """

    num_actions: int
    num_atoms: int

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        a, k = self.num_actions, self.num_atoms
        out = head_layer(self, deterministic)(a * k)(features)
        return out.reshape(*out.shape[:-1], a, k)


class DuelingCategoricalHead(Head):
    r"""Dueling categorical head of Rainbow (Hessel et al. 2018, sec. "The integrated
    agent", eq. for ``p_theta``; as in Dopamine and RLHive).

    ``[..., F] -> logits [..., num_actions, num_atoms]``:

    .. math::
        \ell_i(s, a) = v_i(s) + a_i(s, a) - \frac{1}{N_{actions}} \sum_{a'} a_i(s, a'),

    with the value stream ``v [..., 1, num_atoms]`` and advantage stream
    ``a [..., num_actions, num_atoms]`` combined on the logits, before the softmax over
    atoms. Each stream has one hidden layer of ``hidden_size`` ReLU units when
    ``hidden_size > 0``, else is linear. Layers, in creation order: ``[value hidden,
    advantage hidden,] value (num_atoms), advantage (num_actions * num_atoms)``.
    """

    num_actions: int
    num_atoms: int
    hidden_size: int = 0

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        layer = head_layer(self, deterministic)
        n_a, k = self.num_actions, self.num_atoms
        value, advantage = dueling_streams(layer, features, self.hidden_size, k, n_a * k)
        value = value.reshape(*value.shape[:-1], 1, k)
        advantage = advantage.reshape(*advantage.shape[:-1], n_a, k)
        return value + advantage - advantage.mean(axis=-2, keepdims=True)


class ImplicitQuantileHead(Head):
    r"""IQN's head (Dabney et al. 2018b, "Implicit Quantile Networks for Distributional
    Reinforcement Learning", ICML, eq. 4 and sec. 3.1; as Dopamine's IQN network).

    For features :math:`\psi(x)` ``[..., F]`` it draws ``num_samples`` fractions
    :math:`\tau \sim U[0, 1]` per batch element from the ``"noise"`` rng stream, embeds
    them as :math:`\phi(\tau) = \mathrm{ReLU}(W \cos(\pi i \tau) + b)`, ``i = 1..n``
    (``ops.cosine_embedding``, ``n = embedding_dim``, ``W`` of ``F`` outputs), and returns
    the quantile values :math:`Z_\tau(x, a) = f(\psi(x) \odot \phi(\tau))_a` with ``f``
    one linear layer: ``{"quantiles": [..., num_actions, num_samples], "taus": the same
    shape}`` (the fractions, broadcast over actions). The embedding layer is
    ``Dense_0``; ``f`` is ``Dense_1`` (``NoisyLinear_0`` with ``noisy``).
    """

    num_actions: int
    embedding_dim: int = 64

    @nn.compact
    def __call__(
        self, features: Array, num_samples: int = 1, deterministic: bool = False
    ) -> dict[str, Array]:
        batch = features.shape[:-1]
        taus = jax.random.uniform(self.make_rng("noise"), (*batch, num_samples))
        embedding = nn.relu(
            nn.Dense(features.shape[-1])(cosine_embedding(taus, self.embedding_dim))
        )
        hidden = features[..., None, :] * embedding  # [..., num_samples, F]
        layer = head_layer(self, deterministic)(self.num_actions)
        quantiles = jnp.swapaxes(layer(hidden), -1, -2)  # [..., num_actions, num_samples]
        return {
            "quantiles": quantiles,
            "taus": jnp.broadcast_to(taus[..., None, :], quantiles.shape),
        }
