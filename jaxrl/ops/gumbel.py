r"""The Gumbel-softmax (concrete) relaxation of a categorical sample (Jang et al. 2017,
"Categorical Reparameterization with Gumbel-Softmax"; Maddison et al. 2017), which MADDPG
uses for discrete actions (Lowe et al. 2017, Section 4 and Appendix):

.. math:: y = \operatorname{softmax}\big((\ell + g) / \tau\big),\qquad
          g = -\log(-\log u),\ u \sim \mathcal U(0, 1)

``argmax(y)`` is an exact sample of ``Categorical(softmax(l))`` (the Gumbel-max trick);
``y`` is differentiable in the logits ``l``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

TINY = 1e-20  # keeps both logarithms finite at u = 0


def gumbel_noise(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Standard Gumbel samples ``-log(-log(u + TINY) + TINY)``, float32 ``shape``."""
    u = jax.random.uniform(key, shape, jnp.float32)
    return -jnp.log(-jnp.log(u + TINY) + TINY)


def relaxed_sample(
    logits: jax.Array, noise: jax.Array, temperature: float | jax.Array
) -> jax.Array:
    """``softmax((logits + noise) / temperature)`` over the last axis; ``logits`` and
    ``noise`` ``[..., A]`` float32, ``temperature > 0``; returns ``[..., A]`` summing to 1."""
    return jax.nn.softmax((logits + noise) / temperature, axis=-1)


def gumbel_softmax(key: jax.Array, logits: jax.Array, temperature: float | jax.Array) -> jax.Array:
    """A Gumbel-softmax sample ``[..., A]`` of ``logits`` ``[..., A]`` (module docstring)."""
    return relaxed_sample(logits, gumbel_noise(key, logits.shape), temperature)
