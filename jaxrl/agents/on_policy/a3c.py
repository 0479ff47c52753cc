r"""A3C (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning",
Algorithm S3): A2C's learner (``agents/on_policy/a2c.py``) taken apart so that asynchronous
workers can run it.

Each worker reads the shared parameters ``theta`` (a version ``v``), collects its own
rollout of ``t_max`` steps (the runner's ``rollout_len``) with them, computes the
gradient of A2C's loss on it,

.. math::
    g = \nabla_\theta \Big[-\frac{1}{TN}\sum \log\pi(a_t|s_t) A_t
        + \frac{c_v}{2TN}\sum (R_t - V(s_t))^2 - \frac{c_e}{TN}\sum H(\pi(\cdot|s_t))\Big],

with ``A_t = R_t - V(s_t)`` and ``R_t`` the n-step (GAE with ``lambda``) returns, and
applies it to the *current* shared parameters (a version ``v' >= v``) through the shared
optimizer state (the paper's shared RMSProp statistics). ``update`` is that gradient
applied at once, A2C's update: the synchronous limit, and what the fused runner runs.

The runner of asynchronous workers (``runners/distributed/a3c_workers.py``, ``--agent a3c
--actor-threads K``) takes the update apart through the agent's ``split_update``, a
``SplitUpdate`` (``jaxrl.types``) of ``gradient(state, rollout, key) -> A3CGradient`` (no
state change) and ``apply(state, gradient) -> state`` (optimizer step, counters,
statistics), with ``update(state, rollout, key) == (apply(state, gradient(...)),
metrics)``.

Defaults are A2C's (Stable-Baselines3 after the OpenAI baselines) with the paper's
optimizer: RMSProp with decay 0.99 (the paper's alpha), no momentum, shared by the
workers. The paper's epsilon 0.1 sits inside the square root of a loss *summed* over the
``t_max = 5`` steps of one env; jaxrl averages over ``T x N`` steps, which RMSProp does
not notice but for epsilon, so the default is ``0.1 / (5 x 8)^2 = 6.25e-5`` (8 envs per
worker). The paper samples its learning rate from LogUniform(1e-4, 1e-2); 7e-4 here (A2C's).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NamedTuple

import jax

from jaxrl.agents.on_policy.a2c import A2C_OBJECTIVE, A2CConfig
from jaxrl.agents.on_policy.batches import after_update, rollout_batch
from jaxrl.agents.on_policy.core import (
    ActorCriticState,
    actor_critic_parts,
    apply_gradient,
    learning_rate,
    objective_loss,
)
from jaxrl.ops.normalization import RunningMeanStd
from jaxrl.types import Agent, EnvSpec, Metrics, SplitUpdate, Transition
from jaxrl.validation import build_config, fixes, option

__all__ = ["A3CConfig", "A3CGradient", "make_a3c"]

Array = jax.Array


@dataclasses.dataclass(frozen=True)
@fixes(critic_lr=None)  # machin's critic_learning_rate: A2C's and PPO's here
class A3CConfig(A2CConfig):
    """A3C's options: ``A2CConfig``'s with the paper's shared RMSProp (module docstring)."""

    optimizer: Literal["adam", "adamw", "radam", "rmsprop", "sgd"] = "rmsprop"
    rmsprop_decay: float = option(0.99, ge=0, lt=1)
    rmsprop_eps: float = option(6.25e-5, ge=0)


class A3CGradient(NamedTuple):
    """One worker's contribution: ``grads`` (the parameters' pytree), the rollout it came
    from (for the counters and observation statistics), the reward-scaling statistics
    after it, and its metrics (float32 scalars)."""

    grads: Any
    rollout: Transition
    return_stats: RunningMeanStd
    discounted_return: Array
    metrics: dict[str, Array]


_NAMES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")


def make_a3c(spec: EnvSpec, **overrides: Any) -> Agent[ActorCriticState]:
    """Builds an A3C agent for ``spec``; raises ``ConfigError`` on a bad option or env.
    Its ``split_update`` is the update's ``gradient`` and ``apply`` (module docstring)."""
    cfg = build_config(A3CConfig, overrides, "agent 'a3c'")
    parts = actor_critic_parts(spec, cfg, A2C_OBJECTIVE.hparams, "a3c")
    loss_fn = objective_loss(parts, cfg, A2C_OBJECTIVE)

    def gradient(state: ActorCriticState, rollout: Transition, key: Array) -> A3CGradient:
        """The gradient of the loss on ``rollout`` at ``state.params``; ``key`` unused
        (one minibatch: the whole rollout, no permutation)."""
        del key
        batch, return_stats, discounted_return = rollout_batch(parts, cfg, state, rollout)
        grads, aux = jax.grad(loss_fn, has_aux=True)(state.params, state.hparams, batch)
        metrics = dict(zip(_NAMES, aux, strict=True))
        return A3CGradient(grads, rollout, return_stats, discounted_return, metrics)

    def apply(state: ActorCriticState, g: A3CGradient) -> ActorCriticState:
        """``g`` applied to ``state``'s (possibly newer) parameters and optimizer state."""
        lr = learning_rate(cfg, state)
        params, opt_state = apply_gradient(
            parts.optimizer, state.hparams, lr, state.params, state.opt_state, g.grads
        )
        return after_update(
            cfg, state, g.rollout, params, opt_state, g.return_stats, g.discounted_return, 1
        )

    def update(
        state: ActorCriticState, rollout: Transition, key: Array
    ) -> tuple[ActorCriticState, Metrics]:
        g = gradient(state, rollout, key)
        metrics = {**g.metrics, "lr": learning_rate(cfg, state)}
        return apply(state, g), metrics

    return Agent(
        init=parts.init,
        act=parts.act,
        update=update,
        split_update=SplitUpdate(gradient=gradient, apply=apply),
    )
