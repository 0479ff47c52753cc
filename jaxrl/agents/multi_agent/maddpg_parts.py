"""MADDPG's parts (``agents/multi_agent/maddpg.py``, ``maddpg_ensemble.py``): the
networks, the state, the critics' inputs and step, the actors' objective and the targets.
Leaves of stacked networks have leading axes ``[P]`` (one per player) or ``[P, S]``
(``S`` sub-policies per player)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, cast

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.multi_agent.maddpg_actions import OUTPUT_PENALTY, MADDPGActions
from jaxrl.networks.torsos import MLP
from jaxrl.ops.targets import soft_update
from jaxrl.types import shared_field


class Head(nn.Module):
    """An MLP torso and a linear output of ``outputs`` units: ``[..., in] -> [..., outputs]``."""

    hidden_sizes: tuple[int, ...]
    outputs: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(self.outputs)(MLP(self.hidden_sizes)(x))


@flax.struct.dataclass
class MADDPGState:
    """Every leaf of ``actor``/``critic``/``targets``/optimizer states has a leading
    ``[P]`` axis (one network per agent); ``step``: env steps given to ``update``."""

    actor: Any
    critic: Any
    target_actor: Any
    target_critic: Any
    actor_opt: Any
    critic_opt: Any
    buffer: Any
    hparams: dict[str, jax.Array]
    step: jax.Array = shared_field()


def joint_input(obs: jax.Array, actions: jax.Array) -> jax.Array:
    """A critic's input ``[B, P D + P A]``: every agent's observation ``[B, P, D]`` and
    action vector ``[B, P, A]`` (one-hot or relaxed), each flattened in agent order."""
    B = obs.shape[0]
    return jnp.concatenate([obs.reshape(B, -1), actions.reshape(B, -1)], axis=-1)


def with_action(actions: jax.Array, agent: int | jax.Array, mine: jax.Array) -> jax.Array:
    """``actions`` ``[B, P, A]`` with agent ``agent``'s row replaced by ``mine`` ``[B, A]``."""
    hot = jnp.arange(actions.shape[1]) == agent
    return jnp.where(hot[None, :, None], mine[:, None, :], actions)


def critic_target(reward, terminated, next_q, gamma):
    """``y = r + gamma (1 - terminated) Q'``: ``reward`` ``[B, P]``, ``terminated`` ``[B]``
    bool, ``next_q`` ``[B, P]``; returns ``[B, P]``."""
    return reward + gamma * (1.0 - terminated.astype(jnp.float32))[:, None] * next_q


def critic_view(visible: jax.Array) -> Callable[..., jax.Array]:
    """``seen(obs [B, P, D], actions [B, P, A], players [K]) -> [B, K (D + A)]``: a
    critic's input from the players it sees (``visible`` ``[P, K]``, every critic's)."""
    P = visible.shape[0]
    every = bool((visible == jnp.arange(P)).all())

    def seen(obs, actions, players):
        if every:  # the whole joint, not gathered (the same program as before the option)
            return joint_input(obs, actions)
        return joint_input(obs[:, players], actions[:, players])

    return seen


def gradient_apply(optimizer: optax.GradientTransformation, axes: int = 1) -> Callable:
    """``apply(params, grads, opt_state, lr) -> (params, opt_state)``: one optimizer step
    of every network at once, over ``axes`` leading axes (``[P]``, or ``[P, K]``)."""
    update = stacked(optimizer.update, axes)

    def apply(params, grads, opt_state, lr):
        updates, opt_state = update(grads, opt_state, params)
        return jax.tree.map(lambda p, u: p - lr * u, params, updates), opt_state

    return apply


def critic_step(critic: Head, seen: Callable, apply: Callable, visible, state: MADDPGState, parts):
    """Every critic's step on ``parts = (obs, actions, next_obs, next_actions, reward,
    terminated)`` (``[B, P, ...]``; actions ``[B, P, A]`` as the critics see them), critic
    ``i`` seeing players ``visible[i]``: ``(critics, critic_opt, loss [P], q_mean [P])``."""
    obs, actions, next_obs, next_actions, reward, terminated = parts
    h = state.hparams
    next_q = jax.vmap(
        lambda p, v: cast(jax.Array, critic.apply(p, seen(next_obs, next_actions, v)))
    )(state.target_critic, visible)[..., 0].T
    y = critic_target(reward, terminated, next_q, h["gamma"])  # [B, P]

    def critic_loss(params, y_i, v):
        q = critic.apply(params, seen(obs, actions, v))[:, 0]
        return jnp.mean((q - y_i) ** 2), q.mean()

    (q_loss, q_mean), grads = jax.vmap(jax.value_and_grad(critic_loss, has_aux=True))(
        state.critic, y.T, visible
    )
    critics, critic_opt = apply(state.critic, grads, state.critic_opt, h["critic_lr"])
    return critics, critic_opt, q_loss, q_mean


def actor_objective(actor: Head, critic: Head, kind: MADDPGActions, seen: Callable) -> Callable:
    """``loss(params, critic_params, i, players, obs [B, P, D], actions [B, P, A], key,
    hparams)``: player ``i``'s deterministic policy gradient objective through its critic
    (module docstring), its own action replaced by its actor's."""

    def loss(params, critic_params, i, players, obs, actions, key, h):
        out = actor.apply(params, obs[:, i])
        mine = kind.relaxed(key, out, h)
        q = critic.apply(critic_params, seen(obs, with_action(actions, i, mine), players))
        return -q.mean() + OUTPUT_PENALTY * jnp.mean(out**2)

    return loss


def stepped(state: MADDPGState, actors, critics, actor_opt, critic_opt, losses):
    """``state`` with the new networks and their Polyak targets, and the step's metrics
    from ``losses = (critic loss, actor loss, q mean)``."""
    tau = state.hparams["tau"]
    state = dataclasses.replace(
        state,
        actor=actors,
        critic=critics,
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        target_actor=soft_update(state.target_actor, actors, tau),
        target_critic=soft_update(state.target_critic, critics, tau),
    )
    names = ("critic_loss", "actor_loss", "q_mean")
    return state, {k: v.mean() for k, v in zip(names, losses, strict=True)}


def stacked(f: Callable, axes: int) -> Callable:
    """``f`` vmapped over ``axes`` leading axes of every argument."""
    for _ in range(axes):
        f = jax.vmap(f)
    return f


def stacked_init(init_one: Callable, key: jax.Array, shape: tuple[int, ...]) -> Any:
    """``init_one(key)`` for each of ``prod(shape)`` keys split from ``key``, stacked
    ``[*shape, ...]`` (for ``shape == (P,)`` the keys of ``split(key, P)``)."""
    keys = jax.random.split(key, math.prod(shape))
    return stacked(init_one, len(shape))(keys.reshape(*shape, *keys.shape[1:]))
