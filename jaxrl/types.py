"""The contracts every part of jaxrl is written against (see DESIGN.md).

* ``EnvSpec`` / ``Discrete`` / ``Box``: static, hashable descriptions of an environment.
* ``TimeStep``: what a vectorized, auto-resetting environment returns from ``reset`` and ``step``.
* ``Env``: a NamedTuple of pure functions ``reset`` and ``step`` plus its ``spec``.
* ``Transition``: one step of experience, batched with leading axes ``[T, num_envs]``.
* ``Agent``: a NamedTuple of pure functions ``init``, ``act`` and ``update``.
* ``ConfigError``: a user's mistake (unknown name, bad override, mismatch). The CLI turns it
  into one line on stderr and exit code 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

Array = jax.Array
PRNGKey = jax.Array
Params = Any
AgentState = Any  # a flax.struct.dataclass holding arrays only
EnvState = Any  # a pytree of arrays
Metrics = dict[str, Array]


class ConfigError(ValueError):
    """A user's mistake: the message is one line naming what is wrong and what is valid."""


@dataclasses.dataclass(frozen=True)
class Discrete:
    """A discrete action space ``{0, ..., n - 1}``; actions are int32 scalars per env."""

    n: int

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def dtype(self) -> str:
        return "int32"


@dataclasses.dataclass(frozen=True)
class Box:
    """A continuous space of float32 arrays of ``shape`` bounded elementwise by low/high.

    ``low`` and ``high`` are flat tuples with one entry per element (row-major), so the
    spec stays hashable and can be a static argument under ``jit``.
    """

    shape: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    @property
    def dtype(self) -> str:
        return "float32"


Space = Discrete | Box


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of a vectorized environment.

    Attributes:
      name: canonical environment id, e.g. ``"CartPole-v1"``.
      obs_shape: shape of one observation (without the ``num_envs`` axis).
      obs_dtype: numpy dtype name of observations (``"float32"``, ``"uint8"``).
      action_space: ``Discrete`` or ``Box``.
      num_envs: number of environments stepped in lock-step.
      max_episode_steps: the time limit after which an episode is truncated.
    """

    name: str
    obs_shape: tuple[int, ...]
    obs_dtype: str
    action_space: Space
    num_envs: int
    max_episode_steps: int


class TimeStep(NamedTuple):
    """Output of ``Env.reset`` and ``Env.step``; every field has a leading ``num_envs`` axis.

    Attributes:
      obs: ``[N, *obs_shape]``; after an episode end, already the next episode's first obs.
      reward: ``[N]`` float32, the reward of the step just taken (0 after reset).
      terminated: ``[N]`` bool, the episode reached a terminal state (do not bootstrap).
      truncated: ``[N]`` bool, the episode was cut by a time limit (bootstrap from
        ``info["final_obs"]``). Never both true.
      info: dict with at least
        ``final_obs`` ``[N, *obs_shape]``: the true observation after the step (equal to
        ``obs`` unless the episode ended),
        ``episode_return`` ``[N]`` float32: raw return of the episode that just ended
        (meaningful where ``terminated | truncated``),
        ``episode_length`` ``[N]`` int32: its length in agent steps;
        and optionally ``episode_done`` ``[N]`` bool: where the two above are meaningful,
        when that differs from ``terminated | truncated`` (Atari's ``episodic_life``
        terminates at every lost life but reports the whole game's score at its end).
    """

    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    info: dict[str, Array]


class Env(NamedTuple):
    """A vectorized, functional, auto-resetting environment.

    ``reset(key) -> (env_state, timestep)`` and
    ``step(env_state, action [N, ...], key) -> (env_state, timestep)`` are pure and jittable.
    """

    spec: EnvSpec
    reset: Callable[[PRNGKey], tuple[EnvState, TimeStep]]
    step: Callable[[EnvState, Array, PRNGKey], tuple[EnvState, TimeStep]]
    # False where the env state refers to resources of this process (ale-py's emulators):
    # such a state cannot be checkpointed and restored, so a resume restarts the env.
    state_is_portable: bool = True


class Transition(NamedTuple):
    """Experience with leading axes ``[T, num_envs]`` (or ``[batch, ...]`` when sampled).

    ``next_obs`` is the true next observation (``TimeStep.info["final_obs"]``), so a
    truncated step bootstraps from the real last state. ``extras`` carries what ``act``
    returned for the learner (log-probs, values); it may be empty.
    """

    obs: Array
    action: Array
    reward: Array
    next_obs: Array
    terminated: Array
    truncated: Array
    extras: dict[str, Array]


class Agent(NamedTuple):
    """An agent as pure functions over an immutable state pytree.

    init:   ``(key) -> state``
    act:    ``(state, obs [N, ...], key, explore: bool) -> (action [N, ...], extras)``;
            ``explore`` is static (True while training, False for greedy evaluation).
    update: ``(state, rollout: Transition [T, N, ...], key) -> (state, metrics)``; metrics
            are float32 scalars, NaN where a quantity was not computed this call.
    """

    init: Callable[[PRNGKey], AgentState]
    act: Callable[..., tuple[Array, dict[str, Array]]]
    update: Callable[[AgentState, Transition, PRNGKey], tuple[AgentState, Metrics]]
