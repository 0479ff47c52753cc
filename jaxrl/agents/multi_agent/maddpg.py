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
observations and actions, its own among them. With ``sub_policies > 1`` each player keeps
an ensemble of policies (``maddpg_ensemble.py``). The parts both share are in
``maddpg_parts.py``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.agents.multi_agent.maddpg_actions import MADDPGActions, box_actions, gumbel_actions
from jaxrl.agents.multi_agent.maddpg_ensemble import ensemble_act, ensemble_step
from jaxrl.agents.multi_agent.maddpg_parts import (
    Head,
    MADDPGState,
    actor_objective,
    critic_step,
    critic_view,
    gradient_apply,
    stacked,
    stacked_init,
    stepped,
)
from jaxrl.buffers import make_uniform_replay
from jaxrl.types import Agent, ConfigError, Discrete, EnvSpec, Transition, no_carry
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
      sub_policies: policies per player, one drawn per episode (the paper's Section 4.3,
        machin's ``sub_policy_num + 1``), 1.
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
    sub_policies: int = option(1, ge=1)


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
    P = visible.shape[0]
    seen, apply = critic_view(visible), gradient_apply(optimizer)
    actor_loss = actor_objective(actor, critic, kind, seen)

    def gradient_step(state: MADDPGState, batch: Transition, key: jax.Array):
        h = state.hparams
        next_key, actor_key = jax.random.split(key)
        next_actions = kind.relaxed(next_key, actor_out(state.target_actor, batch.next_obs), h)
        actions = kind.critic_input(batch.action)
        parts = (batch.obs, actions, batch.next_obs, next_actions, batch.reward)
        critics, critic_opt, q_loss, q_mean = critic_step(
            critic, seen, apply, visible, state, (*parts, batch.terminated)
        )
        pi_loss, grads = jax.vmap(
            jax.value_and_grad(actor_loss), in_axes=(0, 0, 0, 0, None, None, 0, None)
        )(state.actor, critics, jnp.arange(P), visible, batch.obs, actions,
          jax.random.split(actor_key, P), h)  # fmt: skip
        actors, actor_opt = apply(state.actor, grads, state.actor_opt, h["actor_lr"])
        return stepped(state, actors, critics, actor_opt, critic_opt, (q_loss, pi_loss, q_mean))

    return gradient_step


def make_maddpg(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds MADDPG for ``spec``; ``ConfigError`` on a bad option or env."""
    cfg = build_config(MADDPGConfig, overrides, "agent 'maddpg'")
    kind = _check(spec)
    P, A, N, D = spec.num_players, kind.size, spec.num_envs, spec.obs_shape
    visible = visible_players(cfg, P)
    K, S = int(visible.shape[1]), cfg.sub_policies
    ensemble = S > 1  # leaves [P, S, ...] of actors (maddpg_ensemble.py), else [P, ...]
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
        actors = stacked_init(lambda k: actor.init(k, obs), actor_key, (P, S) if ensemble else (P,))
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
            stacked(optimizer.init, 2 if ensemble else 1)(actors),
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
    sample = lambda buffer_state, key: jax.tree.map(
        lambda x: x[:, 0], buffer.sample(buffer_state, key).experience
    )
    init_carry = no_carry
    if ensemble:  # S batches [S, B] per step; each episode's sub-policies in the carry
        discrete = isinstance(spec.action_space, Discrete)
        act = ensemble_act(actor, kind, S, discrete, len(D))
        gradient_step = ensemble_step(actor, critic, optimizer, kind, visible, S, len(D))
        one_batch = sample
        sample = lambda state, key: jax.vmap(one_batch, (None, 0))(state, jax.random.split(key, S))
        init_carry = lambda num_envs: jnp.full((num_envs, P), -1, jnp.int32)

    def learn(state: MADDPGState, key: jax.Array):
        def one(state, key):
            sample_key, step_key = jax.random.split(key)
            return gradient_step(state, sample(state.buffer, sample_key), step_key)

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

    return Agent(init, act, update, init_carry)
