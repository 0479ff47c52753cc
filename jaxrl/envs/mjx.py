"""MuJoCo locomotion on MJX: Gymnasium's v5 tasks, physics by ``mujoco.mjx`` inside XLA.

``HalfCheetah``, ``Hopper``, ``Walker2d``, ``Ant`` and ``Humanoid`` load the MuJoCo XML
models that ship with Gymnasium (``gymnasium/envs/mujoco/assets/``; Walker2d's
``walker2d_v5.xml``) and step them with MJX (MuJoCo's own dynamics, solver and contacts,
written in JAX: Freeman et al., "MJX", MuJoCo 3), so that the whole rollout is one jitted,
``vmap``-pable program on CPU, GPU or TPU. Everything else is Gymnasium 1.x's ``*-v5``
definition (``gymnasium/envs/mujoco/<task>_v5.py``), parameter for parameter:

* ``frame_skip`` physics steps per env step (5; Hopper and Walker2d 4), ``dt = timestep *
  frame_skip``; the action is written to ``ctrl`` and held for the ``frame_skip`` steps;
* reward ``forward_reward_weight * x_velocity + healthy_reward * is_healthy -
  ctrl_cost_weight * |a|^2 [- contact cost]``, ``x_velocity`` the finite difference of
  ``qpos[0]`` (HalfCheetah, Hopper, Walker2d), of the torso's ``xpos`` (Ant) or of the
  mass-weighted centre of ``xipos`` (Humanoid) over ``dt``;
* termination when unhealthy (Hopper: ``|state[2:]| < 100``, ``z > 0.7``, ``|angle| < 0.2``;
  Walker2d: ``0.8 < z < 2``, ``|angle| < 1``; Ant: finite state, ``0.2 <= z <= 1``;
  Humanoid: ``1 < z < 2``); HalfCheetah never terminates; 1000 steps to truncation;
* observations ``qpos[1:], qvel`` (Hopper, Walker2d: ``clip(qvel, -10, 10)``), Ant ``qpos[2:],
  qvel, clip(cfrc_ext[1:], -1, 1)`` (105), Humanoid ``qpos[2:], qvel, cinert[1:], cvel[1:],
  qfrc_actuator[6:], cfrc_ext[1:]`` (348), with ``cfrc_ext`` from ``rne_postconstraint`` after
  the last physics step, as Gymnasium calls ``mj_rnePostConstraint``;
* Humanoid's XML asks for the PGS solver, which MJX does not implement: it gets Newton
  (MuJoCo's default; the same constrained problem, solved to tolerance by another method);
* reset noise ``qpos = init + U(-s, s)``, ``qvel = init + s * N(0, 1)`` (HalfCheetah, Ant) or
  ``+ U(-s, s)`` (Hopper, Walker2d, Humanoid), ``s = reset_noise_scale``.

The Gymnasium keyword arguments (``ctrl_cost_weight``, ``healthy_z_range``,
``terminate_when_unhealthy``, ``reset_noise_scale``, ...) are accepted with their v5
defaults. Differences from Gymnasium: MJX computes in float32 (Gymnasium's MuJoCo in float64)
and the action is clipped to the actuators' ``ctrlrange`` before the control cost (what
Stable-Baselines3 and CleanRL do before ``env.step`` anyway). ``tests/envs/test_mjx.py``
compares trajectories with Gymnasium's own envs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.envs.classic import ControlCore, control_env
from jaxrl.types import Box, ConfigError, Env

INF = math.inf


@dataclass(frozen=True)
class Task:
    """One Gymnasium v5 locomotion task: its XML, physics steps per env step, and the
    v5 keyword defaults (``params``), read by ``observe``/``reward_fn``/``healthy``."""

    xml: str
    frame_skip: int
    params: dict[str, Any]
    obs_fn: Callable[[Any, dict], jax.Array]  # (data, params) -> observation
    position_fn: Callable[[Any, Any], jax.Array]  # (model, data) -> x position (scalar)
    healthy_fn: Callable[[Any, dict], jax.Array] | None  # (data, params) -> bool
    contact_cost_fn: Callable[[Any, dict], jax.Array] | None = None
    gaussian_qvel_noise: bool = False
    needs_cfrc_ext: bool = False
    newton_solver: bool = False  # humanoid.xml asks for PGS, which MJX does not implement


def _impl_field(d: Any, name: str) -> jax.Array:
    """``d.<name>`` for a field MJX keeps in its backend's ``Data._impl`` (``cfrc_ext``,
    ``cinert``): mujoco-mjx 3.3+ deprecates reading those from ``Data`` directly."""
    impl = getattr(d, "_impl", None)
    return getattr(impl, name) if hasattr(impl, name) else getattr(d, name)


def _obs_planar(d: Any, p: dict, *, clip_qvel: bool) -> jax.Array:
    qvel = jnp.clip(d.qvel, -10.0, 10.0) if clip_qvel else d.qvel
    return jnp.concatenate([d.qpos[1:], qvel])


def _obs_ant(d: Any, p: dict) -> jax.Array:
    lo, hi = p["contact_force_range"]
    return jnp.concatenate(
        [d.qpos[2:], d.qvel, jnp.clip(_impl_field(d, "cfrc_ext")[1:], lo, hi).ravel()]
    )


def _obs_humanoid(d: Any, p: dict) -> jax.Array:
    parts = [d.qpos[2:], d.qvel, _impl_field(d, "cinert")[1:].ravel(), d.cvel[1:].ravel()]
    parts += [d.qfrc_actuator[6:], _impl_field(d, "cfrc_ext")[1:].ravel()]
    return jnp.concatenate(parts)


def _healthy_hopper(d: Any, p: dict) -> jax.Array:
    z, angle = d.qpos[1], d.qpos[2]
    state = jnp.concatenate([d.qpos, d.qvel])[2:]
    (s_lo, s_hi), (z_lo, z_hi), (a_lo, a_hi) = (
        p["healthy_state_range"],
        p["healthy_z_range"],
        p["healthy_angle_range"],
    )
    ok_state = jnp.all((s_lo < state) & (state < s_hi))
    return ok_state & (z_lo < z) & (z < z_hi) & (a_lo < angle) & (angle < a_hi)


def _healthy_walker(d: Any, p: dict) -> jax.Array:
    z, angle = d.qpos[1], d.qpos[2]
    (z_lo, z_hi), (a_lo, a_hi) = p["healthy_z_range"], p["healthy_angle_range"]
    return (z_lo < z) & (z < z_hi) & (a_lo < angle) & (angle < a_hi)


def _healthy_ant(d: Any, p: dict) -> jax.Array:
    state = jnp.concatenate([d.qpos, d.qvel])
    z_lo, z_hi = p["healthy_z_range"]
    return jnp.all(jnp.isfinite(state)) & (z_lo <= d.qpos[2]) & (d.qpos[2] <= z_hi)


def _healthy_humanoid(d: Any, p: dict) -> jax.Array:
    z_lo, z_hi = p["healthy_z_range"]
    return (z_lo < d.qpos[2]) & (d.qpos[2] < z_hi)


def _contact_ant(d: Any, p: dict) -> jax.Array:
    lo, hi = p["contact_force_range"]
    return p["contact_cost_weight"] * jnp.sum(
        jnp.square(jnp.clip(_impl_field(d, "cfrc_ext"), lo, hi))
    )


def _contact_humanoid(d: Any, p: dict) -> jax.Array:
    lo, hi = p["contact_cost_range"]
    return jnp.clip(
        p["contact_cost_weight"] * jnp.sum(jnp.square(_impl_field(d, "cfrc_ext"))), lo, hi
    )


def _qpos_x(m: Any, d: Any) -> jax.Array:
    return d.qpos[0]


def _torso_x(m: Any, d: Any) -> jax.Array:
    return d.xpos[1, 0]  # Ant's main_body=1 (the torso)


def _mass_centre_x(m: Any, d: Any) -> jax.Array:
    mass = m.body_mass
    return jnp.sum(mass * d.xipos[:, 0]) / jnp.sum(mass)


_COMMON = dict(forward_reward_weight=1.0, exclude_current_positions_from_observation=True)
_HEALTHY = dict(healthy_reward=1.0, terminate_when_unhealthy=True, ctrl_cost_weight=1e-3)


def _planar_walker(xml: str, healthy_fn: Callable[[Any, dict], jax.Array], **health: Any) -> Task:
    """A planar walker (Hopper, Walker2d): frame skip 4, the ``health`` ranges beside the
    common healthy options, reset noise 5e-3, observed with its velocities clipped."""
    params = dict(_COMMON, **_HEALTHY, **health, reset_noise_scale=5e-3)
    return Task(xml, 4, params, lambda d, p: _obs_planar(d, p, clip_qvel=True), _qpos_x, healthy_fn)


TASKS: dict[str, Task] = {
    "HalfCheetah": Task(
        "half_cheetah.xml",
        5,
        dict(_COMMON, ctrl_cost_weight=0.1, reset_noise_scale=0.1),
        lambda d, p: _obs_planar(d, p, clip_qvel=False),
        _qpos_x,
        None,
        gaussian_qvel_noise=True,
    ),
    "Hopper": _planar_walker(
        "hopper.xml",
        _healthy_hopper,
        healthy_state_range=(-100.0, 100.0),
        healthy_z_range=(0.7, INF),
        healthy_angle_range=(-0.2, 0.2),
    ),
    "Walker2d": _planar_walker(
        "walker2d_v5.xml",
        _healthy_walker,
        healthy_z_range=(0.8, 2.0),
        healthy_angle_range=(-1.0, 1.0),
    ),
    "Ant": Task(
        "ant.xml",
        5,
        dict(
            _COMMON,
            **dict(_HEALTHY, ctrl_cost_weight=0.5),
            contact_cost_weight=5e-4,
            healthy_z_range=(0.2, 1.0),
            contact_force_range=(-1.0, 1.0),
            reset_noise_scale=0.1,
        ),
        _obs_ant,
        _torso_x,
        _healthy_ant,
        _contact_ant,
        gaussian_qvel_noise=True,
        needs_cfrc_ext=True,
    ),
    "Humanoid": Task(
        "humanoid.xml",
        5,
        dict(
            _COMMON,
            **dict(_HEALTHY, ctrl_cost_weight=0.1, healthy_reward=5.0),
            forward_reward_weight=1.25,
            contact_cost_weight=5e-7,
            contact_cost_range=(-INF, 10.0),
            healthy_z_range=(1.0, 2.0),
            reset_noise_scale=1e-2,
        ),
        _obs_humanoid,
        _mass_centre_x,
        _healthy_humanoid,
        _contact_humanoid,
        needs_cfrc_ext=True,
        newton_solver=True,
    ),
}


def asset_path(xml: str) -> str:
    """Path of a Gymnasium MuJoCo XML model (``gymnasium/envs/mujoco/assets/<xml>``)."""
    import gymnasium.envs.mujoco as gym_mujoco

    return os.path.join(os.path.dirname(gym_mujoco.__file__), "assets", xml)


def _import_mjx():
    try:
        import mujoco
        from mujoco import mjx
        from mujoco.mjx._src.smooth import rne_postconstraint
    except ImportError:
        raise ConfigError(
            "the MuJoCo envs need mujoco and mujoco-mjx, which are not installed: "
            "pip install 'jaxrl[mujoco]'"
        ) from None
    return mujoco, mjx, rne_postconstraint


def _check_params(task: str, given: dict[str, Any]) -> dict[str, Any]:
    defaults = TASKS[task].params
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(
            f"unknown option {unknown[0]!r} for env {task!r}; "
            f"valid: max_episode_steps, backend, {', '.join(defaults)}"
        )
    params = dict(defaults, **given)
    if not params["exclude_current_positions_from_observation"]:
        raise ConfigError(
            f"env {task!r}: exclude_current_positions_from_observation=False is not "
            "supported; valid: True"
        )
    if params["reset_noise_scale"] < 0:
        raise ConfigError(f"env {task!r}: reset_noise_scale must be >= 0")
    return params


class Core(NamedTuple):
    """One MJX environment as pure functions (``jaxrl.envs.core``'s core contract) plus what
    ``make_vector_env`` and the parity test need: ``set_state(qpos, qvel) -> (data, obs)``
    (Gymnasium's ``set_state``: positions, velocities, then ``mj_forward``)."""

    reset_fn: Callable[[jax.Array], tuple[Any, jax.Array]]
    step_fn: Callable[..., tuple[Any, jax.Array, jax.Array, jax.Array]]
    set_state: Callable[[jax.Array, jax.Array], tuple[Any, jax.Array]]
    action_space: Box
    dt: float


# The cores made in this process, by task and options: a core is pure functions over an
# immutable model, so envs of the same task and options share one.
_CORES: dict[tuple[str, str], Core] = {}


def make_core(task: str, **kw: Any) -> Core:
    """The single-env MJX core of ``task`` (a key of ``TASKS``); ``kw`` are Gymnasium v5's
    keyword arguments for it. ``step_fn(data, action [A], key) -> (data, obs [D] float32,
    reward, terminated)``.

    Made once per task and options in a process (MuJoCo's model is loaded and put on the
    device once), with ``set_state`` jitted: MJX's forward pass, which a reset runs, is
    traced once however many programs reset the env (seconds each on a CPU)."""
    params = _check_params(task, kw)
    key = (task, repr(sorted(params.items())))
    if key not in _CORES:
        _CORES[key] = _build_core(task, params)
    return _CORES[key]


def _build_core(task: str, params: dict[str, Any]) -> Core:
    spec = TASKS[task]
    mujoco, mjx, rne_postconstraint = _import_mjx()
    mj_model = mujoco.MjModel.from_xml_path(asset_path(spec.xml))
    if spec.newton_solver:
        mj_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    model = mjx.put_model(mj_model, impl="jax")
    data0 = mjx.make_data(model, impl="jax")
    nq, nv, nu = mj_model.nq, mj_model.nv, mj_model.nu
    init_qpos = jnp.asarray(mj_model.qpos0, jnp.float32)
    lo = tuple(float(x) for x in mj_model.actuator_ctrlrange[:, 0])
    hi = tuple(float(x) for x in mj_model.actuator_ctrlrange[:, 1])
    low, high = jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32)
    dt = float(mj_model.opt.timestep) * spec.frame_skip
    noise = params["reset_noise_scale"]

    @jax.jit
    def set_state(qpos: jax.Array, qvel: jax.Array) -> tuple[Any, jax.Array]:
        qpos, qvel = jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)
        data = mjx.forward(model, data0.replace(qpos=qpos, qvel=qvel))
        return data, spec.obs_fn(data, params).astype(jnp.float32)

    def reset_fn(key: jax.Array) -> tuple[Any, jax.Array]:
        k_pos, k_vel = jax.random.split(key)
        qpos = init_qpos + jax.random.uniform(k_pos, (nq,), minval=-noise, maxval=noise)
        if spec.gaussian_qvel_noise:
            qvel = noise * jax.random.normal(k_vel, (nv,))
        else:
            qvel = jax.random.uniform(k_vel, (nv,), minval=-noise, maxval=noise)
        return set_state(qpos, qvel)

    def step_fn(data: Any, action: jax.Array, key: jax.Array):
        del key  # the dynamics are deterministic
        action = jnp.clip(action, low, high)
        x_before = spec.position_fn(model, data)
        data = data.replace(ctrl=action)
        data = jax.lax.fori_loop(0, spec.frame_skip, lambda _, d: mjx.step(model, d), data)
        if spec.needs_cfrc_ext:
            data = rne_postconstraint(model, data)
        x_velocity = (spec.position_fn(model, data) - x_before) / dt
        reward = params["forward_reward_weight"] * x_velocity
        reward -= params["ctrl_cost_weight"] * jnp.sum(jnp.square(action))
        terminated = jnp.asarray(False)
        if spec.healthy_fn is not None:
            healthy = spec.healthy_fn(data, params)
            reward += params["healthy_reward"] * healthy
            if params["terminate_when_unhealthy"]:
                terminated = ~healthy
        if spec.contact_cost_fn is not None:
            reward -= spec.contact_cost_fn(data, params)
        return data, spec.obs_fn(data, params).astype(jnp.float32), reward, terminated

    return Core(reset_fn, step_fn, set_state, Box((nu,), lo, hi), dt)


def make_mjx_env(task: str, num_envs: int = 1, *, max_episode_steps: int = 1000, **kw) -> Env:
    """``task`` (a key of ``TASKS``) on MJX as a jaxrl ``Env`` of ``num_envs`` copies.

    ``kw`` are Gymnasium v5's keyword arguments for the task (e.g. ``ctrl_cost_weight``);
    observations ``[N, obs_dim]`` float32, actions ``Box`` in the actuators' ``ctrlrange``.
    """
    core = make_core(task, **kw)
    obs_dim = jax.eval_shape(core.reset_fn, jax.random.PRNGKey(0))[1].shape[-1]
    control = ControlCore(f"{task}-mjx", obs_dim, core.action_space, core.reset_fn, core.step_fn)
    return control_env(control, num_envs, max_episode_steps)
