"""The rollout bookkeeping of the on-policy actor-critic learners (``agents/on_policy/core.py``):
from the rollout ``[T, N]`` that the runner collected to the flattened ``RolloutBatch``
``[T * N]`` the epochs learn from (``rollout_batch``: observations normalized, rewards
clipped and scaled as the config asks (``learning_rewards``), GAE advantages and value
targets), and the state after an update (``after_update``: parameters, observation and
reward statistics, counters).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

import jax
import jax.numpy as jnp

from jaxrl.agents.on_policy.config import ActorCriticConfig
from jaxrl.buffers.rollout import RolloutBatch, flatten
from jaxrl.networks.policies import ActorCritic
from jaxrl.ops.normalization import RunningMeanStd, scale_rewards, update_running_stats
from jaxrl.ops.returns import gae
from jaxrl.types import Transition, main_obs

if TYPE_CHECKING:
    from jaxrl.agents.on_policy.core import ActorCriticParts, ActorCriticState

Array = jax.Array


def rollout_batch(parts: ActorCriticParts, cfg: ActorCriticConfig, state: Any, rollout: Transition):
    """``(batch, return_stats, discounted_return)``: the rollout ``[T, N]`` flattened to
    a ``RolloutBatch [T * N]`` with GAE advantages and targets (normalized observations,
    learning rewards), and the reward-scaling statistics after it."""
    h = state.hparams
    obs, next_obs = parts.norm_obs(state, rollout.obs), parts.norm_obs(state, rollout.next_obs)
    return_stats, discounted_return, reward = learning_rewards(cfg, state, rollout)
    next_value = cast(
        Array, parts.network.apply(state.params, parts.inputs(next_obs), method=ActorCritic.critic)
    )
    value = rollout.extras["value"]
    advantage, target = gae(
        reward, value, next_value, rollout.terminated, rollout.truncated, h.gamma, h.gae_lambda
    )
    action = rollout.action if parts.discrete else rollout.extras["raw_action"]
    batch = flatten(RolloutBatch(obs, action, rollout.extras["log_prob"], value, advantage, target))
    return batch, return_stats, discounted_return


def learning_rewards(cfg: ActorCriticConfig, state: ActorCriticState, rollout: Transition):
    """``(return_stats, discounted_return, reward)``: the rollout's rewards clipped and
    scaled as the config asks, and the reward-scaling statistics after them."""
    reward, return_stats, discounted_return = rollout.reward, state.return_stats, None
    if cfg.reward_clip is not None:
        reward = jnp.clip(reward, -cfg.reward_clip, cfg.reward_clip)
    if cfg.normalize_reward:
        done = rollout.terminated | rollout.truncated
        gamma, clip = state.hparams.gamma, cfg.scaled_reward_clip
        old = state.discounted_return
        return_stats, discounted_return, reward = scale_rewards(
            return_stats, old, reward, done, gamma, clip
        )
    if discounted_return is None:
        discounted_return = state.discounted_return
    return return_stats, discounted_return, reward


def after_update(
    cfg: ActorCriticConfig,
    state: ActorCriticState,
    rollout: Transition,
    params: Any,
    opt_state: Any,
    return_stats: RunningMeanStd,
    discounted_return: Array,
    gradient_steps: int,
) -> ActorCriticState:
    """``state`` after an update on ``rollout``: new parameters and optimizer state, the
    observation and reward statistics, and the counters advanced."""
    obs_stats = state.obs_stats
    if cfg.normalize_obs:
        obs_stats = update_running_stats(obs_stats, main_obs(rollout.obs))
    return dataclasses.replace(
        state,
        params=params,
        opt_state=opt_state,
        obs_stats=obs_stats,
        return_stats=return_stats,
        discounted_return=discounted_return,
        step=state.step + rollout.reward.shape[0] * rollout.reward.shape[1],
        updates=state.updates + gradient_steps,
    )
