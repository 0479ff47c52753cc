"""JAX-native classic control with the dynamics of Gymnasium 1.x.

CartPole-v1, Acrobot-v1, MountainCar-v0, Pendulum-v1 and MountainCarContinuous-v0, each a
pure single-environment core (``reset(key) -> (state, obs)``,
``step(state, action, key) -> (state, obs, reward, terminated)``) vectorized by
``make_vector_env``. Equations, constants, initial-state distributions, termination
conditions, rewards and time limits follow ``gymnasium/envs/classic_control`` line by line,
in the same order of floating-point operations, so a float64 state (under
``jax.enable_x64``) reproduces Gymnasium's float64 trajectories to rounding error.

Each state is a 1-D array like Gymnasium's ``env.unwrapped.state`` (``[4]`` for CartPole
and Acrobot, ``[2]`` for the others) in the default float dtype (float32, or float64 with
x64 enabled); observations are float32.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.envs.core import ResetFn, StepFn, make_vector_env
from jaxrl.types import Array, ArraySpec, Box, Discrete, Env, PRNGKey

PI = math.pi


def _float() -> jnp.dtype:
    """The default float dtype: float32, or float64 when x64 is enabled."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


# --------------------------------------------------------------------------- CartPole-v1
_CP_GRAVITY = 9.8
_CP_MASSCART = 1.0
_CP_MASSPOLE = 0.1
_CP_TOTAL_MASS = _CP_MASSPOLE + _CP_MASSCART
_CP_LENGTH = 0.5  # half the pole's length
_CP_POLEMASS_LENGTH = _CP_MASSPOLE * _CP_LENGTH
_CP_FORCE_MAG = 10.0
_CP_TAU = 0.02
_CP_THETA_THRESHOLD = 12 * 2 * math.pi / 360
_CP_X_THRESHOLD = 2.4


def cartpole_reset(key: PRNGKey) -> tuple[Array, Array]:
    """State ``[x, x_dot, theta, theta_dot]`` uniform in ``(-0.05, 0.05)``; obs = state."""
    state = jax.random.uniform(key, (4,), _float(), -0.05, 0.05)
    return state, state


def cartpole_step(state: Array, action: Array, key: PRNGKey) -> tuple[Array, Array, Array, Array]:
    """Euler step of the cart-pole; reward 1 every step, including the terminal one."""
    del key
    x, x_dot, theta, theta_dot = state
    force = jnp.where(action == 1, _CP_FORCE_MAG, -_CP_FORCE_MAG).astype(state.dtype)
    costheta = jnp.cos(theta)
    sintheta = jnp.sin(theta)
    temp = (force + _CP_POLEMASS_LENGTH * jnp.square(theta_dot) * sintheta) / _CP_TOTAL_MASS
    thetaacc = (_CP_GRAVITY * sintheta - costheta * temp) / (
        _CP_LENGTH * (4.0 / 3.0 - _CP_MASSPOLE * jnp.square(costheta) / _CP_TOTAL_MASS)
    )
    xacc = temp - _CP_POLEMASS_LENGTH * thetaacc * costheta / _CP_TOTAL_MASS
    x = x + _CP_TAU * x_dot
    x_dot = x_dot + _CP_TAU * xacc
    theta = theta + _CP_TAU * theta_dot
    theta_dot = theta_dot + _CP_TAU * thetaacc
    state = jnp.stack([x, x_dot, theta, theta_dot])
    terminated = (
        (x < -_CP_X_THRESHOLD)
        | (x > _CP_X_THRESHOLD)
        | (theta < -_CP_THETA_THRESHOLD)
        | (theta > _CP_THETA_THRESHOLD)
    )
    return state, state, jnp.ones((), state.dtype), terminated


# ---------------------------------------------------------------------------- Acrobot-v1
_AC_DT = 0.2
_AC_L1 = 1.0  # LINK_LENGTH_1
_AC_M1 = 1.0  # LINK_MASS_1
_AC_M2 = 1.0  # LINK_MASS_2
_AC_LC1 = 0.5  # LINK_COM_POS_1
_AC_LC2 = 0.5  # LINK_COM_POS_2
_AC_I1 = 1.0  # LINK_MOI
_AC_I2 = 1.0
_AC_G = 9.8
_AC_MAX_VEL_1 = 4 * PI
_AC_MAX_VEL_2 = 9 * PI
_AC_TORQUES = (-1.0, 0.0, 1.0)


def _acrobot_obs(s: Array) -> Array:
    return jnp.stack([jnp.cos(s[0]), jnp.sin(s[0]), jnp.cos(s[1]), jnp.sin(s[1]), s[2], s[3]])


def acrobot_reset(key: PRNGKey) -> tuple[Array, Array]:
    """``[theta1, theta2, dtheta1, dtheta2]`` uniform in ``(-0.1, 0.1)``, drawn in float32."""
    state = jax.random.uniform(key, (4,), jnp.float32, -0.1, 0.1).astype(_float())
    return state, _acrobot_obs(state)


def _acrobot_dsdt(s: Array, a: Array) -> Array:
    """Time derivative of the state under torque ``a`` ("book" dynamics)."""
    m1, m2, l1, lc1, lc2 = _AC_M1, _AC_M2, _AC_L1, _AC_LC1, _AC_LC2
    I1, I2, g = _AC_I1, _AC_I2, _AC_G
    theta1, theta2, dtheta1, dtheta2 = s[0], s[1], s[2], s[3]
    cos, sin, pi = jnp.cos, jnp.sin, PI
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2)) + I1 + I2
    d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2
    phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2)
        + phi2
    )
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2) / (
        m2 * lc2**2 + I2 - d2**2 / d1
    )
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])


def _wrap(x: Array, m: float, M: float) -> Array:
    """Gymnasium's ``wrap``: add or subtract ``M - m`` until ``m <= x <= M``."""
    diff = M - m
    x = jax.lax.while_loop(lambda v: v > M, lambda v: v - diff, x)
    return jax.lax.while_loop(lambda v: v < m, lambda v: v + diff, x)


def acrobot_step(state: Array, action: Array, key: PRNGKey) -> tuple[Array, Array, Array, Array]:
    """One RK4 step of ``dt = 0.2``; reward -1 per step, 0 on the terminal step."""
    del key
    torque = jnp.asarray(_AC_TORQUES, state.dtype)[action]
    y0 = state
    dt = _AC_DT - 0.0
    dt2 = dt / 2.0
    k1 = _acrobot_dsdt(y0, torque)
    k2 = _acrobot_dsdt(y0 + dt2 * k1, torque)
    k3 = _acrobot_dsdt(y0 + dt2 * k2, torque)
    k4 = _acrobot_dsdt(y0 + dt * k3, torque)
    ns = y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    ns = jnp.stack(
        [
            _wrap(ns[0], -PI, PI),
            _wrap(ns[1], -PI, PI),
            jnp.minimum(jnp.maximum(ns[2], -_AC_MAX_VEL_1), _AC_MAX_VEL_1),
            jnp.minimum(jnp.maximum(ns[3], -_AC_MAX_VEL_2), _AC_MAX_VEL_2),
        ]
    )
    terminated = -jnp.cos(ns[0]) - jnp.cos(ns[1] + ns[0]) > 1.0
    reward = jnp.where(terminated, 0.0, -1.0).astype(state.dtype)
    return ns, _acrobot_obs(ns), reward, terminated


# ------------------------------------------------------------------------ MountainCar-v0
_MC_MIN_POSITION = -1.2
_MC_MAX_POSITION = 0.6
_MC_MAX_SPEED = 0.07
_MC_GOAL_POSITION = 0.5
_MC_GOAL_VELOCITY = 0.0
_MC_FORCE = 0.001
_MC_GRAVITY = 0.0025


def mountain_car_reset(key: PRNGKey) -> tuple[Array, Array]:
    """``[position, velocity]``: position uniform in ``(-0.6, -0.4)``, velocity 0."""
    position = jax.random.uniform(key, (), _float(), -0.6, -0.4)
    state = jnp.stack([position, jnp.zeros_like(position)])
    return state, state


def mountain_car_step(
    state: Array, action: Array, key: PRNGKey
) -> tuple[Array, Array, Array, Array]:
    """Push left (0), none (1) or right (2); reward -1 per step."""
    del key
    position, velocity = state[0], state[1]
    push = (action - 1).astype(state.dtype) * _MC_FORCE
    velocity = velocity + (push + jnp.cos(3 * position) * (-_MC_GRAVITY))
    velocity = jnp.clip(velocity, -_MC_MAX_SPEED, _MC_MAX_SPEED)
    position = position + velocity
    position = jnp.clip(position, _MC_MIN_POSITION, _MC_MAX_POSITION)
    velocity = jnp.where((position == _MC_MIN_POSITION) & (velocity < 0), 0.0, velocity)
    terminated = (position >= _MC_GOAL_POSITION) & (velocity >= _MC_GOAL_VELOCITY)
    state = jnp.stack([position, velocity])
    return state, state, -jnp.ones((), state.dtype), terminated


# -------------------------------------------------------------- MountainCarContinuous-v0
_MCC_MIN_ACTION = -1.0
_MCC_MAX_ACTION = 1.0
_MCC_GOAL_POSITION = 0.45
_MCC_POWER = 0.0015


def mountain_car_continuous_step(
    state: Array, action: Array, key: PRNGKey
) -> tuple[Array, Array, Array, Array]:
    """Force = action clipped to ``[-1, 1]``; reward ``100 * at_goal - 0.1 * action**2``.

    As in Gymnasium, the action penalty uses the *unclipped* action.
    """
    del key
    position, velocity = state[0], state[1]
    force = jnp.clip(action[0], _MCC_MIN_ACTION, _MCC_MAX_ACTION)
    velocity = velocity + (force * _MCC_POWER - 0.0025 * jnp.cos(3 * position))
    velocity = jnp.clip(velocity, -_MC_MAX_SPEED, _MC_MAX_SPEED)
    position = position + velocity
    position = jnp.clip(position, _MC_MIN_POSITION, _MC_MAX_POSITION)
    velocity = jnp.where((position == _MC_MIN_POSITION) & (velocity < 0), 0.0, velocity)
    terminated = (position >= _MCC_GOAL_POSITION) & (velocity >= _MC_GOAL_VELOCITY)
    reward = jnp.where(terminated, 100.0, 0.0) - action[0].astype(state.dtype) ** 2 * 0.1
    state = jnp.stack([position, velocity]).astype(state.dtype)
    return state, state, reward, terminated


# --------------------------------------------------------------------------- Pendulum-v1
_PD_MAX_SPEED = 8.0
_PD_MAX_TORQUE = 2.0
_PD_DT = 0.05
_PD_G = 10.0
_PD_M = 1.0
_PD_L = 1.0


def _pendulum_obs(state: Array) -> Array:
    return jnp.stack([jnp.cos(state[0]), jnp.sin(state[0]), state[1]])


def _angle_normalize(x: Array) -> Array:
    return ((x + PI) % (2 * PI)) - PI


def pendulum_reset(key: PRNGKey) -> tuple[Array, Array]:
    """``[theta, theta_dot]`` uniform in ``[-pi, pi] x [-1, 1]``; obs ``[cos, sin, thdot]``."""
    high = jnp.array([PI, 1.0], _float())
    state = jax.random.uniform(key, (2,), _float(), -high, high)
    return state, _pendulum_obs(state)


def pendulum_step(state: Array, action: Array, key: PRNGKey) -> tuple[Array, Array, Array, Array]:
    """Torque = action clipped to ``[-2, 2]``; reward ``-(theta^2 + 0.1 thdot^2 + 0.001 u^2)``.

    The torque keeps the action's dtype (float32), as in Gymnasium under NumPy 2 promotion.
    """
    del key
    th, thdot = state[0], state[1]
    g, m, l, dt = _PD_G, _PD_M, _PD_L, _PD_DT  # noqa: E741
    u = jnp.clip(action, -_PD_MAX_TORQUE, _PD_MAX_TORQUE)[0]
    costs = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
    newthdot = thdot + (3 * g / (2 * l) * jnp.sin(th) + 3.0 / (m * l**2) * u) * dt
    newthdot = jnp.clip(newthdot, -_PD_MAX_SPEED, _PD_MAX_SPEED)
    newth = th + newthdot * dt
    state = jnp.stack([newth, newthdot]).astype(state.dtype)
    return state, _pendulum_obs(state), -costs, jnp.zeros((), bool)


# ----------------------------------------------------------------------------- factories
class ControlCore(NamedTuple):
    """A control task: its pure ``reset``/``step`` (``envs.core.ResetFn``/``StepFn``) with
    float32 observations ``[obs_size]``, its action space and its Gymnasium name."""

    name: str
    obs_size: int
    action_space: Discrete | Box
    reset: ResetFn
    step: StepFn


CARTPOLE = ControlCore("CartPole-v1", 4, Discrete(2), cartpole_reset, cartpole_step)
ACROBOT = ControlCore("Acrobot-v1", 6, Discrete(3), acrobot_reset, acrobot_step)
MOUNTAIN_CAR = ControlCore("MountainCar-v0", 2, Discrete(3), mountain_car_reset, mountain_car_step)
MOUNTAIN_CAR_CONTINUOUS = ControlCore(
    "MountainCarContinuous-v0",
    2,
    Box((1,), (_MCC_MIN_ACTION,), (_MCC_MAX_ACTION,)),
    mountain_car_reset,
    mountain_car_continuous_step,
)
PENDULUM = ControlCore(
    "Pendulum-v1",
    3,
    Box((1,), (-_PD_MAX_TORQUE,), (_PD_MAX_TORQUE,)),
    pendulum_reset,
    pendulum_step,
)


def control_env(
    core: ControlCore,
    num_envs: int,
    max_episode_steps: int,
    obs_shape: tuple[int, ...] | None = None,
    obs_dtype: str = "float32",
    obs_extras: tuple[ArraySpec, ...] = (),
) -> Env:
    """The vectorized env of a control ``core``; its observation ``[obs_size]`` float32
    unless given (a core whose observation is a dict: ``envs/multi_input.py``)."""
    return make_vector_env(
        name=core.name,
        obs_shape=obs_shape or (core.obs_size,),
        obs_dtype=obs_dtype,
        action_space=core.action_space,
        max_episode_steps=max_episode_steps,
        num_envs=num_envs,
        reset_fn=core.reset,
        step_fn=core.step,
        obs_extras=obs_extras,
    )


def cartpole(num_envs: int = 1, *, max_episode_steps: int = 500) -> Env:
    """CartPole-v1: ``Discrete(2)`` (push left/right), obs ``[4]``, 500 steps."""
    return control_env(CARTPOLE, num_envs, max_episode_steps)


def acrobot(num_envs: int = 1, *, max_episode_steps: int = 500) -> Env:
    """Acrobot-v1: ``Discrete(3)`` (torque -1/0/+1), obs ``[6]``, 500 steps."""
    return control_env(ACROBOT, num_envs, max_episode_steps)


def mountain_car(num_envs: int = 1, *, max_episode_steps: int = 200) -> Env:
    """MountainCar-v0: ``Discrete(3)`` (push left/none/right), obs ``[2]``, 200 steps."""
    return control_env(MOUNTAIN_CAR, num_envs, max_episode_steps)


def mountain_car_continuous(num_envs: int = 1, *, max_episode_steps: int = 999) -> Env:
    """MountainCarContinuous-v0: ``Box(1,)`` force in ``[-1, 1]``, obs ``[2]``, 999 steps."""
    return control_env(MOUNTAIN_CAR_CONTINUOUS, num_envs, max_episode_steps)


def pendulum(num_envs: int = 1, *, max_episode_steps: int = 200) -> Env:
    """Pendulum-v1: ``Box(1,)`` torque in ``[-2, 2]``, obs ``[cos, sin, thdot]``, 200 steps."""
    return control_env(PENDULUM, num_envs, max_episode_steps)
