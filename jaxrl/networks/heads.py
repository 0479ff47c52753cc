"""Heads: feature vector -> action values (scalar or categorical distributions).

Every head has ``noisy: bool = False`` and ``sigma0: float = 0.5``: with ``noisy`` its
linear layers are ``NoisyLinear`` (Fortunato et al. 2018) instead of ``nn.Dense``, named
``NoisyLinear_<i>`` in the same order as ``Dense_<i>``; then ``apply`` needs
``rngs={"noise": key}`` unless called with ``deterministic=True`` (mean weights, for
greedy evaluation). Without ``noisy`` the ``deterministic`` argument is ignored.
"""

from __future__ import annotations

import flax.linen as nn
import jax

from jaxrl.networks.noisy import dense

Array = jax.Array


class QHead(nn.Module):
    """Linear action-value head: ``[..., F] -> [..., num_actions]`` (Mnih et al. 2015)."""

    num_actions: int
    noisy: bool = False
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        layer = dense(
            self.num_actions, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic
        )
        return layer(features)


class DuelingHead(nn.Module):
    """Dueling head (Wang et al. 2016, eq. 9): ``Q = V + A - mean_a A``.

    ``[..., F] -> [..., num_actions]``; value and advantage streams each have one hidden
    layer of ``hidden_size`` ReLU units when ``hidden_size > 0``, else are linear.
    Layers, in creation order: ``[value hidden, advantage hidden,] value, advantage``.
    """

    num_actions: int
    hidden_size: int = 0
    noisy: bool = False
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        def layer(n: int) -> nn.Module:
            return dense(n, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic)

        v, a = features, features
        if self.hidden_size:
            v = nn.relu(layer(self.hidden_size)(v))
            a = nn.relu(layer(self.hidden_size)(a))
        value = layer(1)(v)
        advantage = layer(self.num_actions)(a)
        return value + advantage - advantage.mean(axis=-1, keepdims=True)


class CategoricalHead(nn.Module):
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
    noisy: bool = False
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        a, k = self.num_actions, self.num_atoms
        layer = dense(a * k, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic)
        out = layer(features)
        return out.reshape(*out.shape[:-1], a, k)


class DuelingCategoricalHead(nn.Module):
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
    noisy: bool = False
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, features: Array, deterministic: bool = False) -> Array:
        def layer(n: int) -> nn.Module:
            return dense(n, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic)

        n_a, k = self.num_actions, self.num_atoms
        v, a = features, features
        if self.hidden_size:
            v = nn.relu(layer(self.hidden_size)(v))
            a = nn.relu(layer(self.hidden_size)(a))
        value = layer(k)(v)
        value = value.reshape(*value.shape[:-1], 1, k)
        advantage = layer(n_a * k)(a)
        advantage = advantage.reshape(*advantage.shape[:-1], n_a, k)
        return value + advantage - advantage.mean(axis=-2, keepdims=True)
