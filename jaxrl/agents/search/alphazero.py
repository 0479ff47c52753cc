"""AlphaZero (Silver et al. 2018, "A general reinforcement learning algorithm that masters
chess, shogi, and Go through self-play") with DeepMind's ``mctx``, and Gumbel MuZero's
search policy (Danihelka et al. 2022, "Policy improvement by planning with Gumbel") as
the option ``search: gumbel``, on the board games of ``envs.games``.

``act`` searches from each position with the game's own rules (``mcts.py``) and a
policy-value network (``network.py``), returns the searched move and, in ``extras
["policy"]`` ``[N, A]``, the search's policy; ``update`` stores each stitched
transition's position with that policy in the replay of outcomes (``replay.py``), and
once games have ended, takes ``updates_per_rollout`` gradient steps on
``cross_entropy(policy, softmax(logits)) + value_coef * (value - z)^2`` over batches of
positions whose outcome ``z`` is known (Silver et al. 2018; weight decay through
``optimizer: adamw``). Training runs in the self-play runner (``--self-play``, one agent
in both seats); greedy ``act`` (evaluation) searches without root noise and plays the
most visited move (PUCT) or the noiseless Gumbel choice.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, cast

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.optim import OptimizerOptions, scale_transform, scheduled_lr
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.agents.search import mcts, replay
from jaxrl.agents.search.network import PolicyValueNet
from jaxrl.envs import games
from jaxrl.types import (
    ACTION_MASK,
    OBS,
    Agent,
    ConfigError,
    EnvSpec,
    Obs,
    Transition,
    num_actions,
    shared_field,
)
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class AlphaZeroConfig(ReplayOptions, OptimizerOptions):
    """The options of ``alphazero`` (defaults: a small CPU budget; pgx's Connect Four
    baseline searches 32 simulations with 128 channels and 6 blocks).

    Attributes:
      search: ``"puct"`` (AlphaZero) or ``"gumbel"`` (Gumbel MuZero's root search).
      num_simulations: simulations per search.
      eval_simulations: simulations per search when acting greedily (evaluation, export);
        0: ``num_simulations``.
      dirichlet_alpha: the concentration of PUCT's root noise while training (Silver et
        al. 2018: 0.3 for chess, 0.03 for Go).
      dirichlet_fraction: the noise's share of the root priors (Silver et al. 2018: 0.25).
      temperature: PUCT's sampling temperature over visit counts while training.
      max_considered: Gumbel's root actions considered (mctx's 16).
      channels: the ResNet's convolution channels (``network.py``).
      blocks: its residual blocks.
      value_hidden: the width of its value head's hidden layer.
      lr: learning rate (the optimizer's, Adam by default).
      value_coef: the value loss's weight (Silver et al. 2018: 1).
      buffer_size: positions kept in the replay of outcomes.
      batch_size: positions per gradient step.
      learning_starts: env steps before the first gradient step.
      updates_per_rollout: gradient steps per ``update`` call.
    """

    search: Literal["puct", "gumbel"] = "puct"
    num_simulations: int = option(32, ge=2)
    eval_simulations: int = option(0, ge=0)
    dirichlet_alpha: float = option(0.3, gt=0)
    dirichlet_fraction: float = option(0.25, ge=0, le=1)
    temperature: float = option(1.0, gt=0)
    max_considered: int = option(16, ge=1)
    channels: int = option(32, ge=1)
    blocks: int = option(2, ge=0)
    value_hidden: int = option(64, ge=1)
    lr: float = option(1e-3, gt=0)
    value_coef: float = option(1.0, ge=0)
    buffer_size: int = 50_000
    learning_starts: int = 1_000
    updates_per_rollout: int = option(1, ge=1)


@flax.struct.dataclass
class AlphaZeroHparams:
    lr: jax.Array


@flax.struct.dataclass
class AlphaZeroState:
    params: Any
    opt_state: Any
    replay: replay.OutcomeReplay
    hparams: AlphaZeroHparams
    updates: jax.Array  # int32 gradient steps taken
    step: jax.Array = shared_field()  # int32 env steps given to update


def check_game(spec: EnvSpec) -> games.Game:
    """The game of ``spec`` whose rules the search steps (ConfigError otherwise: one line
    naming what is valid)."""
    if not any(e.name == ACTION_MASK for e in spec.obs_extras):
        raise ConfigError(
            f"alphazero searches over a game's legal moves: env '{spec.name}' has no "
            f"legal-action mask (obs '{ACTION_MASK}'); use {' or '.join(games.GAMES)}"
        )
    game = games.GAMES.get(spec.name)
    if game is None:
        raise ConfigError(
            f"alphazero steps the game's own rules in its search and jaxrl has them for "
            f"{' and '.join(games.GAMES)} only, not '{spec.name}'"
        )
    return game


def make_alphazero(spec: EnvSpec, **overrides: Any) -> Agent:
    """AlphaZero (or Gumbel MuZero's search) for the board game of ``spec`` (module
    docstring); ConfigError for an env without a legal-action mask or rules to search."""
    cfg = build_config(AlphaZeroConfig, overrides, "agent 'alphazero'")
    game = check_game(spec)
    env = games.pgx_env(game)
    n_actions = num_actions(spec)
    net = PolicyValueNet(n_actions, cfg.channels, cfg.blocks, cfg.value_hidden)

    def network(params: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        return cast(tuple[jax.Array, jax.Array], net.apply(params, obs))

    tx = scale_transform(cfg, cfg.adam_eps)
    options = mcts.SearchOptions(
        cfg.num_simulations,
        cfg.dirichlet_alpha,
        cfg.dirichlet_fraction,
        cfg.temperature,
        cfg.max_considered,
    )
    greedy_options = options._replace(num_simulations=cfg.eval_simulations or cfg.num_simulations)

    def init(key: jax.Array) -> AlphaZeroState:
        obs = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
        params = net.init(key, obs)
        example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), spec.obs_spec)
        return AlphaZeroState(
            params=params,
            opt_state=tx.init(params),
            replay=replay.init(example, n_actions, cfg.buffer_size),
            hparams=AlphaZeroHparams(lr=jnp.asarray(cfg.lr, jnp.float32)),
            step=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
        )

    def act(state: AlphaZeroState, obs: Obs, carry, key: jax.Array, explore: bool = True):
        assert isinstance(obs, dict)
        root = games.pgx_state(game, env, obs)
        planes, mask = obs[OBS].astype(jnp.float32), obs[ACTION_MASK]
        action, policy = mcts.search(
            options if explore else greedy_options,
            cfg.search,
            env,
            network,
            state.params,
            root,
            planes,
            mask,
            key,
            explore,
        )
        return action, carry, {"policy": policy}

    def loss_fn(params: Any, obs: Obs, policy: jax.Array, z: jax.Array):
        assert isinstance(obs, dict)
        logits, value = network(params, obs[OBS].astype(jnp.float32))
        policy_loss = optax.softmax_cross_entropy(logits, policy).mean()
        value_loss = jnp.square(value - z).mean()
        return policy_loss + cfg.value_coef * value_loss, (policy_loss, value_loss)

    def gradient_step(carry, key: jax.Array):
        params, opt_state, buffer, lr = carry
        obs, policy, z = replay.sample(buffer, key, cfg.batch_size)
        grads, (p_loss, v_loss) = jax.grad(loss_fn, has_aux=True)(params, obs, policy, z)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
        return (params, opt_state, buffer, lr), (p_loss, v_loss)

    def learn(state: AlphaZeroState, key: jax.Array):
        keys = jax.random.split(key, cfg.updates_per_rollout)
        lr = scheduled_lr(cfg, state.hparams.lr, state.step)
        carry = (state.params, state.opt_state, state.replay, lr)
        (params, opt_state, _, _), (p_loss, v_loss) = jax.lax.scan(gradient_step, carry, keys)
        return params, opt_state, p_loss.mean(), v_loss.mean()

    def skip(state: AlphaZeroState, key: jax.Array):
        nan = jnp.full((), jnp.nan, jnp.float32)
        return state.params, state.opt_state, nan, nan

    def update(state: AlphaZeroState, rollout: Transition, key: jax.Array):
        T, N = rollout.reward.shape
        buffer = add_rollout(game, state.replay, rollout)
        state = dataclasses.replace(state, replay=buffer, step=state.step + T * N)
        learning = (state.step >= cfg.learning_starts) & (replay.ready_count(buffer) > 0)
        params, opt_state, p_loss, v_loss = jax.lax.cond(learning, learn, skip, state, key)
        updates = state.updates + jnp.where(learning, cfg.updates_per_rollout, 0)
        state = dataclasses.replace(state, params=params, opt_state=opt_state, updates=updates)
        metrics = {
            "loss": p_loss + cfg.value_coef * v_loss,
            "policy_loss": p_loss,
            "value_loss": v_loss,
            "replay_ready": replay.ready_count(buffer).astype(jnp.float32),
        }
        return state, metrics

    return Agent(init=init, act=act, update=update)


def add_rollout(game: games.Game, buffer: replay.OutcomeReplay, rollout: Transition):
    """``buffer`` with the stitched transitions of ``rollout`` ``[T, N]`` added step by step
    (``replay.add_step``): each one's position, its search policy (``extras["policy"]``)
    and the parity of the moves made there."""

    def one(buffer: replay.OutcomeReplay, t: Transition):
        parity = games.moves_made(game, t.obs) % 2
        done = t.terminated | t.truncated
        policy = t.extras["policy"]
        return replay.add_step(buffer, t.obs, policy, parity, done, t.reward), None

    return jax.lax.scan(one, buffer, rollout)[0]
