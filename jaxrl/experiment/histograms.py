"""Histograms for TensorBoard on the evaluation rows (``--log tensorboard``).

After a chunk whose row holds an evaluation, the driver runs the agent greedily
(``act(..., explore=False)``) for ``STEPS`` steps of the evaluation env and writes, under
``eval/``, histograms of what it saw: ``q_values`` (value agents: every action's Q-value,
``[steps * N * A]``), ``action_probs`` (policy agents with discrete actions: every action's
probability) where the agent's greedy ``act`` returns them in its extras, and ``actions``
(every agent: the greedy actions taken). One extra jitted program, compiled at the first
evaluation row; single runs of a JAX-native env only (not ``--seeds``/``--sweep`` batches or
the host runner).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxrl.types import Env

STEPS = 16
KEYS = ("q_values", "action_probs")


def make_collector(
    agent: Any, env: Any, steps: int = STEPS
) -> Callable[[Any, jax.Array], dict[str, np.ndarray]] | None:
    """``collect(agent_state, key) -> {name: flat float array}``, or None where ``env`` is
    not a JAX-native ``Env`` (the host runner's envs)."""
    if not isinstance(env, Env):
        return None

    @jax.jit
    def rollout(agent_state: Any, key: jax.Array) -> dict[str, jax.Array]:
        reset_key, key = jax.random.split(key)
        env_state, ts = env.reset(reset_key)
        carry = agent.init_carry(env.spec.num_envs)

        def body(loop, key):
            env_state, obs, carry = loop
            act_key, step_key = jax.random.split(key)
            action, carry, extras = agent.act(agent_state, obs, carry, act_key, False)
            env_state, ts = env.step(env_state, action, step_key)
            out = {k: extras[k] for k in KEYS if k in extras}
            return (env_state, ts.obs, carry), {**out, "actions": action}

        return jax.lax.scan(body, (env_state, ts.obs, carry), jax.random.split(key, steps))[1]

    def collect(agent_state: Any, key: jax.Array) -> dict[str, np.ndarray]:
        out = jax.device_get(rollout(agent_state, key))
        return {k: np.asarray(v, np.float64).ravel() for k, v in out.items()}

    return collect
