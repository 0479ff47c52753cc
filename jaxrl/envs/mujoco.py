"""MuJoCo locomotion inside the fused runner: MJX (the default) or Brax.

``--env.backend`` picks the physics: ``"mjx"`` (the default) builds Gymnasium's v5 tasks on
MuJoCo's own JAX port (``jaxrl.envs.mjx``: Gymnasium's XML models, rewards, terminations,
observations and reset noise; pip install ``jaxrl[mujoco]``); ``"brax"`` (Brax's generalized
pipeline) or one of Brax's other pipelines (``"generalized"``, ``"positional"``, ``"spring"``)
keeps the Brax environments described below, for as long as Brax installs (Brax prints that
its pipelines are no longer maintained and points to MJX).

Brax: ``halfcheetah``, ``hopper``, ``walker2d``, ``ant`` and ``humanoid`` wrap Brax's environments
of the same names (Freeman et al. 2021, ``brax.envs``; the MuJoCo models and rewards of
Gymnasium's ``*-v4`` tasks) behind jaxrl's ``Env`` contract with ``make_vector_env``:
vectorized by ``vmap``, auto-reset with ``info["final_obs"]``, raw episode return and length,
termination (Hopper, Walker2d, Ant and Humanoid end when unhealthy) kept apart from
truncation at ``max_episode_steps`` (1000, as Gymnasium). Actions are ``Box`` in
``[-1, 1]^A`` (Humanoid: ``[-0.4, 0.4]``, as Gymnasium), observations float32.

Brax's pipelines: ``"brax"`` = ``"generalized"`` (Brax's default, its generalized-coordinates
pipeline, that of Brax's baselines), ``"positional"`` or ``"spring"``. Returns are comparable to
Gymnasium's v4 tasks in scale but not identical: the solvers, contacts and initial-state
noise differ in detail.

Why not envpool: envpool 1.2.5's ``.xla()`` interface does run inside ``jax.jit`` and
``lax.scan`` with jax 0.10 on CPU (checked: ``HalfCheetah-v4``, 4 envs), but (1) it accepts
only float64 actions, so it needs ``jax_enable_x64`` for the whole process; (2) it is a
host-side thread pool behind a custom call, so it cannot be ``vmap``-ped over seeds and does
not run on a GPU without a host round trip per step; and (3) its wheels plus MuJoCo assets
(about 200 MB) are host-side packages (``docs/concepts/backends.md``). Brax is pure
JAX, so the same program runs on CPU, GPU and TPU and vmaps over seeds.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.envs.core import documented_partial, make_vector_env
from jaxrl.types import Box, ConfigError, Env

BACKENDS = ("mjx", "brax", "generalized", "positional", "spring")

# jaxrl name -> (Brax env name, action bound)
_TASKS = {
    "HalfCheetah": ("halfcheetah", 1.0),
    "Hopper": ("hopper", 1.0),
    "Walker2d": ("walker2d", 1.0),
    "Ant": ("ant", 1.0),
    "Humanoid": ("humanoid", 0.4),
}


def brax_name(task: str) -> str:
    """Brax's name of ``task`` (a key of ``_TASKS``: ``"HalfCheetah"`` -> ``"halfcheetah"``)."""
    return _TASKS[task][0]


def make_brax_env(
    task: str,
    num_envs: int = 1,
    *,
    max_episode_steps: int = 1000,
    backend: str = "generalized",
    **kwargs,
) -> Env:
    """``task`` (a key of ``_TASKS``) as a jaxrl ``Env`` on a Brax pipeline (``backend``:
    ``"brax"`` is ``"generalized"``); ``kwargs`` go to Brax's constructor (e.g.
    ``ctrl_cost_weight``, ``terminate_when_unhealthy``)."""
    if backend not in BACKENDS[1:]:
        raise ConfigError(f"unknown backend {backend!r} for {task}; valid: {', '.join(BACKENDS)}")
    backend = "generalized" if backend == "brax" else backend
    try:
        from brax import envs as brax_envs
    except ImportError:
        raise ConfigError(
            f"env {task!r} needs brax, which is not installed: pip install 'jaxrl[mujoco]'"
        ) from None
    brax_name, bound = _TASKS[task]
    try:
        env = brax_envs.get_environment(brax_name, backend=backend, **kwargs)
    except TypeError as e:
        raise ConfigError(f"bad option for env {task!r}: {e}") from None
    action_dim = env.action_size
    # Brax's ``observation_size`` runs ``reset`` op by op; tracing it is much cheaper.
    obs_dim = jax.eval_shape(env.reset, jax.random.PRNGKey(0)).obs.shape[-1]

    def reset_fn(key: jax.Array) -> tuple[Any, jax.Array]:
        state = env.reset(key)
        return state, state.obs

    def step_fn(state: Any, action: jax.Array, key: jax.Array):
        del key  # Brax's locomotion dynamics are deterministic
        action = jnp.clip(action, -bound, bound)
        state = env.step(state, action)
        return state, state.obs, state.reward, state.done > 0

    return make_vector_env(
        name=f"{task}-brax",
        obs_shape=(obs_dim,),
        obs_dtype="float32",
        action_space=Box((action_dim,), (-bound,) * action_dim, (bound,) * action_dim),
        max_episode_steps=max_episode_steps,
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
    )


def make_env(task: str, num_envs: int = 1, *, backend: str = "mjx", **kwargs: Any) -> Env:
    """``task`` on ``backend``: ``"mjx"`` (``jaxrl.envs.mjx``, Gymnasium v5's definitions and
    keyword arguments) or a Brax pipeline (``make_brax_env``)."""
    if backend == "mjx":
        from jaxrl.envs.mjx import make_mjx_env

        return make_mjx_env(task, num_envs, **kwargs)
    return make_brax_env(task, num_envs, backend=backend, **kwargs)


def halfcheetah(num_envs: int = 1, **kwargs: Any) -> Env:
    """HalfCheetah: ``Box(6,)``, obs ``[17]``, never terminates, 1000 steps."""
    return make_env("HalfCheetah", num_envs, **kwargs)


def hopper(num_envs: int = 1, **kwargs: Any) -> Env:
    """Hopper: ``Box(3,)``, obs ``[11]``, terminates when unhealthy, 1000 steps."""
    return make_env("Hopper", num_envs, **kwargs)


def walker2d(num_envs: int = 1, **kwargs: Any) -> Env:
    """Walker2d: ``Box(6,)``, obs ``[17]``, terminates when unhealthy, 1000 steps."""
    return make_env("Walker2d", num_envs, **kwargs)


def ant(num_envs: int = 1, **kwargs: Any) -> Env:
    """Ant: ``Box(8,)``, obs ``[105]`` on MJX (``[27]`` on Brax), terminates when unhealthy."""
    return make_env("Ant", num_envs, **kwargs)


def humanoid(num_envs: int = 1, **kwargs: Any) -> Env:
    """Humanoid: ``Box(17,)`` in ``[-0.4, 0.4]``, obs ``[348]`` on MJX, ends when fallen."""
    return make_env("Humanoid", num_envs, **kwargs)


def _brax_factory(task: str) -> functools.partial[Env]:
    """``make_env`` of ``task`` on Brax unless a ``backend`` is given."""
    return documented_partial(f"{task} in Brax: see ``make_env``.", make_env, task, backend="brax")


halfcheetah_brax = _brax_factory("HalfCheetah")
hopper_brax = _brax_factory("Hopper")
walker2d_brax = _brax_factory("Walker2d")
ant_brax = _brax_factory("Ant")
humanoid_brax = _brax_factory("Humanoid")
