r"""The losses and rewards of adversarial motion priors (AMP; Peng et al. 2021, "AMP:
Adversarial Motion Priors for Stylized Physics-Based Character Control", ACM ToG 40(4)).

A discriminator :math:`D` scores transitions :math:`x = (s, s')`. It is trained by least
squares (Mao et al. 2017) to output +1 on reference (motion-capture, demonstration) data
:math:`\mathcal M` and -1 on the policy's data :math:`\pi`, with a gradient penalty on the
reference samples (eq. 8 of the paper):

.. math:: L_D = \mathbb E_{\mathcal M}\big[(D(x) - 1)^2\big]
          + \mathbb E_{\pi}\big[(D(x) + 1)^2\big]
          + \frac{w^{gp}}{2}\, \mathbb E_{\mathcal M}\big[\lVert \nabla_x D(x) \rVert^2\big]

(``lsq_discriminator_loss`` is the first two terms, ``gradient_penalty`` the expectation
of the last). The style reward (eq. 7) is

.. math:: r^S = \max\big(0,\ 1 - 0.25\,(D(x) - 1)^2\big)

Emote's action-symmetry variant (``ActionSymmetryDiscriminatorLoss``,
``ActionSymmetryAMPReward``) trains the same least-squares discriminator to tell the
right side's actions (+1) from the left side's (-1) and rewards the policy for confusing
it; ``confusion_reward`` is :math:`\max(0, 1 - 0.25\, D^2)`, highest (1) where the
discriminator cannot tell the sides apart (:math:`D = 0`, halfway between the targets)
and zero where it is sure (:math:`|D| \ge 2`). All functions are pure and jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def lsq_discriminator_loss(d_reference: Array, d_policy: Array) -> Array:
    """``mean((d_reference - 1)^2) + mean((d_policy + 1)^2)``: float32 scalar from the
    discriminator's outputs ``[B_M]`` on reference data and ``[B_pi]`` on policy data."""
    return jnp.mean(jnp.square(d_reference - 1.0)) + jnp.mean(jnp.square(d_policy + 1.0))


def gradient_penalty(grad: Array) -> Array:
    """``mean_b sum_f grad[b, f]^2``: the mean squared norm of the discriminator's input
    gradients ``[B, F]`` (one row per sample); float32 scalar."""
    grad = grad.reshape(grad.shape[0], -1)
    return jnp.mean(jnp.sum(jnp.square(grad), axis=-1))


def input_gradients(discriminator, features: Array) -> Array:
    """``d D(x_b) / d x_b`` ``[B, F]`` of a per-sample scalar function ``discriminator``
    (``[B, F] -> [B]``) at ``features`` ``[B, F]``; each output depends on its own row
    only, so the gradient of the sum is the per-sample gradient."""
    return jax.grad(lambda x: jnp.sum(discriminator(x)))(features)


def style_reward(d: Array) -> Array:
    """AMP's style reward ``max(0, 1 - 0.25 (d - 1)^2)`` of discriminator outputs ``d``
    (any shape, float32), in ``[0, 1]``; 1 where ``d = 1`` (looks like reference data)."""
    return jnp.maximum(0.0, 1.0 - 0.25 * jnp.square(d - 1.0))


def confusion_reward(d: Array) -> Array:
    """The action-symmetry reward ``max(0, 1 - 0.25 d^2)`` of discriminator outputs ``d``
    (any shape, float32), in ``[0, 1]``; 1 where ``d = 0`` (sides indistinguishable)."""
    return jnp.maximum(0.0, 1.0 - 0.25 * jnp.square(d))
