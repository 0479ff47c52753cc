r"""MADDPG's actions as strategies (``agents/multi_agent/maddpg.py``): what an actor's
output ``[..., A]`` means, for discrete and for continuous action spaces.

* ``gumbel_actions(A)`` (Lowe et al. 2017, Section 4): the output is logits; the critics
  see one-hot actions from the buffer and the Gumbel-softmax relaxation
  :math:`\operatorname{softmax}((\ell + g)/\tau)` of the actors' (``ops/gumbel.py``);
  exploring samples :math:`\operatorname{Categorical}(\operatorname{softmax}(\ell))`,
  greedy takes the argmax.
* ``box_actions(low, high)`` (the deterministic policy gradient of DDPG, Lillicrap et al.
  2016, as MADDPG's continuous tasks use it; machin's ``MADDPG``): the output ``u`` is
  squashed into the box, :math:`a = l + (\tanh u + 1)(h - l)/2`; the critics see the
  env's actions; exploring adds Gaussian noise of ``exploration_noise`` times the box's
  half-width and clips to the box.

Both penalize the actor's raw output by ``1e-3 mean(u^2)``, the authors' code's ``p_reg``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.gumbel import gumbel_softmax

OUTPUT_PENALTY = 1e-3  # the authors' code: p_reg = mean(square(actor output)) * 1e-3


class MADDPGActions(NamedTuple):
    """What an actor's output means.

    size: ``A``, one player's action width as the critics see it.
    stored: the buffer's action of one game ``(shape, dtype)``: ``[P]`` int32 or ``[P, A]``
      float32.
    critic_input: ``actions from the buffer [B, P(, A)] -> [B, P, A]`` float32.
    relaxed: ``(key, output [..., A], hparams) -> [..., A]``, differentiable in ``output``:
      the action a critic judges for an actor's output (the actor loss, the targets).
    explore: ``(key, output [N, P, A], hparams) -> action`` of the env's dtype.
    greedy: ``output [N, P, A] -> action``.
    """

    size: int
    stored: Callable[[int], tuple[tuple[int, ...], jnp.dtype]]
    critic_input: Callable[[jax.Array], jax.Array]
    relaxed: Callable[[jax.Array, jax.Array, dict], jax.Array]
    explore: Callable[[jax.Array, jax.Array, dict], jax.Array]
    greedy: Callable[[jax.Array], jax.Array]


def gumbel_actions(num_actions: int) -> MADDPGActions:
    """Discrete actions ``Discrete(num_actions)`` through the Gumbel-softmax (module
    docstring); ``hparams["temperature"]`` is its temperature."""
    return MADDPGActions(
        size=num_actions,
        stored=lambda players: ((players,), jnp.dtype(jnp.int32)),
        critic_input=lambda actions: jax.nn.one_hot(actions, num_actions),
        relaxed=lambda key, logits, h: gumbel_softmax(key, logits, h["temperature"]),
        explore=lambda key, logits, h: jax.random.categorical(key, logits).astype(jnp.int32),
        greedy=lambda logits: jnp.argmax(logits, -1).astype(jnp.int32),
    )


def box_actions(low: np.ndarray, high: np.ndarray) -> MADDPGActions:
    """Continuous actions in the box ``[low, high]`` (``[A]`` float32) through a squashed
    deterministic actor and Gaussian exploration (module docstring);
    ``hparams["exploration_noise"]`` is the noise's scale as a fraction of the half-width."""
    low_, high_ = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
    half = (high_ - low_) / 2

    def squash(output: jax.Array) -> jax.Array:
        return low_ + (jnp.tanh(output) + 1.0) * half

    def explore(key: jax.Array, output: jax.Array, h: dict) -> jax.Array:
        noise = h["exploration_noise"] * half * jax.random.normal(key, output.shape)
        return jnp.clip(squash(output) + noise, low_, high_)

    return MADDPGActions(
        size=int(low_.shape[0]),
        stored=lambda players: ((players, int(low_.shape[0])), jnp.dtype(jnp.float32)),
        critic_input=lambda actions: actions.astype(jnp.float32),
        relaxed=lambda key, output, h: squash(output),
        explore=explore,
        greedy=squash,
    )
