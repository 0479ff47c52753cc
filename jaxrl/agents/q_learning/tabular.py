r"""Tabular Q-learning (Watkins 1989; Sutton & Barto 2018, eq. 6.8), RLHive's tutorial
agent (``TabularQLearningAgent(obs_dim, act_dim, gamma, alpha, explore_steps,
final_epsilon)``), for envs with one-hot observations (e.g. ``FrozenLake-v1``).

The state is a table ``q`` ``[S, A]`` float32 (zeros at init), ``S`` the observation's
length; the observation ``[S]`` is one-hot and ``s = argmax(obs)``. Acting is
epsilon-greedy with ties among the greedy actions broken uniformly at random (as RLHive's
``np.random.choice(best_actions)``; with a zero table this is what explores at first);
epsilon follows ``agents/common/optim.py``'s schedules over env steps (RLHive's
``LinearSchedule(1.0, final_epsilon, explore_steps)`` by default). ``update`` applies, to
each transition of the rollout ``[T, N]`` in order (time-major, env by env),

.. math::
    Q(s, a) \leftarrow Q(s, a) + \alpha\,\bigl(r + \gamma\,(1 - \text{terminated})
        \max_{a'} Q(s', a') - Q(s, a)\bigr),

with ``s'`` the true next observation (truncated episodes bootstrap; RLHive's tutorial
bootstraps through terminations too, which this does not).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.agents.common.optim import EpsilonOptions, epsilon_schedule
from jaxrl.types import (
    Agent,
    ConfigError,
    Discrete,
    EnvSpec,
    Obs,
    Transition,
    main_obs,
    shared_field,
)
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class TabularQConfig(EpsilonOptions):
    """Tabular Q-learning options (RLHive's tutorial names in parentheses).

    Attributes:
      alpha: step size (``alpha``), 0.1.
      gamma: discount (``gamma``), 0.99.
      epsilon_start: 1.0 (RLHive's schedule starts at 1).
      epsilon_end: final epsilon (``final_epsilon``), 0.05.
      epsilon_decay_steps: env steps of the decay (``explore_steps``), 50,000.
      epsilon_schedule: ``"linear"``, ``"exponential"`` or ``"piecewise"``
        (``agents/common/optim.py``'s epsilon schedules).
      epsilon_decay: the exponential schedule's factor per acting call.
      epsilon_boundaries: the piecewise schedule's env steps.
      epsilon_values: the piecewise schedule's epsilons at those steps.
      eval_epsilon: epsilon of greedy evaluation (0).
    """

    alpha: float = option(0.1, gt=0, le=1)
    gamma: float = option(0.99, ge=0, le=1)
    epsilon_decay_steps: int = option(50_000, ge=0)


@flax.struct.dataclass
class TabularQState:
    q: jax.Array  # [S, A] float32
    step: jax.Array = shared_field()  # int32 env steps given to update
    hparams: dict[str, jax.Array]


def q_update(q: jax.Array, s, a, r, s_next, terminated, alpha, gamma) -> jax.Array:
    """The tables after the Q-learning updates of transitions ``[M]`` applied in order."""

    def one(q, x):
        s, a, r, s_next, term = x
        target = r + gamma * (1.0 - term.astype(jnp.float32)) * q[s_next].max()
        return q.at[s, a].add(alpha * (target - q[s, a])), None

    return jax.lax.scan(one, q, (s, a, r, s_next, terminated))[0]


def greedy_random_ties(key: jax.Array, values: jax.Array) -> jax.Array:
    """``[N]`` int32: for each row of ``values`` ``[N, A]``, a uniformly random action among
    those of maximal value."""
    best = values == values.max(axis=-1, keepdims=True)
    return jax.random.categorical(key, jnp.where(best, 0.0, -jnp.inf)).astype(jnp.int32)


def make_tabular_q(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a tabular Q-learning agent for ``spec``; ``ConfigError`` on a bad option or
    an env whose observations are not one-hot vectors with discrete actions."""
    cfg = build_config(TabularQConfig, overrides, "agent 'tabular_q'")
    one_hot = len(spec.obs_shape) == 1 and spec.obs_dtype == "bool"
    if not isinstance(spec.action_space, Discrete) or not one_hot:
        raise ConfigError(
            f"agent 'tabular_q' needs one-hot observations [S] (bool) and discrete actions, "
            f"but {spec.name} has obs {spec.obs_shape} {spec.obs_dtype} and "
            f"{spec.action_space}; use FrozenLake-v1"
        )
    num_states, num_actions = spec.obs_shape[0], spec.action_space.n
    schedule_fields = ("epsilon_start", "epsilon_end", "eval_epsilon", "alpha", "gamma")

    def init(key: jax.Array) -> TabularQState:
        del key
        return TabularQState(
            q=jnp.zeros((num_states, num_actions), jnp.float32),
            step=jnp.zeros((), jnp.int32),
            hparams={k: jnp.asarray(getattr(cfg, k), jnp.float32) for k in schedule_fields},
        )

    def epsilon(state: TabularQState, explore: bool) -> jax.Array:
        h = state.hparams
        if not explore:
            return h["eval_epsilon"]
        return epsilon_schedule(cfg, h["epsilon_start"], h["epsilon_end"], spec.num_envs)(
            state.step
        )

    def act(state: TabularQState, obs: Obs, carry, key: jax.Array, explore: bool = True):
        greedy_key, coin_key, random_key = jax.random.split(key, 3)
        s = jnp.argmax(main_obs(obs), axis=-1)
        greedy = greedy_random_ties(greedy_key, state.q[s])
        uniform = jax.random.randint(random_key, greedy.shape, 0, num_actions, jnp.int32)
        coin = jax.random.uniform(coin_key, greedy.shape) < epsilon(state, explore)
        return jnp.where(coin, uniform, greedy), carry, {}

    def update(state: TabularQState, rollout: Transition, key: jax.Array):
        del key
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # [T, N, ...] -> [T * N, ...]
        s = jnp.argmax(flat(main_obs(rollout.obs)), axis=-1)
        s_next = jnp.argmax(flat(main_obs(rollout.next_obs)), axis=-1)
        h = state.hparams
        args = (flat(rollout.action), flat(rollout.reward), s_next, flat(rollout.terminated))
        q = q_update(state.q, s, *args, h["alpha"], h["gamma"])
        step = state.step + rollout.reward.size
        metrics = {"q_mean": q.mean(), "epsilon": epsilon(state, True)}
        return dataclasses.replace(state, q=q, step=step), metrics

    return Agent(init=init, act=act, update=update)
