"""Noisy linear layers for exploration (Fortunato et al. 2018), and a ``dense`` factory.

Reference:
  Fortunato, Azar, Piot, Menick, Osband, Graves, Mnih, Munos, Hassabis, Pietquin,
  Blundell & Legg (2018), "Noisy Networks for Exploration", ICLR; sec. 3 (eq. 9, 10,
  factorized Gaussian noise) and sec. 3.2 (initialisation). Used by Rainbow (Hessel et
  al. 2018, "Rainbow: Combining Improvements in Deep Reinforcement Learning", AAAI).

Rng convention: a noisy layer draws its noise from the Flax rng stream ``"noise"``
(``self.make_rng("noise")``), one sample per forward call, shared across the batch. The
caller passes ``rngs={"noise": key}`` to ``apply``; with ``deterministic=True`` the layer
uses its mean weights only and needs no rng (greedy evaluation). ``init`` with a single
key works too: Flax then draws the init-time noise from the ``"params"`` stream.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

Array = jax.Array


def _signed_sqrt(x: Array) -> Array:
    """``f(x) = sign(x) sqrt(|x|)``, the noise transform of Fortunato et al. (2018) eq. 10."""
    return jnp.sign(x) * jnp.sqrt(jnp.abs(x))


def factorized_noise(key: jax.Array, in_features: int, out_features: int) -> tuple[Array, Array]:
    r"""One sample of factorized Gaussian noise for a ``[in_features, out_features]`` layer.

    Draws independent unit Gaussians ``eps_in ~ N(0, I_p)`` and ``eps_out ~ N(0, I_q)``
    (``p = in_features``, ``q = out_features``) and returns (Fortunato et al. 2018, sec.
    3, eq. 10)

    .. math::
        \varepsilon^w_{ij} = f(\varepsilon^{in}_i)\, f(\varepsilon^{out}_j), \qquad
        \varepsilon^b_j = f(\varepsilon^{out}_j), \qquad f(x) = \mathrm{sign}(x)\sqrt{|x|},

    so that ``p + q`` Gaussians are drawn rather than ``p q + q``.

    Args:
      key: PRNG key. It is split in two: ``k_in, k_out = jax.random.split(key)``;
        ``eps_in = jax.random.normal(k_in, (p,))``, ``eps_out = jax.random.normal(k_out,
        (q,))``.
      in_features: ``p``, static int.
      out_features: ``q``, static int.

    Returns:
      ``(eps_w, eps_b)``: ``eps_w`` ``[p, q]`` float32 (the kernel layout of
      ``nn.Dense``, ``y = x @ w``) and ``eps_b`` ``[q]`` float32.
    """
    k_in, k_out = jax.random.split(key)
    f_in = _signed_sqrt(jax.random.normal(k_in, (in_features,), jnp.float32))
    f_out = _signed_sqrt(jax.random.normal(k_out, (out_features,), jnp.float32))
    return f_in[:, None] * f_out[None, :], f_out


class NoisyLinear(nn.Module):
    r"""Linear layer with factorized Gaussian parameter noise (Fortunato et al. 2018).

    ``[..., p] -> [..., features]``:

    .. math::
        y = x\,(\mu^w + \sigma^w \odot \varepsilon^w) + \mu^b + \sigma^b \odot \varepsilon^b,

    (eq. 9, with the kernel stored ``[p, q]`` as in ``nn.Dense``), where
    ``(eps_w, eps_b) = factorized_noise(self.make_rng("noise"), p, q)`` is drawn once per
    call and shared by every row of the batch. With ``deterministic`` the noise is zero:
    ``y = x mu_w + mu_b``, and no rng is needed.

    Parameters (sec. 3.2, factorized case), with ``p`` the number of inputs:
    ``mu_w [p, q]`` and ``mu_b [q]`` ~ ``U[-1/sqrt(p), 1/sqrt(p)]``; ``sigma_w [p, q]``
    and ``sigma_b [q]`` all equal to ``sigma0 / sqrt(p)``. (RLHive's / Kaixhin's PyTorch
    layer, whose ``std_init`` is ``sigma0``, initialises ``sigma_b`` to ``sigma0 /
    sqrt(q)`` instead; this follows the paper.) Parameters are float32; the output has the
    dtype of ``jnp.result_type(x, float32)``.

    Attributes:
      features: ``q``, the number of outputs.
      sigma0: the paper's ``sigma_0`` (RLHive's ``std_init``), default 0.5.
      deterministic: default for the call argument: if True, use the mean weights only.
    """

    features: int
    sigma0: float = 0.5
    deterministic: bool = False

    @nn.compact
    def __call__(self, x: Array, deterministic: bool | None = None) -> Array:
        """Apply the layer; ``deterministic`` (static), if given, overrides the attribute."""
        deterministic = self.deterministic if deterministic is None else deterministic
        p, q = x.shape[-1], self.features
        bound = 1.0 / math.sqrt(p)
        sigma = self.sigma0 / math.sqrt(p)

        def uniform(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> Array:
            return jax.random.uniform(key, shape, dtype, -bound, bound)

        def constant(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> Array:
            del key
            return jnp.full(shape, sigma, dtype)

        mu_w = self.param("mu_w", uniform, (p, q))
        sigma_w = self.param("sigma_w", constant, (p, q))
        mu_b = self.param("mu_b", uniform, (q,))
        sigma_b = self.param("sigma_b", constant, (q,))

        if deterministic:
            w, b = mu_w, mu_b
        else:
            eps_w, eps_b = factorized_noise(self.make_rng("noise"), p, q)
            w = mu_w + sigma_w * eps_w
            b = mu_b + sigma_b * eps_b
        dtype = jnp.result_type(x.dtype, jnp.float32)
        x = x.astype(dtype)
        return x @ w.astype(dtype) + b.astype(dtype)


def dense(
    features: int,
    *,
    noisy: bool = False,
    sigma0: float = 0.5,
    deterministic: bool = False,
) -> nn.Module:
    """A linear layer for the heads and torsos: ``nn.Dense`` or ``NoisyLinear``.

    Call it inside a ``@nn.compact`` method; the layer is auto-named ``Dense_<i>`` or
    ``NoisyLinear_<i>`` in its parent, so ``noisy=False`` gives exactly the parameters of
    ``nn.Dense(features)``.

    Args:
      features: number of outputs.
      noisy: return ``NoisyLinear(features, sigma0, deterministic)`` instead of
        ``nn.Dense(features)``.
      sigma0: initial noise scale of a noisy layer (ignored otherwise).
      deterministic: a noisy layer uses its mean weights only (ignored otherwise).

    Returns:
      An unbound module mapping ``[..., p] -> [..., features]``.
    """
    if noisy:
        return NoisyLinear(features, sigma0=sigma0, deterministic=deterministic)
    return nn.Dense(features)
