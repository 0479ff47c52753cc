r"""MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments"; machin's ``MADDPG``): decentralized actors, centralized critics.

For a simultaneous-move env of ``P`` players (``EnvSpec.num_players``, obs ``[N, P, D]``,
actions ``[N, P]`` int32 from ``Discrete(A)``, reward ``[N, P]``), agent ``i`` has an actor
``mu_i(o_i)`` (logits ``[A]``) and a critic ``Q_i(x, a_1, ..., a_P)`` over the joint
observation ``x = (o_1, ..., o_P)`` and every agent's action as a one-hot (or relaxed)
vector ``[P A]``. One gradient step on a replay batch, for every agent ``i`` at once:

.. math::
    y_i = r_i + \gamma (1 - d)\, Q'_i\big(x', \tilde a'_1, \dots, \tilde a'_P\big),\quad
    \tilde a'_j = \operatorname{gumbel\_softmax}(\mu'_j(o'_j), \tau_g)

    L(\phi_i) = \operatorname{mean}_B \big(Q_i(x, a_1, \dots, a_P) - y_i\big)^2

    L(\theta_i) = -\operatorname{mean}_B Q_i\big(x, a_1, \dots, \tilde a_i, \dots, a_P\big)
                  + 10^{-3} \operatorname{mean} \mu_i(o_i)^2,\quad
    \tilde a_i = \operatorname{gumbel\_softmax}(\mu_i(o_i), \tau_g)

(the other agents' actions ``a_j`` from the buffer; Gumbel-softmax for discrete actions as
in the paper, ``ops/gumbel.py``; the logit penalty of the authors' code), then Polyak
target updates with ``tau``. A truncated step bootstraps (``d`` is ``terminated`` only).
Acting samples ``Categorical(softmax(mu_i(o_i)))`` while exploring (the Gumbel-max of the
same relaxation) and takes the argmax when greedy. Defaults: the paper's Appendix and the
authors' code (github.com/openai/maddpg): two ReLU layers of 64, Adam 1e-2, gamma 0.95,
tau 0.01, batch 1024, buffer 1e6, gradient norm 0.5, learning after 1024 x 25 steps.

Continuous actions (a ``Box`` action space, ``mpe:simple_spread --env.continuous true``)
take the deterministic policy gradient instead of the relaxation: ``a_i = mu_i(o_i)``
squashed into the box, Gaussian exploration (``maddpg_actions.py``). With
``critic_visible_actors`` (machin's name) critic ``i`` sees only the listed players'
observations and actions, its own among them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.agents.multi_agent.maddpg_actions import (
    OUTPUT_PENALTY,
    MADDPGActions,
    box_actions,
    gumbel_actions,
)
from jaxrl.buffers import make_uniform_replay
from jaxrl.networks.torsos import MLP
from jaxrl.ops.targets import soft_update
from jaxrl.types import Agent, ConfigError, Discrete, EnvSpec, Transition, shared_field
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class MADDPGConfig(ReplayOptions):
    """MADDPG options (module docstring for the sources of the defaults).

    Attributes:
      hidden_sizes: ReLU layers of every actor and critic, (64, 64).
      actor_lr, critic_lr: Adam step sizes, 1e-2.
      gamma: discount, 0.95.
      tau: Polyak step of the targets, 0.01.
      temperature: the Gumbel-softmax temperature, 1.0.
      max_grad_norm: global gradient norm clip, 0.5.
      buffer_size: transitions kept (games x steps), 1e6.
      batch_size: minibatch size, 1024.
      learning_starts: env steps stored before learning, 25,600 (``batch x max_episode_len``).
      updates_per_rollout: gradient steps per ``update`` call, 1.
      exploration_noise: continuous actions: the Gaussian noise's scale while exploring, a
        fraction of the box's half-width, 0.1.
      critic_visible_actors: the players each critic sees, one list per player of equal
        length, each holding its own player (machin's); None: all.
    """

    hidden_sizes: tuple[int, ...] = option((64, 64), ge=1)
    actor_lr: float = option(1e-2, gt=0)
    critic_lr: float = option(1e-2, gt=0)
    gamma: float = option(0.95, ge=0, le=1)
    tau: float = option(0.01, ge=0, le=1)
    temperature: float = option(1.0, gt=0)
    max_grad_norm: float = option(0.5, gt=0)
    buffer_size: int = 1_000_000
    batch_size: int = 1024
    learning_starts: int = 25_600
    updates_per_rollout: int = option(1, ge=1)
    exploration_noise: float = option(0.1, ge=0)
    critic_visible_actors: tuple[tuple[int, ...], ...] | None = None


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


def _check(spec: EnvSpec) -> MADDPGActions:
    """The actions' strategy for ``spec``; ConfigError (one line) for an env MADDPG does
    not play."""
    if spec.num_players < 2 or spec.turn_based:
        raise ConfigError(
            f"maddpg needs a simultaneous-move env of 2+ players (mpe:simple_spread with "
            f"--env.shared false); '{spec.name}' has {spec.num_players} player(s)"
            f"{', turns' if spec.turn_based else ''}"
        )
    if spec.has_action_mask:
        raise ConfigError(f"maddpg takes actions without masks; '{spec.name}' has masks")
    if isinstance(spec.action_space, Discrete):
        return gumbel_actions(spec.action_space.n)
    return box_actions(*action_box(spec, "maddpg"))


def visible_players(cfg: MADDPGConfig, players: int) -> jax.Array:
    """``[P, K]`` int32: the players critic ``i`` sees (``critic_visible_actors``, or all);
    ConfigError (one line) unless each list holds its own player, valid players, and all
    lists one length."""
    visible = cfg.critic_visible_actors or tuple(tuple(range(players)) for _ in range(players))
    lengths = {len(v) for v in visible}
    valid = all(i in v and all(0 <= j < players for j in v) for i, v in enumerate(visible))
    if len(visible) != players or len(lengths) != 1 or not valid:
        raise ConfigError(
            f"agent 'maddpg' option 'critic_visible_actors' needs {players} lists of players "
            f"0..{players - 1} of one length, list i holding i; got {list(visible)}"
        )
    return jnp.asarray(visible, jnp.int32)


def _make_gradient_step(actor: Head, critic: Head, optimizer, actor_out, kind, visible):
    """``gradient_step(state, batch [B, ...], key) -> (state, metrics)``: the critics',
    then the actors' step of every agent at once, then the Polyak targets (module
    docstring); ``actor_out(params [P], obs [..., P, D]) -> [..., P, A]``; ``kind`` the
    actions' strategy; ``visible`` ``[P, K]`` the players each critic sees."""
    per_agent = jax.vmap
    P = visible.shape[0]

    def apply_grads(params, grads, opt_state, lr):
        updates, opt_state = per_agent(optimizer.update)(grads, opt_state, params)
        return jax.tree.map(lambda p, u: p - lr * u, params, updates), opt_state

    every = bool((visible == jnp.arange(P)).all())

    def seen(obs, actions, players):  # critic input of the players it sees
        if every:  # the whole joint, not gathered (the same program as before the option)
            return joint_input(obs, actions)
        return joint_input(obs[:, players], actions[:, players])

    def gradient_step(state: MADDPGState, batch: Transition, key: jax.Array):
        h = state.hparams
        next_key, actor_key = jax.random.split(key)
        next_actions = kind.relaxed(next_key, actor_out(state.target_actor, batch.next_obs), h)
        next_q = per_agent(
            lambda p, v: cast(jax.Array, critic.apply(p, seen(batch.next_obs, next_actions, v)))
        )(state.target_critic, visible)[..., 0].T
        y = critic_target(batch.reward, batch.terminated, next_q, h["gamma"])  # [B, P]
        actions = kind.critic_input(batch.action)

        def critic_loss(params, y_i, v):
            q = critic.apply(params, seen(batch.obs, actions, v))[:, 0]
            return jnp.mean((q - y_i) ** 2), q.mean()

        (q_loss, q_mean), grads = per_agent(jax.value_and_grad(critic_loss, has_aux=True))(
            state.critic, y.T, visible
        )
        critics, critic_opt = apply_grads(state.critic, grads, state.critic_opt, h["critic_lr"])

        def actor_loss(params, critic_params, i, v, key):
            out = actor.apply(params, batch.obs[:, i])
            mine = kind.relaxed(key, out, h)
            q = critic.apply(critic_params, seen(batch.obs, with_action(actions, i, mine), v))
            return -q.mean() + OUTPUT_PENALTY * jnp.mean(out**2)

        pi_loss, grads = per_agent(jax.value_and_grad(actor_loss))(
            state.actor, critics, jnp.arange(P), visible, jax.random.split(actor_key, P)
        )
        actors, actor_opt = apply_grads(state.actor, grads, state.actor_opt, h["actor_lr"])
        state = dataclasses.replace(
            state,
            actor=actors,
            critic=critics,
            actor_opt=actor_opt,
            critic_opt=critic_opt,
            target_actor=soft_update(state.target_actor, actors, h["tau"]),
            target_critic=soft_update(state.target_critic, critics, h["tau"]),
        )
        return state, {
            "critic_loss": q_loss.mean(),
            "actor_loss": pi_loss.mean(),
            "q_mean": q_mean.mean(),
        }

    return gradient_step


def make_maddpg(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds MADDPG for ``spec``; ``ConfigError`` on a bad option or env."""
    cfg = build_config(MADDPGConfig, overrides, "agent 'maddpg'")
    kind = _check(spec)
    P, A, N, D = spec.num_players, kind.size, spec.num_envs, spec.obs_shape
    visible = visible_players(cfg, P)
    K = int(visible.shape[1])
    actor, critic = Head(cfg.hidden_sizes, A), Head(cfg.hidden_sizes, 1)
    clip = optax.clip_by_global_norm(cfg.max_grad_norm)
    optimizer = optax.chain(clip, optax.scale_by_adam())
    buffer = make_uniform_replay(max(cfg.buffer_size, N), N, cfg.batch_size)
    per_agent = lambda f: jax.vmap(f)  # over the leading [P] axis of stacked parameters

    def actor_out(params, obs):  # params [P, ...], obs [..., P, D] -> [..., P, A]
        moved = jnp.moveaxis(obs, -1 - len(D), 0)
        return jnp.moveaxis(per_agent(actor.apply)(params, moved), 0, -2)

    def init(key: jax.Array) -> MADDPGState:
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, *D), jnp.float32)
        joint = jnp.zeros((1, K * (math.prod(D) + A)), jnp.float32)
        actors = per_agent(lambda k: actor.init(k, obs))(jax.random.split(actor_key, P))
        critics = per_agent(lambda k: critic.init(k, joint))(jax.random.split(critic_key, P))
        one = Transition(
            jax.ShapeDtypeStruct((N, P, *D), jnp.float32),
            jax.ShapeDtypeStruct((N, *kind.stored(P)[0]), kind.stored(P)[1]),
            jax.ShapeDtypeStruct((N, P), jnp.float32),
            jax.ShapeDtypeStruct((N, P, *D), jnp.float32),
            jax.ShapeDtypeStruct((N,), jnp.bool_),
            jax.ShapeDtypeStruct((N,), jnp.bool_),
            {},
        )
        f32 = lambda v: jnp.asarray(v, jnp.float32)
        hparams = {k: f32(getattr(cfg, k)) for k in ("actor_lr", "critic_lr", "gamma", "tau")}
        hparams["temperature"] = f32(cfg.temperature)
        hparams["exploration_noise"] = f32(cfg.exploration_noise)
        return MADDPGState(
            actors,
            critics,
            actors,
            critics,
            per_agent(optimizer.init)(actors),
            per_agent(optimizer.init)(critics),
            buffer.init(one),
            hparams,
            jnp.zeros((), jnp.int32),
        )

    def act(state: MADDPGState, obs, carry, key: jax.Array, explore: bool):
        out = actor_out(state.actor, obs)  # [N, P, A]
        if explore:
            return kind.explore(key, out, state.hparams), carry, {}
        extras = (
            {"action_probs": jax.nn.softmax(out)} if isinstance(spec.action_space, Discrete) else {}
        )
        return kind.greedy(out), carry, extras

    gradient_step = _make_gradient_step(actor, critic, optimizer, actor_out, kind, visible)

    def learn(state: MADDPGState, key: jax.Array):
        def one(state, key):
            sample_key, step_key = jax.random.split(key)
            batch = jax.tree.map(
                lambda x: x[:, 0], buffer.sample(state.buffer, sample_key).experience
            )
            return gradient_step(state, batch, step_key)

        state, metrics = jax.lax.scan(one, state, jax.random.split(key, cfg.updates_per_rollout))
        return state, jax.tree.map(jnp.mean, metrics)

    def skip(state: MADDPGState, key: jax.Array):
        nan = jnp.full((), jnp.nan, jnp.float32)
        return state, {"critic_loss": nan, "actor_loss": nan, "q_mean": nan}

    def update(state: MADDPGState, rollout: Transition, key: jax.Array):
        T = rollout.reward.shape[0]
        rollout = rollout._replace(extras={})
        state = dataclasses.replace(
            state, buffer=buffer.add(state.buffer, rollout), step=state.step + T * N
        )
        ready = (state.step >= cfg.learning_starts) & buffer.can_sample(state.buffer)
        return jax.lax.cond(ready, learn, skip, state, key)

    return Agent(init, act, update)
