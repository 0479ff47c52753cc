r"""MADDPG with policy ensembles (Lowe et al. 2017, Section 4.3, "Agents with Policy
Ensembles"; machin's ``MADDPG(sub_policy_num=S - 1)``): each player ``i`` has ``S``
sub-policies :math:`\mu_i^{(1)}, \dots, \mu_i^{(S)}`, each with its own target and
optimizer state (leaves ``[P, S, ...]``), and one critic :math:`Q_i`, the critic of the
ensemble policy.

* **Acting.** Each env draws one sub-policy per player uniformly at the start of an
  episode and keeps it to the episode's end: the per-env carry ``[N, P]`` int32 holds the
  draws, ``-1`` (``init_carry``, to which the runners reset an ended episode) meaning
  "draw at the next step". Greedy evaluation draws the same way: the ensemble's policy is
  the mixture.
* **Replay.** One buffer, as machin's (one per agent there, all of an agent's sub-policies
  sampling from it); the paper keeps a buffer per sub-policy. Each gradient step draws
  ``S`` batches ``[S, B]``, batch ``k`` for sub-policy ``k`` of every player (machin's).
* **Critics.** One step on the ``S B`` transitions together (machin steps each critic once
  per batch ``k``: the same mean loss over ``S`` steps), with targets
  :math:`y = r_i + \gamma (1 - d) Q'_i(x', \tilde a'_1, \dots, \tilde a'_P)`, each
  :math:`\tilde a'_j` from a target sub-policy of player ``j`` drawn uniformly for every
  sample: each critic is trained against the other players' (and its own) ensembles.
* **Actors.** Sub-policy ``k`` of player ``i`` takes MADDPG's actor step on batch ``k``
  through :math:`Q_i`, the other players' actions from the buffer. The paper's gradient
  carries a factor :math:`1/S`, which Adam's update does not see (machin leaves it out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.multi_agent import maddpg_parts as parts
from jaxrl.agents.multi_agent.maddpg_actions import MADDPGActions
from jaxrl.types import Transition


def sub_policy_outputs(actor: parts.Head, params, obs: jax.Array, obs_ndim: int = 1) -> jax.Array:
    """Every sub-policy's output: ``params`` ``[P, S, ...]``, ``obs`` ``[..., P, *D]``
    (``len(D) == obs_ndim``) -> ``[..., P, S, A]``."""
    moved = jnp.moveaxis(obs, -1 - obs_ndim, 0)  # [P, ..., *D]
    apply = lambda q, o: cast(jax.Array, actor.apply(q, o))
    out = jax.vmap(lambda p, o: jax.vmap(lambda q: apply(q, o))(p))(params, moved)
    return jnp.moveaxis(out, (0, 1), (-3, -2))


def pick(outputs: jax.Array, index: jax.Array) -> jax.Array:
    """``outputs`` ``[..., P, S, A]`` at sub-policy ``index`` ``[..., P]`` -> ``[..., P, A]``."""
    return jnp.take_along_axis(outputs, index[..., None, None], axis=-2)[..., 0, :]


def drawn(carry: jax.Array, key: jax.Array, sub_policies: int) -> jax.Array:
    """``carry`` ``[N, P]`` int32 with every ``-1`` (an episode's start) replaced by a
    sub-policy drawn uniformly from ``0 .. sub_policies - 1``."""
    draw = jax.random.randint(key, carry.shape, 0, sub_policies, jnp.int32)
    return jnp.where(carry < 0, draw, carry)


def ensemble_act(
    actor: parts.Head, kind: MADDPGActions, sub_policies: int, discrete: bool, obs_ndim: int = 1
) -> Callable:
    """``act(state, obs [N, P, D], carry [N, P], key, explore)``: each player's drawn
    sub-policy acts (module docstring); the carry returned holds the draws."""

    def act(state: parts.MADDPGState, obs, carry, key: jax.Array, explore: bool):
        choice_key, key = jax.random.split(key)
        index = drawn(carry, choice_key, sub_policies)
        out = pick(sub_policy_outputs(actor, state.actor, obs, obs_ndim), index)  # [N, P, A]
        if explore:
            return kind.explore(key, out, state.hparams), index, {}
        extras = {"action_probs": jax.nn.softmax(out)} if discrete else {}
        return kind.greedy(out), index, extras

    return act


def ensemble_step(
    actor: parts.Head,
    critic: parts.Head,
    optimizer: optax.GradientTransformation,
    kind: MADDPGActions,
    visible: jax.Array,
    sub_policies: int,
    obs_ndim: int = 1,
) -> Callable:
    """``gradient_step(state, batch [S, B, ...], key) -> (state, metrics)``: the critics'
    step on all ``S`` batches, then sub-policy ``k``'s actor step on batch ``k``, then the
    Polyak targets (module docstring)."""
    P, S = visible.shape[0], sub_policies
    seen = parts.critic_view(visible)
    actor_loss = parts.actor_objective(actor, critic, kind, seen)
    per_sub = jax.vmap(jax.value_and_grad(actor_loss), in_axes=(0, None, None, None, 0, 0, 0, None))
    per_player = jax.vmap(per_sub, in_axes=(0, 0, 0, 0, None, None, 0, None))

    def gradient_step(state: parts.MADDPGState, batch: Transition, key: jax.Array):
        h = state.hparams
        choice_key, next_key, actor_key = jax.random.split(key, 3)
        B = batch.reward.shape[1]
        flat = jax.tree.map(lambda x: x.reshape(S * B, *x.shape[2:]), batch)
        index = jax.random.randint(choice_key, (S * B, P), 0, S, jnp.int32)
        outputs = sub_policy_outputs(actor, state.target_actor, flat.next_obs, obs_ndim)
        next_out = pick(outputs, index)
        next_actions = kind.relaxed(next_key, next_out, h)
        actions = kind.critic_input(flat.action)  # [S B, P, A]
        seen_parts = (flat.obs, actions, flat.next_obs, next_actions, flat.reward)
        critics, critic_opt, q_loss, q_mean = parts.critic_step(
            critic, seen, parts.gradient_apply(optimizer), visible, state,
            (*seen_parts, flat.terminated),
        )  # fmt: skip
        keys = jax.random.split(actor_key, P * S)
        pi_loss, grads = per_player(
            state.actor, critics, jnp.arange(P), visible, batch.obs,
            actions.reshape(S, B, *actions.shape[1:]), keys.reshape(P, S, *keys.shape[1:]), h,
        )  # fmt: skip
        actors, actor_opt = parts.gradient_apply(optimizer, 2)(
            state.actor, grads, state.actor_opt, h["actor_lr"]
        )
        return parts.stepped(
            state, actors, critics, actor_opt, critic_opt, (q_loss, pi_loss, q_mean)
        )

    return gradient_step
