"""A user's environment checked where it enters jaxrl (``envs.make`` of a factory from
outside the library): the factory's signature, what it returns, and the shapes and dtypes
of ``reset`` and ``step`` against its ``EnvSpec``, each mistake one line naming what was
expected (``ConfigError``) instead of a traceback from inside an agent."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.types import Box, ConfigError, Env, batched_spec
from jaxrl.validation import first_line

SIGNATURE = "factory(num_envs=1, **options) -> jaxrl.types.Env"


def check_factory(name: str, factory: Callable[..., Any]) -> None:
    """ConfigError unless ``factory`` takes ``num_envs`` (or ``**options``)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to inspect: called as it is
        return
    names = {p.name for p in params}
    if "num_envs" not in names and not any(p.kind is p.VAR_KEYWORD for p in params):
        raise ConfigError(
            f"env {name!r}: its factory must be {SIGNATURE}; it takes {inspect.signature(factory)}"
        )


def check_env(name: str, env: Any, num_envs: int) -> None:
    """ConfigError unless ``env`` is an ``Env`` whose ``reset`` and ``step`` return the
    observations, rewards and flags its spec declares for ``num_envs`` copies."""
    if not isinstance(env, Env):
        raise ConfigError(
            f"env {name!r}: its factory must return a jaxrl.types.Env "
            f"(envs.make_vector_env builds one), got {type(env).__name__}"
        )
    spec = env.spec
    space = spec.action_space
    action = (
        jax.ShapeDtypeStruct((num_envs, *space.shape), jnp.float32)
        if isinstance(space, Box)
        else jax.ShapeDtypeStruct((num_envs,), jnp.int32)
    )
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    try:
        state, first = jax.eval_shape(env.reset, key)
        _, later = jax.eval_shape(env.step, state, action, key)
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"env {name!r}: reset(key) and step(state, action [{num_envs}, ...], key) must "
            f"trace under jax.jit; they failed: {first_line(e)}"
        ) from None
    players = () if spec.num_players == 1 else (spec.num_players,)
    expected = {
        "obs": batched_spec(spec.obs_spec, num_envs),
        "reward": jax.ShapeDtypeStruct((num_envs, *players), jnp.float32),
        "terminated": jax.ShapeDtypeStruct((num_envs,), jnp.bool_),
        "truncated": jax.ShapeDtypeStruct((num_envs,), jnp.bool_),
    }
    for call, timestep in (("reset", first), ("step", later)):
        for field, want in expected.items():
            got = getattr(timestep, field)
            if _layout(got) != _layout(want):
                raise ConfigError(
                    f"env {name!r}: {call} must return {field} {_describe(want)} (its spec, "
                    f"num_envs {num_envs}), got {_describe(got)}"
                )


def _layout(tree: Any) -> tuple[str, list[tuple[Any, Any]]]:
    """The structure of ``tree`` and each leaf's shape and dtype, to compare."""
    leaves = jax.tree.leaves(tree)
    return str(jax.tree.structure(tree)), [(x.shape, jnp.dtype(x.dtype)) for x in leaves]


def _describe(tree: Any) -> str:
    """``float32[2, 4]``, or a dict of such."""
    show = lambda s: f"{jnp.dtype(s.dtype).name}{list(s.shape)}"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in tree.items()) + "}"
    return show(tree) if hasattr(tree, "shape") else type(tree).__name__
