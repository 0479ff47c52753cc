r"""IMPALA's learner (Espeholt et al. 2018): an actor-critic trained with V-trace targets.

Actors act with possibly stale parameters (the behaviour policy ``mu``, whose
log-probabilities they record in ``extras["log_prob"]``); the learner corrects for the
lag with V-trace (``ops/vtrace.py``): for a rollout ``[T, N]`` it evaluates the current
policy ``pi`` and value ``V`` on every observation, takes ``log rho = log pi - log mu``,
and minimizes, in one gradient step on the whole rollout (section 4 of the paper),

.. math::
    L = -\frac{1}{TN}\sum \log\pi(a_s|x_s)\, A_s
        + c_v \frac{1}{2 TN}\sum (v_s - V(x_s))^2 - c_e \frac{1}{TN}\sum H(\pi(\cdot|x_s)),

with ``v_s`` and ``A_s`` the V-trace targets and advantages (constants), ``V(x_{t+1})``
evaluated on the true next observations. With no lag (the fused runner, or Sebulba's
synchronous mode) ``rho = 1`` and the targets are TD(lambda) returns: IMPALA is then A2C
with ``gae_lambda = lambda``. The lag appears with ``runners/distributed/sebulba.py``'s
actor threads.

Built on the on-policy skeleton (``agents/on_policy/core.py``): the same ``ActorCritic``
network, acting, masks, observation and reward normalization; this file holds only the
V-trace update and IMPALA's defaults.

``lstm=True``: the paper's LSTM after the torso (``networks/recurrent.py``, 256 units as in
the paper's Figure 3; ``lstm_size``), its state in the per-env carry; the update re-runs the
network over the rollout from the rollout's first carry, resetting it where an episode
starts (``agents/on_policy/recurrent_learner.py``), and back-propagates through the unroll.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, cast

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.agents.on_policy.batches import after_update, learning_rewards
from jaxrl.agents.on_policy.config import (
    ActorCriticConfig,
    ActorCriticHparams,
    base_hparams,
    f32,
)
from jaxrl.agents.on_policy.core import actor_critic_parts, gradient_step, learning_rate
from jaxrl.agents.on_policy.recurrent_learner import recurrent_parts
from jaxrl.networks.policies import ActorCritic
from jaxrl.ops.policy_gradient import policy_gradient_loss, value_loss
from jaxrl.ops.vtrace import vtrace
from jaxrl.types import Agent, EnvSpec, Transition, main_obs
from jaxrl.validation import build_config, fixes, option

__all__ = ["IMPALAConfig", "IMPALAHparams", "make_impala"]

Array = jax.Array


@dataclasses.dataclass(frozen=True)
@fixes(critic_lr=None)  # machin's critic_learning_rate: A2C's and PPO's here
class IMPALAConfig(ActorCriticConfig):
    """IMPALA's options; the rest are ``on_policy.config.ActorCriticConfig``'s.

    Defaults from Espeholt et al. (2018), Table G.1 (Atari): RMSProp (decay 0.99,
    epsilon 0.01, no momentum) with learning rate 6e-4 (the paper's fixed-setting
    experiments; the DeepMind Lab sweeps draw it from [5e-5, 5e-3]), entropy cost 0.01,
    baseline cost 0.5, global gradient-norm clip 40, discount 0.99, unrolls of 20
    (the runner's ``rollout_len``), V-trace with ``rho_bar = c_bar = 1`` and
    ``lambda = 1``; no advantage normalization and no learning-rate annealing here
    (the paper decays the rate linearly to 0: ``--agent.anneal_lr true``).

    Attributes:
      rho_bar: truncation of the importance weights in the value targets (1.0).
      c_bar: truncation of the trace coefficients (1.0).
      pg_rho_bar: truncation in the policy-gradient advantages (None: ``rho_bar``).
      gae_lambda: V-trace's lambda in ``c_t = lambda min(c_bar, rho_t)`` (1.0).
      lstm: an LSTM after the torso (False), as the paper's network has.
      lstm_size: the LSTM's units (256, the paper's Figure 3).
    """

    optimizer: Literal["adam", "adamw", "radam", "rmsprop", "sgd"] = "rmsprop"
    rmsprop_decay: float = option(0.99, ge=0, lt=1)
    rmsprop_eps: float = option(0.01, ge=0)
    lr: float = option(6e-4, gt=0)
    anneal_lr: bool = False
    gae_lambda: float = option(1.0, ge=0, le=1)
    max_grad_norm: float | None = option(40.0, gt=0)
    normalize_advantage: bool = False
    rho_bar: float = option(1.0, gt=0)
    c_bar: float = option(1.0, gt=0)
    pg_rho_bar: float | None = option(None, gt=0)
    lstm: bool = False
    lstm_size: int = option(256, ge=1)


@flax.struct.dataclass
class IMPALAHparams(ActorCriticHparams):
    rho_bar: Array
    c_bar: Array
    pg_rho_bar: Array


def _hparams(cfg: IMPALAConfig) -> IMPALAHparams:
    pg = cfg.rho_bar if cfg.pg_rho_bar is None else cfg.pg_rho_bar
    return IMPALAHparams(
        **base_hparams(cfg), rho_bar=f32(cfg.rho_bar), c_bar=f32(cfg.c_bar), pg_rho_bar=f32(pg)
    )


def actor_options(options: dict[str, Any], num_envs: int, processes: int, index: int):
    """The options an actor process acts with (``--actor-processes``): the learner's (an
    IMPALA actor is the policy alone; V-trace corrects its lag)."""
    return dict(options)


def make_impala(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an IMPALA learner for ``spec``; raises ``ConfigError`` on a bad option or env.

    ``update(state, rollout [T, N], key)`` takes one gradient step on the whole rollout;
    ``rollout.extras["log_prob"]`` must hold the behaviour policy's log-probabilities of
    the actions taken (``act`` records them)."""
    cfg = build_config(IMPALAConfig, overrides, "agent 'impala'")
    parts = actor_critic_parts(spec, cfg, _hparams, "impala")
    rnn = recurrent_parts(spec, cfg, parts, cfg.lstm_size) if cfg.lstm else None

    def loss_fn(params: Any, h: IMPALAHparams, batch: tuple):
        obs, next_obs, action, behaviour_log_prob, reward, terminated, truncated, carry = batch
        T, N = reward.shape
        flat = lambda x: x.reshape(T * N, *x.shape[2:])
        if rnn is None:
            dist, value = parts.policy(params, jax.tree.map(flat, obs))
        else:
            dist, value, next_value = rnn.evaluate(
                params, carry, obs, next_obs, terminated | truncated
            )
        log_prob, entropy = parts.log_prob_entropy(dist, flat(action))
        log_prob, value = log_prob.reshape(T, N), value.reshape(T, N)
        if rnn is None:
            next_value = cast(
                Array,
                parts.network.apply(params, flat(main_obs(next_obs)), method=ActorCritic.critic),
            ).reshape(T, N)
        targets = vtrace(
            jax.lax.stop_gradient(log_prob) - behaviour_log_prob,
            reward,
            jax.lax.stop_gradient(value),
            jax.lax.stop_gradient(next_value),
            terminated,
            truncated,
            h.gamma,
            h.gae_lambda,
            h.rho_bar,
            h.c_bar,
            h.pg_rho_bar,
        )
        pg_loss = policy_gradient_loss(log_prob, targets.pg_advantages)
        v_loss = value_loss(value, targets.vs)
        entropy = entropy.mean()
        loss = pg_loss + h.value_weight * v_loss - h.entropy_weight * entropy
        rho = jnp.exp(jax.lax.stop_gradient(log_prob) - behaviour_log_prob)
        return loss, (pg_loss, v_loss, entropy, rho.mean(), (rho > h.rho_bar).mean())

    def update(state: Any, rollout: Transition, key: Array):
        obs = parts.norm_obs(state, rollout.obs)
        next_obs = parts.norm_obs(state, rollout.next_obs)
        return_stats, discounted_return, reward = learning_rewards(cfg, state, rollout)
        action = rollout.action if parts.discrete else rollout.extras["raw_action"]
        batch = (
            obs,
            next_obs,
            action,
            rollout.extras["log_prob"],
            reward,
            rollout.terminated,
            rollout.truncated,
            None if rnn is None else jax.tree.map(lambda c: c[0], rollout.extras["carry"]),
        )
        lr = learning_rate(cfg, state)
        step = gradient_step(loss_fn, parts.optimizer, state.hparams, lr)
        (params, opt_state), aux = step((state.params, state.opt_state), batch)
        state = after_update(
            cfg, state, rollout, params, opt_state, return_stats, discounted_return, 1
        )
        names = ("policy_loss", "value_loss", "entropy", "importance_ratio", "clipped_fraction")
        metrics = dict(zip(names, aux, strict=True))
        metrics["lr"] = lr
        return state, metrics

    if rnn is None:
        return Agent(init=parts.init, act=parts.act, update=update)
    return rnn.acting.agent(update)
