r"""Ape-X (Horgan et al. 2018, "Distributed Prioritized Experience Replay", arXiv:1803.00933):
many actors, each with its own exploration, feeding one prioritized replay with priorities
they compute themselves, and one learner.

The parts, as in the paper (section 3, Algorithms 1 and 2; section 4 and appendix C):

* **Actors and their epsilons.** ``K`` actors; actor ``i`` explores epsilon-greedily
  with the fixed :math:`\epsilon_i = \epsilon^{1 + \alpha\, i / (K - 1)}`, ``epsilon
  = 0.4`` and ``alpha = 7`` (section 4.1; one actor: ``epsilon``), :func:`actor_epsilons`.
* **Stale actor parameters.** Actors act with their own copy of the parameters (and of
  the target parameters, for priorities), refreshed from the learner every
  ``actor_update_period`` steps of an actor (the paper: every 400 frames, 100 agent
  steps), so they lag behind the learner as the paper's do. The copy lives in
  ``QLearningState.actors``.
* **Actor-side priorities.** New n-step transitions do not enter at the maximum priority
  (as in Schaul et al.'s PER) but at ``|delta|``, the TD error that the actor computes
  with its copy (section 3: "the actors ... compute priorities ... using their local
  copy of the network"), :func:`actor_priorities`.
* **Learner.** Prioritized replay (``alpha = 0.6``, ``beta = 0.4``, appendix C),
  importance weights, priority updates, double Q, dueling, 3-step returns, a target
  network: exactly the prioritized update of ``agents/q_learning/core.py``
  (``learn_from_replay``), reused, not copied.
* **Replay.** ``buffers/prioritized.py``, or with ``replay_shards > 1`` the sharded
  replay of ``buffers/sharded.py``, split over the run's devices by ``--devices``.

Which runner. Actors here are *groups of envs* in the fused runner (``runners/scan.py``):
the ``N`` envs of the vector env are split into ``K`` contiguous groups, and group ``i``
acts with :math:`\epsilon_i` and the actors' parameter copy. The alternative, actor
threads of the Sebulba runner, would give each actor its own wall-clock lag, but on this
2-core CPU threads add no throughput, their lag depends on the scheduler (so a run is not
repeatable), and they cannot be vmapped over seeds. With env groups a run is one
deterministic XLA program: ``--seeds K`` trains K seeds as one vmapped program, and the
claim "Ape-X DQN solves CartPole with K actors" is measured over seeds, with every
algorithmic part of the paper present (per-actor epsilons, stale actor parameters,
actor-side priorities, a prioritized learner). What it does not model is asynchrony
itself: actors and learner alternate, one rollout then one burst of updates.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, cast

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.agents.common.apex_actors import (
    ApexOptions,
    actor_count,
    actor_epsilons,
    completed_items,
    env_epsilons,
    make_apex_replay,
    refresh_actors,
)
from jaxrl.agents.q_learning import core as q_learning
from jaxrl.agents.q_learning.config import (
    Exploration,
    Prioritization,
    PrioritizedHparams,
    QLearningConfig,
)
from jaxrl.agents.q_learning.core import QLearningState, make_parts
from jaxrl.agents.q_learning.value_heads import scalar_head
from jaxrl.ops import masked_epsilon_greedy
from jaxrl.types import Agent, EnvSpec, Transition, action_mask
from jaxrl.validation import build_config, option


def actor_priorities(p: Any, state: QLearningState, batch: Transition) -> jax.Array:
    """``[B]`` priorities ``|delta|`` of windows ``batch`` (leaves ``[B, n, ...]``), computed
    as the learner computes them (``q_learning._targets`` and the head's loss) but with the
    actors' parameters and target parameters (``state.actors``)."""
    actor = dataclasses.replace(
        state, params=state.actors["params"], target_params=state.actors["target_params"]
    )
    target = q_learning._targets(p, actor, actor.params, batch, [None, None])
    ones = jnp.ones(batch.action.shape[:1], jnp.float32)
    _, (priorities, _) = q_learning._loss(p, actor.params, batch, target, ones, None)
    return priorities


def insert(p: Any, state: QLearningState, rollout: Transition) -> Any:
    """The buffer after adding ``rollout`` ``[T, N]`` and giving the items it completed the
    actors' priorities (instead of the maximum priority)."""
    num_steps, num_envs = rollout.reward.shape[:2]
    priority = q_learning._priority(p, state)
    buffer = p.buffer.add(state.buffer, rollout, priority)
    num_rows = p.cfg.buffer_size // num_envs
    rows_before = state.step // num_envs
    t, e = completed_items(rows_before, num_steps, num_envs, num_rows, p.cfg.n_step)
    priorities = actor_priorities(p, state, p.buffer.gather(buffer, t, e))
    return p.buffer.update_priorities(buffer, t * num_envs + e, priorities, priority)


# ---------------------------------------------------------------------------- Ape-X DQN


@flax.struct.dataclass
class ApexHparams(PrioritizedHparams):
    """``PrioritizedHparams`` and the actors' epsilon schedule (continuous: sweepable)."""

    actor_epsilon: jax.Array | float = 0.4
    actor_epsilon_alpha: jax.Array | float = 7.0


@dataclasses.dataclass(frozen=True)
class ApexDQNConfig(QLearningConfig, ApexOptions):
    """Ape-X DQN options (``ApexOptions`` for the actors). Defaults are Horgan et al.
    2018's (appendix C) where the paper gives one: double Q, dueling, 3-step returns,
    ``gamma`` 0.99, prioritized replay with ``alpha`` 0.6 and a fixed ``beta`` 0.4 (here
    annealed towards 1 over ``beta_decay_steps``, 10^9 by default: fixed in effect),
    gradient norm clipped at 40, learning rate 0.00025 / 4 (the paper's centered RMSProp;
    the optimizer option defaults to Adam as Rainbow's), batch 512, target network copied
    every 2,500 learner updates (here ``target_update_period``, in env steps). The
    ``epsilon_*`` schedule options of ``QLearningConfig`` are unused: actors keep their
    fixed epsilons; ``eval_epsilon`` is the greedy evaluation's.

    Attributes:
      alpha: prioritized replay's priority exponent (0.6).
      beta_start: the importance-weight exponent (0.4), annealed towards 1.
      beta_decay_steps: env steps over which the importance exponent reaches 1 (10^9:
        fixed in effect).
      priority_eps: added to |TD error| in priorities, so none is zero.
    """

    double: bool = True
    dueling: bool = True
    n_step: int = 3
    lr: float = 6.25e-5
    batch_size: int = 512
    buffer_size: int = 100_000
    max_grad_norm: float | None = 40.0
    target_update_period: int = 2_500
    alpha: float = option(0.6, ge=0)
    beta_start: float = option(0.4, ge=0, le=1)
    beta_decay_steps: int = option(1_000_000_000, ge=0)
    priority_eps: float = option(1e-6, ge=0)


def _init(p: Any, key: jax.Array) -> QLearningState:
    state = q_learning._init(p, key)
    return dataclasses.replace(
        state, actors={"params": state.params, "target_params": state.target_params}
    )


def _act(p: Any, state: QLearningState, obs, carry, key: jax.Array, explore: bool = True):
    """Greedy evaluation: the learner's parameters (``q_learning``). Exploring: the actors'
    parameters, env ``j`` epsilon-greedy with its actor's epsilon."""
    if not explore:
        return q_learning._act(p, state, obs, carry, key, explore)
    out = q_learning._apply(p, state.actors["params"], obs, None, deterministic=True)
    q = p.head.q_values(out)
    h = cast(ApexHparams, state.hparams)  # make_apex_dqn's parts
    k = actor_count(p.cfg, p.spec.num_envs)
    epsilon = env_epsilons(q.shape[0], k, h.actor_epsilon, h.actor_epsilon_alpha)
    return masked_epsilon_greedy(key, q, epsilon, action_mask(obs)), carry, {}


def _update(p: Any, state: QLearningState, rollout: Transition, key: jax.Array):
    """Insert with the actors' priorities, learn as prioritized DQN, refresh the actors."""
    rollout = rollout._replace(extras={})
    num_steps, num_envs = rollout.reward.shape[:2]
    env_steps = num_steps * num_envs
    state = dataclasses.replace(
        state, buffer=insert(p, state, rollout), step=state.step + env_steps
    )
    state, metrics = q_learning.learn_from_replay(p, state, key, env_steps)
    new = {"params": state.params, "target_params": state.target_params}
    rows, period = state.step // num_envs, p.cfg.actor_update_period
    actors = refresh_actors(state.actors, new, rows, num_steps, period)
    h = cast(ApexHparams, state.hparams)
    k = actor_count(p.cfg, p.spec.num_envs)
    epsilons = actor_epsilons(k, h.actor_epsilon, h.actor_epsilon_alpha)
    return dataclasses.replace(state, actors=actors), {**metrics, "epsilon": epsilons.mean()}


def apex_dqn_parts(spec: EnvSpec, cfg: ApexDQNConfig, name: str = "apex_dqn") -> Any:
    """The Q-learning parts of Ape-X DQN: the config's scalar head, the Ape-X replay, no
    noisy nets, prioritization with ``ApexHparams``."""
    buffer = make_apex_replay(spec, cfg, name)
    explore = Exploration(by_epsilon=True)
    parts = make_parts(
        spec, cfg, scalar_head(cfg), buffer, explore, Prioritization(cfg.beta_decay_steps), name
    )
    return parts._replace(hparams=ApexHparams)


def make_apex_dqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds Ape-X DQN for ``spec``; ``ConfigError`` on a bad option, env or layout."""
    cfg = build_config(ApexDQNConfig, overrides, "agent 'apex_dqn'")
    p = apex_dqn_parts(spec, cfg)
    return Agent(
        init=functools.partial(_init, p),
        act=functools.partial(_act, p),
        update=functools.partial(_update, p),
    )
