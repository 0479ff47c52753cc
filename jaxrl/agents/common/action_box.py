"""The action space an agent acts in, checked: a continuous space's bounds, as the agents
that act in one need them, or a discrete space (ConfigError naming the env otherwise)."""

from __future__ import annotations

import numpy as np

from jaxrl.types import Box, ConfigError, Discrete, EnvSpec


def action_box(spec: EnvSpec, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` ``[A]`` float32 of a 1-D finite ``Box`` spec; ConfigError otherwise."""
    space = spec.action_space
    if isinstance(space, Discrete):  # machin's DDPG acts here through a softmax actor
        machin = (
            " (machin's DDPG.act_discrete, a softmax actor, has no counterpart here)"
            if name in ("ddpg", "td3")
            else ""
        )
        raise ConfigError(
            f"agent '{name}' acts in a continuous (Box) action space, but {spec.name} has "
            f"{space}: for discrete actions use dqn, rainbow, ppo or a2c{machin}, or a "
            "continuous-action env such as Pendulum-v1"
        )
    if not isinstance(space, Box) or len(space.shape) != 1:
        raise ConfigError(
            f"agent '{name}' needs a 1-D continuous (Box) action space, but {spec.name} has "
            f"{space}; use a continuous-action env such as Pendulum-v1"
        )
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    if not (np.isfinite(low).all() and np.isfinite(high).all() and (low < high).all()):
        raise ConfigError(f"agent '{name}' needs finite bounds low < high, got {space}")
    return low, high


def require_discrete(spec: EnvSpec, name: str) -> None:
    """ConfigError unless ``spec``'s actions are ``Discrete`` (agent ``name`` takes them)."""
    if not isinstance(spec.action_space, Discrete):
        raise ConfigError(
            f"agent '{name}' needs a discrete action space, but {spec.name} has a continuous "
            f"one {spec.action_space}; use a discrete-action env such as CartPole-v1"
        )
