r"""Parameter-space noise (Plappert et al. 2018, "Parameter Space Noise for Exploration",
ICLR) with its adaptive scale.

The policy's parameters are perturbed, ``theta~ = theta + N(0, sigma^2 I)``, and the
agent explores by acting with ``theta~``. Because the effect of a given ``sigma`` on the
actions changes as the network learns, ``sigma`` is adapted (Section 3, "Adaptive noise
scaling") against a distance ``d`` between the unperturbed and the perturbed policy on a
batch of states:

.. math::
    \sigma_{k+1} = \begin{cases} \alpha\,\sigma_k & d(\pi, \tilde\pi) \le \delta \\
                                  \sigma_k / \alpha & \text{otherwise} \end{cases}

with ``alpha = 1.01``. The distances of the paper:

* DDPG (deterministic actions): ``d = sqrt(mean_{s, i} (pi(s)_i - pi~(s)_i)^2)``, and
  ``delta`` the standard deviation of the action-space noise it replaces (0.2 in their
  experiments: OpenAI Baselines' ``adaptive-param_0.2``);
* DQN: ``d = mean_s KL(softmax Q(s, .) || softmax Q~(s, .))``, with the threshold of an
  epsilon-greedy policy, ``delta = -log(1 - epsilon + epsilon / |A|)``, so that the
  perturbed greedy policy is about as far from the greedy one as epsilon-greedy is.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import FloatOrArray

Array = jax.Array


def perturb_params(key: jax.Array, params: Any, sigma: ArrayLike) -> Any:
    """``params + sigma * eps``, ``eps ~ N(0, I)`` drawn independently for every leaf
    (float leaves; each keeps its dtype)."""
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(key, len(leaves))
    noisy = [
        (x + sigma * jax.random.normal(k, jnp.shape(x), jnp.result_type(x))).astype(
            jnp.result_type(x)
        )
        for x, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(treedef, noisy)


def adapt_noise_scale(
    sigma: ArrayLike, distance: FloatOrArray, threshold: FloatOrArray, coefficient: float = 1.01
) -> Array:
    """The next scale: ``sigma * coefficient`` if ``distance <= threshold``, else
    ``sigma / coefficient`` (float32 scalar)."""
    sigma = jnp.asarray(sigma, jnp.float32)
    return jnp.where(distance <= threshold, sigma * coefficient, sigma / coefficient)


def action_distance(actions: ArrayLike, perturbed: ArrayLike) -> Array:
    """DDPG's distance: the root mean square difference of two action batches
    ``[B, A]`` (float32 scalar)."""
    diff = jnp.asarray(actions, jnp.float32) - jnp.asarray(perturbed, jnp.float32)
    return jnp.sqrt(jnp.mean(diff**2))


def softmax_kl(q_values: ArrayLike, perturbed: ArrayLike) -> Array:
    """DQN's distance: ``mean_B KL(softmax(q) || softmax(q~))`` over ``[B, A]`` values."""
    log_p = jax.nn.log_softmax(jnp.asarray(q_values, jnp.float32), axis=-1)
    log_q = jax.nn.log_softmax(jnp.asarray(perturbed, jnp.float32), axis=-1)
    return jnp.mean(jnp.sum(jnp.exp(log_p) * (log_p - log_q), axis=-1))


def epsilon_kl_threshold(epsilon: ArrayLike, num_actions: int) -> Array:
    """``-log(1 - epsilon + epsilon / num_actions)``: the KL threshold that matches an
    epsilon-greedy policy (float32 scalar)."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    return -jnp.log(1.0 - epsilon + epsilon / num_actions)
