r"""Ape-X DDPG (Horgan et al. 2018, "Distributed Prioritized Experience Replay", section
4.2, Ape-X DPG): Ape-X's actors and priorities (``agents/q_learning/apex.py``) over DDPG
(``agents/off_policy/td3.py`` on ``agents/off_policy/core.py``).

* **Actors** are groups of the vector env's envs, as in Ape-X DQN (``agents/q_learning/apex.py``
  says why). Actor ``i`` of ``K`` scales the exploration noise by
  :math:`\epsilon_i = \epsilon^{1 + \alpha\, i / (K - 1)}` (0.4 and 7): the paper's
  per-actor epsilon schedule applied to the noise scale, as RLlib's Ape-X DDPG does
  (``PerWorkerOrnsteinUhlenbeckNoise``; for Gaussian noise the same scale multiplies
  ``noise_sigma``). Actors act with a copy of the actor network refreshed every
  ``actor_update_period`` actor steps.
* **Actor-side priorities.** New n-step items enter the prioritized replay at
  :math:`|y - Q(s, a)|`, ``y`` the n-step target, both under the actors' copy of the
  actor, critic and target networks: the TD error DDPG's own gradient step reports
  (``Algorithm.gradient_step``'s ``td_error``), evaluated on the actors' copy, so the
  priority is the learner's formula and not a second one (the step's parameter update is
  discarded; XLA drops its unused backward pass).
* **Learner**: DDPG with prioritized replay (``alpha`` 0.6, ``beta`` 0.4) and 3-step
  returns, unchanged.

The replay is one prioritized buffer (``replay_shards`` must be 1: the sharded replay
serves Ape-X DQN; ``buffers/sharded.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.agents.common.apex_actors import (
    ApexOptions,
    actor_count,
    actor_epsilons,
    check_actors,
    completed_items,
    env_epsilons,
    refresh_actors,
)
from jaxrl.agents.off_policy import td3
from jaxrl.agents.off_policy.core import OffPolicyState
from jaxrl.agents.off_policy.parts import replay_batch
from jaxrl.buffers import ReplaySample
from jaxrl.types import Agent, EnvSpec, Transition
from jaxrl.validation import build_config, fixes, option

_EPSILONS = ("actor_epsilon", "actor_epsilon_alpha")  # hparams: sweepable
_COPIED = ("actor_params", "critic_params", "target_actor_params", "target_critic_params")


@dataclasses.dataclass(frozen=True)
@fixes(prioritized=True, replay_shards=1)  # one prioritized replay
class ApexDDPGConfig(td3.DDPGConfig, ApexOptions):
    """Ape-X DDPG options: DDPG's (``td3.DDPGConfig``) and Ape-X's actors
    (``ApexOptions``), with prioritized replay on (the paper's ``alpha`` 0.6 and ``beta``
    0.4, kept fixed in effect: ``beta_decay_steps`` 10^9) and 3-step returns (Ape-X DQN's
    n; the paper's DPG used n-step returns too). Exploration: Gaussian noise of
    ``noise_sigma`` 0.1 (TD3's) scaled per actor."""

    priority_alpha: float = option(0.6, ge=0)
    beta_start: float = option(0.4, ge=0, le=1)
    beta_decay_steps: int = option(1_000_000_000, ge=0)
    n_step: int = 3
    exploration_noise: td3.Noise = "gaussian"
    noise_sigma: td3.PerDim = 0.1


def _insert(cfg: ApexDDPGConfig, buffer, algorithm, state, buffer_state, data, h, sampling):
    """The skeleton's ``insert`` hook: the items that ``data`` ``[T, N]`` completed get the
    TD errors of the actors' copy as priorities."""
    num_steps, num_envs = data.reward.shape[:2]
    rows = state.step // num_envs
    t, e = completed_items(rows, num_steps, num_envs, cfg.buffer_size // num_envs, cfg.n_step)
    ones = jnp.ones(t.shape, jnp.float32)
    sample = ReplaySample(buffer.gather(buffer_state, t, e), t, e, t * num_envs + e, ones)
    batch = replay_batch(cfg, sample, ones.size, h, sampling)
    actors = dataclasses.replace(state.learner, **state.actors)
    _, metrics = algorithm.gradient_step(actors, batch, h, jax.random.PRNGKey(0))
    td_error, knobs = metrics["td_error"], sampling.knobs(h)
    return buffer.update_priorities(buffer_state, t * num_envs + e, td_error, knobs)


def make_apex_ddpg(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds Ape-X DDPG for ``spec``; ``ConfigError`` on a bad option, env or layout."""
    name = "apex_ddpg"
    cfg = build_config(ApexDDPGConfig, overrides, f"agent '{name}'")
    check_actors(cfg, spec.num_envs, name)
    inner = td3._build(spec, cfg, name, (), lambda *a: _insert(cfg, *a))
    k = actor_count(cfg, spec.num_envs)

    def init(key: jax.Array) -> OffPolicyState:
        state = inner.init(key)
        h = {k: jnp.asarray(getattr(cfg, k), jnp.float32) for k in _EPSILONS}
        actors = {n: getattr(state.learner, n) for n in _COPIED}
        return dataclasses.replace(state, actors=actors, hparams={**state.hparams, **h})

    def act(state: OffPolicyState, obs, carry, key: jax.Array, explore: bool = True):
        if not explore:
            return inner.act(state, obs, carry, key, explore)
        h = state.hparams
        scale = env_epsilons(spec.num_envs, k, h["actor_epsilon"], h["actor_epsilon_alpha"])
        sigma = scale[:, None] * h["noise_sigma"]  # [N, A]
        learner = dataclasses.replace(state.learner, actor_params=state.actors["actor_params"])
        acting = dataclasses.replace(state, learner=learner, hparams={**h, "noise_sigma": sigma})
        return inner.act(acting, obs, carry, key, explore)

    def update(state: OffPolicyState, rollout: Transition, key: jax.Array):
        state, metrics = inner.update(state, rollout, key)
        new = {n: getattr(state.learner, n) for n in _COPIED}
        num_steps, num_envs = rollout.reward.shape[:2]
        rows, period = state.step // num_envs, cfg.actor_update_period
        actors = refresh_actors(state.actors, new, rows, num_steps, period)
        h = state.hparams
        scales = actor_epsilons(k, h["actor_epsilon"], h["actor_epsilon_alpha"])
        return dataclasses.replace(state, actors=actors), {**metrics, "noise_scale": scales.mean()}

    return Agent(init, act, update, inner.init_carry)
