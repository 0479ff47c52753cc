"""Turning a single-environment functional core into a vectorized, auto-resetting ``Env``.

A *core* is two pure functions acting on ONE environment::

    reset_fn(key) -> (state, obs)
    step_fn(state, action, key) -> (state, obs, reward, terminated)

``make_vector_env`` vmaps them over ``num_envs`` environments and adds what every
environment in jaxrl shares (see ``jaxrl.types.TimeStep``):

* a time limit: ``truncated`` is true when an episode reaches ``max_episode_steps`` steps
  without terminating; ``terminated`` and ``truncated`` are never both true (a terminal
  step on the last allowed step counts as terminated);
* episode statistics: the running raw (unclipped) return and length of each episode;
* auto-reset: when an episode ends, the returned ``obs`` is already the first observation
  of the next episode and ``info["final_obs"]`` is the true last observation.

Everything is pure and jittable, so an ``Env`` can be stepped inside ``lax.scan`` and a
whole rollout can be vmapped over seeds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.types import (
    ACTION_MASK,
    Array,
    ArraySpec,
    Box,
    Discrete,
    Env,
    EnvSpec,
    PRNGKey,
    TimeStep,
)
from jaxrl.validation import check_int

ResetFn = Callable[[PRNGKey], tuple[Any, Array]]
StepFn = Callable[[Any, Array, PRNGKey], tuple[Any, Array, Array, Array]]


def documented_partial(
    doc: str, make: Callable[..., Env], *args: Any, **kwargs: Any
) -> functools.partial[Env]:
    """``functools.partial(make, *args, **kwargs)`` with the docstring ``doc`` (a partial's
    own is ``functools.partial``'s): the registry factory of one task of a family."""
    factory = functools.partial(make, *args, **kwargs)
    factory.__doc__ = doc
    return factory


class VectorEnvState(NamedTuple):
    """State of a vectorized environment; every leaf has a leading ``num_envs`` axis.

    Attributes:
      core: the cores' states, batched ``[N, ...]`` (already reset where an episode ended).
      episode_return: ``[N]`` float32, raw return of the current episode so far.
      episode_length: ``[N]`` int32, steps taken in the current episode so far.
    """

    core: Any
    episode_return: Array
    episode_length: Array


def where_done(done: Array, new: Any, old: Any) -> Any:
    """``new`` where ``done`` ``[N]`` else ``old`` (pytrees), broadcasting over trailing axes."""
    return jax.tree.map(
        lambda n, o: jnp.where(done.reshape(done.shape + (1,) * (n.ndim - 1)), n, o), new, old
    )


def fresh_episodes(num_envs: int, num_players: int = 0) -> tuple[Array, Array, Array]:
    """``(episode_return, episode_length, false)`` of episodes just begun: float32 zeros
    ``[N]`` (``[N, P]`` per player with ``num_players``), int32 zeros ``[N]`` and bool
    False ``[N]`` (also the reward and flags of a reset)."""
    returns_shape = (num_envs, num_players) if num_players else (num_envs,)
    return (
        jnp.zeros(returns_shape, jnp.float32),
        jnp.zeros((num_envs,), jnp.int32),
        jnp.zeros((num_envs,), bool),
    )


def close_episodes(
    done: Array, episode_return: Array, episode_length: Array
) -> tuple[dict[str, Array], Array, Array]:
    """``(stats, episode_return, episode_length)`` after a step: ``stats`` the
    ``TimeStep.info`` entries ``episode_return`` and ``episode_length`` (the running
    ``[N, ...]`` return and ``[N]`` length where ``done`` ``[N]``, 0 elsewhere), and both
    running statistics restarted at 0 where ``done``."""
    ended = done.reshape(done.shape + (1,) * (episode_return.ndim - done.ndim))
    stats = {
        "episode_return": jnp.where(ended, episode_return, 0.0),
        "episode_length": jnp.where(done, episode_length, 0),
    }
    return stats, jnp.where(ended, 0.0, episode_return), jnp.where(done, 0, episode_length)


def turn_based_spec(
    name: str,
    obs_shape: tuple[int, ...],
    num_actions: int,
    num_envs: int,
    max_episode_steps: int,
    num_players: int,
    masked: bool = True,
) -> EnvSpec:
    """The spec of a turn-based game of ``num_players`` players (the multi-player contract
    of ``jaxrl.types``): float32 observations ``obs_shape``, one ``Discrete(num_actions)``
    move a step and, when ``masked``, the mover's legal moves as the extra ``ACTION_MASK``,
    bool ``[num_actions]``."""
    mask = (ArraySpec(ACTION_MASK, (num_actions,), "bool"),) if masked else ()
    return EnvSpec(
        name=name,
        obs_shape=obs_shape,
        obs_dtype="float32",
        action_space=Discrete(num_actions),
        num_envs=num_envs,
        max_episode_steps=max_episode_steps,
        obs_extras=mask,
        num_players=num_players,
        turn_based=True,
    )


def make_vector_env(
    *,
    name: str,
    obs_shape: tuple[int, ...],
    obs_dtype: str,
    action_space: Discrete | Box,
    max_episode_steps: int,
    num_envs: int,
    reset_fn: ResetFn,
    step_fn: StepFn,
    obs_extras: tuple[ArraySpec, ...] = (),
) -> Env:
    """Vectorize a single-environment core and add time limit, episode stats and auto-reset.

    Args:
      name: canonical environment id stored in the spec.
      obs_shape: shape of one observation; obs_dtype: its dtype name (obs are cast to it).
      action_space: ``Discrete`` (actions ``[N]`` int) or ``Box`` (``[N, *shape]`` float).
      max_episode_steps: episodes are truncated after this many steps.
      num_envs: number ``N`` of environments stepped in lock-step.
      reset_fn: ``key -> (state, obs)`` for one environment; ``obs`` is an array, or with
        ``obs_extras`` a dict ``{"obs": main, extra.name: ...}`` (``jaxrl.types``).
      step_fn: ``(state, action, key) -> (state, obs, reward, terminated)`` for one
        environment; ``reward`` and ``terminated`` are scalars.
      obs_extras: further observation entries (e.g. ``ArraySpec("action_mask", (A,),
        "bool")``); each leaf is cast to its declared dtype.

    Returns:
      An ``Env`` whose ``reset(key)`` and ``step(env_state, action [N, ...], key)`` return
      ``(VectorEnvState, TimeStep)``. ``TimeStep.info`` holds, all with leading axis ``N``:

      * ``final_obs`` ``[N, *obs_shape]``: the observation the step actually produced (the
        last one of the episode where it ended; equal to ``obs`` elsewhere);
      * ``episode_return`` ``[N]`` float32: the raw return of the episode that ended at this
        step where ``terminated | truncated``, and 0 elsewhere;
      * ``episode_length`` ``[N]`` int32: its length in steps where an episode ended, 0
        elsewhere.

      After ``reset``, reward is 0, both flags are False and the info entries are
      ``final_obs == obs`` and zeros.
    """
    num_envs = check_int("num_envs", num_envs)
    max_episode_steps = check_int("max_episode_steps", max_episode_steps)
    spec = EnvSpec(
        name=name,
        obs_shape=tuple(obs_shape),
        obs_dtype=obs_dtype,
        action_space=action_space,
        num_envs=num_envs,
        max_episode_steps=max_episode_steps,
        obs_extras=tuple(obs_extras),
    )
    dtypes = jax.tree.map(lambda s: s.dtype, spec.obs_spec)
    cast = lambda obs: jax.tree.map(lambda x, dtype: x.astype(dtype), obs, dtypes)
    action_shape = (num_envs, *action_space.shape)
    v_reset = jax.vmap(reset_fn)
    v_step = jax.vmap(step_fn)

    def reset(key: PRNGKey) -> tuple[VectorEnvState, TimeStep]:
        core, obs = v_reset(jax.random.split(key, num_envs))
        obs = cast(obs)
        returns, lengths, false = fresh_episodes(num_envs)
        info = {"final_obs": obs, "episode_return": returns, "episode_length": lengths}
        state = VectorEnvState(core, returns, lengths)
        return state, TimeStep(obs, returns, false, false, info)

    def step(state: VectorEnvState, action: Array, key: PRNGKey) -> tuple[VectorEnvState, TimeStep]:
        if jnp.shape(action) != action_shape:
            raise ValueError(
                f"{name}: expected actions of shape {action_shape}, got {jnp.shape(action)}"
            )
        keys = jax.random.split(key, 2 * num_envs)  # one split: each call site costs compile time
        core, obs, reward, terminated = v_step(state.core, action, keys[:num_envs])
        obs = cast(obs)
        reward = reward.astype(jnp.float32)
        terminated = terminated.astype(bool)
        ep_return = state.episode_return + reward
        ep_length = state.episode_length + 1
        truncated = ~terminated & (ep_length >= max_episode_steps)
        done = terminated | truncated

        reset_core, reset_obs = v_reset(keys[num_envs:])
        core = where_done(done, reset_core, core)
        next_obs = where_done(done, cast(reset_obs), obs)
        stats, ep_return, ep_length = close_episodes(done, ep_return, ep_length)
        info = {"final_obs": obs, **stats}
        new_state = VectorEnvState(core, ep_return, ep_length)
        return new_state, TimeStep(next_obs, reward, terminated, truncated, info)

    return Env(spec=spec, reset=reset, step=step)
