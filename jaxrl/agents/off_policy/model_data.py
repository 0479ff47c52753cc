"""MBPO's model data (``agents/off_policy/mbpo.py``): the termination functions of the
model's rollouts (built in by env, or a user's, as Emote's ``ModelEnv`` takes them) and the
buffer views that mix real and model transitions into SAC's minibatches."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.common.action_box import action_box
from jaxrl.buffers import ReplayBuffer, ReplaySample
from jaxrl.trust import user_function
from jaxrl.types import ConfigError, EnvSpec
from jaxrl.validation import first_line

TERMINATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "Pendulum": lambda s: jnp.zeros(s.shape[:-1], bool),
    "HalfCheetah": lambda s: jnp.zeros(s.shape[:-1], bool),
    "MountainCarContinuous": lambda s: s[..., 0] >= 0.45,
}


def _checked(fn: Callable, what: str, args: tuple, dtype: Any) -> Callable:
    """``fn`` after one abstract call on ``args`` ([R, ...] arrays, R = 2): ConfigError
    (one line) unless it returns one ``[R]`` array castable to ``dtype``."""
    try:
        out = jax.eval_shape(fn, *args)
    except Exception as e:  # noqa: BLE001 - the user's function, reported in one line
        raise ConfigError(f"{what} fails on [R, ...] arrays: {first_line(e)}") from None
    r = args[-1].shape[0]
    if not hasattr(out, "shape") or out.shape != (r,):
        got = getattr(out, "shape", type(out).__name__)
        raise ConfigError(f"{what} must return one value per state, shape [{r}]; got {got}")
    return lambda *a: fn(*a).astype(dtype)


def user_functions(
    spec: EnvSpec, termination_fn: str | None, reward_fn: str | None, name: str
) -> tuple[Callable | None, Callable | None]:
    """``(terminal(action, next_obs) -> bool [R], reward(action, next_obs) -> float32
    [R])`` from ``termination_fn`` and ``reward_fn``, each checked on a batch of 2 (None
    where not given). A termination function of one argument takes ``next_obs`` only."""
    obs = jax.ShapeDtypeStruct((2, spec.obs_shape[0]), jnp.float32)
    action = jax.ShapeDtypeStruct((2, action_box(spec, name)[0].shape[0]), jnp.float32)
    terminal = reward = None
    if termination_fn is not None:
        fn = user_function(termination_fn, "termination_fn", name)
        what = f"agent '{name}' termination_fn '{termination_fn}'"
        if _positional(fn) == 1:
            one = _checked(fn, what, (obs,), jnp.bool_)
            terminal = lambda a, next_obs: one(next_obs)
        else:
            terminal = _checked(fn, what, (action, obs), jnp.bool_)
    if reward_fn is not None:
        fn = user_function(reward_fn, "reward_fn", name)
        what = f"agent '{name}' reward_fn '{reward_fn}'"
        reward = _checked(fn, what, (action, obs), jnp.float32)
    return terminal, reward


def _positional(fn: Callable) -> int:
    """How many positional parameters ``fn`` takes (2 where it cannot be told)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in params) or 2


def mixed_buffer(real: ReplayBuffer | None, model: ReplayBuffer | None) -> ReplayBuffer:
    """A buffer view over the state ``(real_state, model_state)`` whose ``sample`` is the
    concatenation ``[real batch; model batch]`` (either may be absent: None), for the
    skeleton's ``learn``."""

    def sample(state, key):
        real_key, model_key = jax.random.split(key)
        parts = []
        if real is not None:
            parts.append(real.sample(state[0], real_key).experience)
        if model is not None:
            parts.append(model.sample(state[1], model_key).experience)
        experience = jax.tree.map(lambda *xs: jnp.concatenate(xs, 0), *parts)
        b = experience.reward.shape[0]
        zeros = jnp.zeros((b,), jnp.int32)
        return ReplaySample(experience, zeros, zeros, zeros, jnp.ones((b,), jnp.float32))

    any_one = cast(ReplayBuffer, real if real is not None else model)  # one at least
    return any_one._replace(sample=sample, num_items=lambda s: jnp.ones((), jnp.int32))


def scheduled_buffer(real: ReplayBuffer, model: ReplayBuffer) -> ReplayBuffer:
    """A buffer view over the state ``(real_state, model_state, n_real)`` whose ``sample``
    draws a whole batch from each and keeps row ``i`` from the real one where ``i <
    n_real`` (int32 scalar, set each update from the ``real_ratio`` schedule), else from
    the model's: the same composition as ``mixed_buffer``'s at a ratio that may change
    inside the compiled program."""

    def sample(state, key):
        real_key, model_key = jax.random.split(key)
        real_batch = real.sample(state[0], real_key).experience
        model_batch = model.sample(state[1], model_key).experience
        b = real_batch.reward.shape[0]
        is_real = jnp.arange(b) < state[2]

        def pick(r, m):
            return jnp.where(is_real.reshape(-1, *[1] * (r.ndim - 1)), r, m.astype(r.dtype))

        zeros = jnp.zeros((b,), jnp.int32)
        experience = jax.tree.map(pick, real_batch, model_batch)
        return ReplaySample(experience, zeros, zeros, zeros, jnp.ones((b,), jnp.float32))

    return real._replace(sample=sample, num_items=lambda s: jnp.ones((), jnp.int32))
