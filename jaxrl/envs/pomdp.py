"""JAX-native partially observed tasks, where a feed-forward policy is known to fail.

* ``StatelessCartPole-v1``: CartPole-v1 (``envs/classic.py``, Gymnasium's dynamics) with
  the velocities masked, obs ``[x, theta]`` (POPGym's StatelessCartPole; Morad et al.
  2023). The velocities must be inferred from successive positions.
* ``StatelessPendulum-v1``: Pendulum-v1 with the angular velocity masked, obs
  ``[cos theta, sin theta]`` (POPGym's StatelessPendulum).
* ``MemoryChain-v0``: bsuite's memory task (``memory_length``; Osband et al. 2020): a
  context bit ``c`` in {-1, +1} is shown at the first step only, the query at the last of
  ``memory_length`` steps; the action at the query earns +1 if it names the context
  (action 1 for +1, 0 for -1) and -1 otherwise, and ends the episode (terminated); every
  other step earns 0. Obs ``[3]``: ``(1 - t / memory_length, query flag, context at t = 0
  else 0)``. A memoryless policy can only guess: expected return 0; one that remembers
  the bit: 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.classic import CARTPOLE, PENDULUM, ControlCore, control_env
from jaxrl.types import Array, Discrete, Env, PRNGKey
from jaxrl.validation import check_int


def masked(core: ControlCore, name: str, positions: Sequence[int]) -> ControlCore:
    """``core`` observing only ``obs[positions]`` (the rest masked), named ``name``."""
    kept = np.asarray(positions)

    def reset(key: PRNGKey) -> tuple[Array, Array]:
        state, obs = core.reset(key)
        return state, obs[kept]

    def step(state: Array, action: Array, key: PRNGKey):
        state, obs, reward, terminated = core.step(state, action, key)
        return state, obs[kept], reward, terminated

    return ControlCore(name, len(positions), core.action_space, reset, step)


# x and theta of [x, x_dot, theta, theta_dot]; cos and sin of [cos, sin, thdot]
STATELESS_CARTPOLE = masked(CARTPOLE, "StatelessCartPole-v1", (0, 2))
STATELESS_PENDULUM = masked(PENDULUM, "StatelessPendulum-v1", (0, 1))


def stateless_cartpole(num_envs: int = 1, *, max_episode_steps: int = 500) -> Env:
    """CartPole-v1 with obs ``[x, theta]``: ``Discrete(2)``, 500 steps."""
    return control_env(STATELESS_CARTPOLE, num_envs, max_episode_steps)


def stateless_pendulum(num_envs: int = 1, *, max_episode_steps: int = 200) -> Env:
    """Pendulum-v1 with obs ``[cos theta, sin theta]``: ``Box(1,)`` in ``[-2, 2]``, 200 steps."""
    return control_env(STATELESS_PENDULUM, num_envs, max_episode_steps)


def memory_chain(num_envs: int = 1, *, memory_length: int = 10) -> Env:
    """bsuite's memory task of ``memory_length`` steps (module docstring): ``Discrete(2)``,
    obs ``[3]``; the state is ``[t, context]`` (float32)."""
    length = check_int("memory_length", memory_length)

    def observe(t: Array, context: Array) -> Array:
        query = (t == length - 1).astype(jnp.float32)
        return jnp.stack([1.0 - t / length, query, jnp.where(t == 0, context, 0.0)])

    def reset(key: PRNGKey) -> tuple[Array, Array]:
        context = jnp.where(jax.random.bernoulli(key), 1.0, -1.0)
        state = jnp.stack([jnp.zeros(()), context])
        return state, observe(state[0], context)

    def step(state: Array, action: Array, key: PRNGKey):
        del key
        t, context = state[0], state[1]
        last = t == length - 1
        correct = jnp.where(context > 0, action == 1, action == 0)
        reward = jnp.where(last, jnp.where(correct, 1.0, -1.0), 0.0)
        state = jnp.stack([t + 1, context])
        return state, observe(t + 1, context), reward, last

    core = ControlCore("MemoryChain-v0", 3, Discrete(2), reset, step)
    return control_env(core, num_envs, length)
