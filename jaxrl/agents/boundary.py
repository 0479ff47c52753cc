"""A user's agent checked where it enters a run (``agents.build`` of a factory from
outside the library): the factory returns a ``jaxrl.types.Agent`` whose ``init`` and
``act`` trace under ``jax.jit`` and whose actions have the env's shape and dtype, each
mistake one line naming what was expected (``ConfigError``) instead of a traceback from
inside the compiled program."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.types import Agent, Box, ConfigError, EnvSpec, batched_spec
from jaxrl.validation import first_line


def check_agent(name: str, agent: Any, spec: EnvSpec) -> None:
    """ConfigError unless ``agent`` acts in an env of ``spec`` as the contract says."""
    if not isinstance(agent, Agent):
        raise ConfigError(
            f"agent {name!r}: its factory must return a jaxrl.types.Agent(init, act, update), "
            f"got {type(agent).__name__}"
        )
    n, space = spec.num_envs, spec.action_space
    want = (
        jax.ShapeDtypeStruct((n, *space.shape), jnp.float32)
        if isinstance(space, Box)
        else jax.ShapeDtypeStruct((n,), jnp.int32)
    )
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    obs = batched_spec(spec.obs_spec, n)
    try:
        state = jax.eval_shape(agent.init, key)
        carry = jax.eval_shape(lambda: agent.init_carry(n))
        out = jax.eval_shape(
            lambda s, o, c, k: agent.act(s, o, c, k, False), state, obs, carry, key
        )
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"agent {name!r}: init(key) and act(state, obs [{n}, ...], carry, key, explore) "
            f"must trace under jax.jit; they failed: {first_line(e)}"
        ) from None
    action = out[0] if isinstance(out, tuple) and len(out) == 3 else None
    if action is None or not hasattr(action, "shape"):
        raise ConfigError(f"agent {name!r}: act must return (action, carry, extras)")
    kind = jnp.floating if isinstance(space, Box) else jnp.integer
    if action.shape != want.shape or not jnp.issubdtype(action.dtype, kind):
        raise ConfigError(
            f"agent {name!r}: act must return actions {jnp.dtype(want.dtype).name}"
            f"{list(want.shape)} for {n} envs, got {jnp.dtype(action.dtype).name}"
            f"{list(action.shape)}"
        )
