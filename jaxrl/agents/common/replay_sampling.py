"""Replay sampling as a skeleton's gradient loop sees it: uniform, or prioritized with
importance weights and priorities fed back (Schaul et al. 2016, "Prioritized Experience
Replay"). The Q-learning and off-policy skeletons call these functions without knowing
which strategy they hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
from jax.typing import ArrayLike

from jaxrl.buffers import PriorityParams, ReplayBuffer
from jaxrl.ops.prioritized import importance_weights
from jaxrl.ops.schedules import linear_schedule


class ReplaySampling(NamedTuple):
    """How a gradient loop draws from its buffer and what a drawn batch feeds back.

    threaded: ``(buffer_state) -> carry``, what the loop threads through its steps: the
      prioritized buffer (its priorities change), None for uniform replay (the buffer
      stays outside the loop and is not copied through it).
    source: ``(buffer_state, carry) -> buffer_state``, the state to sample from and the
      buffer's state after the loop.
    knobs: ``(hparams) -> PriorityParams | None`` for the buffer's ``add`` and
      ``update_priorities``.
    beta: ``(hparams, step) -> float32 scalar | None``, the importance exponent at env
      step ``step`` (int32 scalar).
    weights: ``(probabilities [B], num_items, beta) -> extras``: ``{"weight": [B]
      float32}``, the importance weights ``(N P(i)) ** -beta / max``, or ``{}``.
    feed_back: ``(carry, indices [B] int32, priorities [B] float32 | None, hparams) ->
      carry``, the new priorities written.
    hparams: constants the strategy adds to a skeleton's hyperparameter dict.
    """

    threaded: Callable[[Any], Any]
    source: Callable[[Any, Any], Any]
    knobs: Callable[[Any], PriorityParams | None]
    beta: Callable[[Any, jax.Array], jax.Array | None]
    weights: Callable[[jax.Array, ArrayLike, Any], dict[str, jax.Array]]
    feed_back: Callable[[Any, jax.Array, Any, Any], Any]
    hparams: dict[str, float]


def uniform_sampling() -> ReplaySampling:
    """Uniform replay: nothing threaded, no weights, nothing fed back."""
    return ReplaySampling(
        threaded=lambda buffer_state: None,
        source=lambda buffer_state, carry: buffer_state,
        knobs=lambda hparams: None,
        beta=lambda hparams, step: None,
        weights=lambda probabilities, num_items, beta: {},
        feed_back=lambda carry, indices, priorities, hparams: carry,
        hparams={},
    )


def prioritized_sampling(
    buffer: ReplayBuffer,
    beta_decay_steps: int,
    knobs: Callable[[Any], PriorityParams],
    beta_start: Callable[[Any], jax.Array],
    hparams: dict[str, float] | None = None,
) -> ReplaySampling:
    """Proportional prioritized replay on ``buffer``: the exponent ``beta`` annealed
    linearly from ``beta_start(hparams)`` to 1 over ``beta_decay_steps`` env steps;
    ``knobs(hparams)`` reads ``alpha`` and ``eps`` where the skeleton keeps them."""

    def feed_back(carry, indices, priorities, h):
        return buffer.update_priorities(carry, indices, priorities, knobs(h))

    return ReplaySampling(
        threaded=lambda buffer_state: buffer_state,
        source=lambda buffer_state, carry: carry,
        knobs=knobs,
        beta=lambda h, step: linear_schedule(beta_start(h), 1.0, beta_decay_steps)(step),
        weights=lambda probabilities, num_items, beta: {
            "weight": importance_weights(probabilities, num_items, beta)
        },
        feed_back=feed_back,
        hparams=dict(hparams or {}),
    )
