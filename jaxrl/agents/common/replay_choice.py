"""The replay buffer an off-policy agent's config asks for, built from ``jaxrl.buffers``."""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl.buffers import (
    ReplayBuffer,
    make_compact_replay,
    make_prioritized_replay,
    make_uniform_replay,
)
from jaxrl.types import ConfigError, EnvSpec
from jaxrl.validation import Options, option


@dataclasses.dataclass(frozen=True)
class ReplayOptions(Options):
    """The replay buffer's size and use, shared by every agent that learns from replay; an
    agent's config gives its own defaults (``buffer_size: int = 1_000_000``).

    Attributes:
      buffer_size: replay capacity in transitions.
      batch_size: minibatch size of a gradient step.
      learning_starts: env steps collected before the first gradient step (RLHive's
        ``min_replay_history``).
    """

    buffer_size: int = option(10_000, ge=1)
    batch_size: int = option(128, ge=1)
    learning_starts: int = option(10_000, ge=0)


def make_replay(
    spec: EnvSpec, cfg: Any, name: str, storage: str, prioritized: bool
) -> ReplayBuffer:
    """The replay buffer of ``cfg.buffer_size`` transitions, ``cfg.batch_size`` samples and
    ``cfg.n_step`` windows:
    ``storage`` ``"compact"`` (frames stored once, ``buffers/compact.py``), ``"full"``
    (``buffers/replay.py``, ``buffers/prioritized.py``) or ``"auto"`` (compact for
    stacked uint8 images ``[H, W, stack]``); ``ConfigError`` naming agent ``name`` if it
    cannot be built (e.g. a capacity below ``num_envs * n_step``)."""
    image_obs = len(spec.obs_shape) == 3 and spec.obs_dtype == "uint8"
    try:
        if storage == "compact" or (storage == "auto" and image_obs):
            return make_compact_replay(
                cfg.buffer_size,
                spec.num_envs,
                cfg.batch_size,
                spec.obs_shape,
                spec.obs_dtype,
                window=cfg.n_step,
                stack=spec.obs_shape[-1] if image_obs else 0,
                mode="prioritized" if prioritized else "uniform",
                obs_extras={e.name: (e.shape, e.dtype) for e in spec.obs_extras},
            )
        make = make_prioritized_replay if prioritized else make_uniform_replay
        return make(cfg.buffer_size, spec.num_envs, cfg.batch_size, window=cfg.n_step)
    except ValueError as e:
        raise ConfigError(f"agent '{name}': {e}") from None
