"""Multi-agent games through JaxMARL: cooperative Hanabi (``hanabi``, turn-based; below)
and the cooperative simultaneous-move tasks of the multi-agent particle environments (MPE;
Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments") through JaxMARL's JAX port (Rutherford et al. 2023, "JaxMARL: Multi-Agent
RL Environments and Algorithms in JAX"; optional extra ``jaxrl[marl]``, jaxmarl 0.2.0).

``simple_spread`` (JaxMARL ``MPE_simple_spread_v3``, PettingZoo's ``simple_spread_v3``):
``P = 3`` agents and 3 landmarks; each agent observes ``float32 [18]`` (its velocity and
position, the landmarks' and the other agents' relative positions, communication) and
picks one of 5 discrete moves (no-op, left, right, down, up). The reward of agent ``i``
is ``local_ratio * r_i + (1 - local_ratio) * R`` with ``R = -sum_l min_j |x_j - l|``
(every landmark's distance to its nearest agent) and ``r_i = -(collisions of agent i)``;
``local_ratio = 0.5`` and episodes of ``max_steps = 25`` steps, which end by truncation
only (PettingZoo's ``max_cycles``; JaxMARL's own episodes run one step longer, 26 steps,
as its ``done`` compares the step count before the increment).

Two layouts (``make_mpe``):

* ``shared=False``, the multi-player contract of ``jaxrl.types``: ``EnvSpec.num_players ==
  P``, ``turn_based == False``; obs ``[N, P, 18]``, actions ``[N, P]`` int32, reward
  ``[N, P]``, ``info["episode_return"]`` ``[N, P]``; for multi-agent learners (MADDPG).
* ``shared=True`` (the registered ``mpe:simple_spread``): every agent of every game is an
  env of its own (``num_envs * P`` envs of one player: obs ``[N P, 18]``, actions and
  rewards ``[N P]``, agent ``i`` of game ``g`` at row ``g P + i``), so any single-agent
  learner trains one network shared by all agents, as JaxMARL's IPPO does (parameter
  sharing); its logged return is an agent's episode return.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.envs.core import close_episodes, fresh_episodes, turn_based_spec, where_done
from jaxrl.types import ACTION_MASK, OBS, Array, Box, Discrete, Env, EnvSpec, PRNGKey, TimeStep
from jaxrl.validation import check_int

SCENARIOS = {"simple_spread": "MPE_simple_spread_v3"}


class MPEState(NamedTuple):
    """``core``: JaxMARL's batched ``State``; ``episode_return`` ``[N, P]`` float32 and
    ``episode_length`` ``[N]`` int32 of the current episodes so far."""

    core: Any
    episode_return: Array
    episode_length: Array


def _stack(tree: dict[str, Array], agents: list[str]) -> Array:
    """``{agent: [N, ...]}`` -> ``[N, P, ...]`` in ``agents`` order."""
    return jnp.stack([tree[a] for a in agents], axis=1)


def _import_jaxmarl() -> Any:
    """``jaxmarl``, imported on first use (the optional extra) without its side effects on
    this process: its import prints to stdout, and its Brax module sets ``sys.stdout`` and
    ``sys.stderr`` back to the process's originals (which would undo any redirection, such
    as pytest's capture); both are kept as they were."""
    saved = sys.stdout, sys.stderr, sys.__stdout__
    sink = io.StringIO()
    # typeshed declares sys.__stdout__ final; its Brax module resets sys.stdout to it.
    sys.stdout = sys.__stdout__ = sink  # type: ignore[misc,assignment]
    try:
        import jaxmarl
    finally:
        sys.stdout, sys.stderr = saved[:2]
        sys.__stdout__ = saved[2]  # type: ignore[misc]
    return jaxmarl


def make_mpe(
    scenario: str,
    num_envs: int,
    shared: bool = True,
    local_ratio: float = 0.5,
    max_steps: int = 25,
    continuous: bool = False,
) -> Env:
    """The vectorized, auto-resetting MPE ``scenario`` with ``num_envs`` games (module
    docstring); ``shared`` picks the parameter-sharing layout; ``continuous``: JaxMARL's
    continuous actions, ``Box(0, 1, (5,))`` per player (the forces of no-op, left, right,
    down, up; PettingZoo's ``continuous_actions``), instead of ``Discrete(5)``."""
    jaxmarl = _import_jaxmarl()
    num_envs = check_int("num_envs", num_envs)
    max_steps = check_int("max_steps", max_steps)
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")
    kind = {"action_type": "Continuous"} if continuous else {}
    mpe = jaxmarl.make(SCENARIOS[scenario], local_ratio=local_ratio, max_steps=max_steps, **kind)
    agents = list(mpe.agents)
    P, N = len(agents), num_envs
    obs_shape = tuple(mpe.observation_space(agents[0]).shape)
    space = mpe.action_space(agents[0])
    action_space: Discrete | Box
    if continuous:
        size = int(math.prod(space.shape))
        low, high = (float(space.low),) * size, (float(space.high),) * size
        action_space = Box(tuple(space.shape), low, high)
    else:
        action_space = Discrete(int(space.n))
    spec = EnvSpec(
        name=f"mpe:{scenario}",
        obs_shape=obs_shape,
        obs_dtype="float32",
        action_space=action_space,
        num_envs=N,
        max_episode_steps=max_steps,
        num_players=P,
        turn_based=False,
    )
    v_reset, v_step = jax.vmap(mpe.reset), jax.vmap(mpe.step_env)

    def reset(key: PRNGKey) -> tuple[MPEState, TimeStep]:
        obs, core = v_reset(jax.random.split(key, N))
        obs = _stack(obs, agents)
        returns, lengths, false = fresh_episodes(N, P)
        info = {"final_obs": obs, "episode_return": returns, "episode_length": lengths}
        return MPEState(core, returns, lengths), TimeStep(obs, returns, false, false, info)

    def step(state: MPEState, action: Array, key: PRNGKey) -> tuple[MPEState, TimeStep]:
        step_key, reset_key = jax.random.split(key)
        dtype = jnp.float32 if continuous else jnp.int32
        actions = {a: action[:, i].astype(dtype) for i, a in enumerate(agents)}
        final_obs, core, reward, dones, _ = v_step(
            jax.random.split(step_key, N), state.core, actions
        )
        final_obs, reward = _stack(final_obs, agents), _stack(reward, agents).astype(jnp.float32)
        ep_length = state.episode_length + 1
        truncated = ep_length >= max_steps  # PettingZoo's max_cycles: max_steps steps
        terminated = dones["__all__"] & ~truncated  # never: JaxMARL ends a step later
        done = terminated | truncated
        reset_obs, reset_core = v_reset(jax.random.split(reset_key, N))
        core = where_done(done, reset_core, core)
        obs = where_done(done, _stack(reset_obs, agents), final_obs)
        ep_return = state.episode_return + reward
        stats, ep_return, ep_length = close_episodes(done, ep_return, ep_length)
        info = {"final_obs": final_obs, **stats}
        new_state = MPEState(core, ep_return, ep_length)
        return new_state, TimeStep(obs, reward, terminated, truncated, info)

    env = Env(spec=spec, reset=reset, step=step)
    return players_as_envs(env) if shared else env


def players_as_envs(env: Env) -> Env:
    """A simultaneous-move ``env`` of ``N`` games and ``P`` players as a single-player env
    of ``N P`` envs (row ``g P + i``: player ``i`` of game ``g``): one network acts for
    every player (parameter sharing). ``episode_return`` is each player's own return."""
    spec = env.spec
    N, P = spec.num_envs, spec.num_players
    flat = lambda x: x.reshape(N * P, *x.shape[2:])
    each = lambda x: jnp.repeat(x, P, axis=0)
    flat_spec = EnvSpec(
        name=spec.name,
        obs_shape=spec.obs_shape,
        obs_dtype=spec.obs_dtype,
        action_space=spec.action_space,
        num_envs=N * P,
        max_episode_steps=spec.max_episode_steps,
    )

    def view(ts: TimeStep) -> TimeStep:
        info = {
            "final_obs": jax.tree.map(flat, ts.info["final_obs"]),
            "episode_return": flat(ts.info["episode_return"]),
            "episode_length": each(ts.info["episode_length"]),
        }
        obs = jax.tree.map(flat, ts.obs)
        return TimeStep(obs, flat(ts.reward), each(ts.terminated), each(ts.truncated), info)

    per_game = lambda action: action.reshape(N, P, *action.shape[1:])
    return viewed(env, view, per_game)._replace(spec=flat_spec)


def team_view(env: Env) -> Env:
    """A simultaneous-move ``env`` whose ``info["episode_return"]`` is the players' mean
    return ``[N]`` (an agent's return, as the shared layout logs it), so the single-agent
    runner (``runners/scan.py``) logs and evaluates it; everything else is unchanged."""

    def view(ts: TimeStep) -> TimeStep:
        info = {**ts.info, "episode_return": ts.info["episode_return"].mean(axis=-1)}
        return ts._replace(info=info)

    return viewed(env, view)


def viewed(
    env: Env,
    view: Callable[[TimeStep], TimeStep],
    action_view: Callable[[Array], Array] = lambda action: action,
) -> Env:
    """``env`` whose time steps are seen through ``view`` and whose actions are passed
    through ``action_view`` on their way in; its state is ``env``'s."""

    def reset(key: PRNGKey) -> tuple[Any, TimeStep]:
        state, ts = env.reset(key)
        return state, view(ts)

    def step(state: Any, action: Array, key: PRNGKey) -> tuple[Any, TimeStep]:
        state, ts = env.step(state, action_view(action), key)
        return state, view(ts)

    return env._replace(reset=reset, step=step)


def simple_spread(
    num_envs: int = 1,
    local_ratio: float = 0.5,
    max_steps: int = 25,
    shared: bool = True,
    continuous: bool = False,
) -> Env:
    """MPE ``simple_spread`` (JaxMARL ``MPE_simple_spread_v3``; module docstring)."""
    return make_mpe("simple_spread", num_envs, shared, local_ratio, max_steps, continuous)


# ------------------------------------------------------------------------------- Hanabi
class HanabiState(NamedTuple):
    """``core``: JaxMARL's batched Hanabi ``State``; ``episode_return`` ``[N, P]`` float32
    and ``episode_length`` ``[N]`` int32 of the current games so far."""

    core: Any
    episode_return: Array
    episode_length: Array


def hanabi(num_envs: int = 1, num_players: int = 2, max_steps: int = 100) -> Env:
    """Hanabi (Bard et al. 2020, "The Hanabi Challenge") through JaxMARL's ``hanabi``
    (jaxmarl 0.2.0): a cooperative turn-based card game of ``P`` players (5 colours x 5
    ranks, hands of 5 cards for 2-3 players, 8 information and 3 life tokens), as a
    turn-based env of the multi-player contract of ``jaxrl.types`` (like ``envs.games``):

    * one action ``[N]`` int32 per step, played by the player to move
      (``info["current_player"]`` ``[N]`` int32); ``Discrete(21)`` for 2 players: discard
      one of 5 cards, play one of 5, hint one of 5 colours, hint one of 5 ranks, and
      JaxMARL's no-op, which is never legal for the player to move;
    * ``obs = {"obs": float32 [N, 658], "action_mask": bool [N, 21]}`` (2 players):
      JaxMARL's observation of the player to move (the others' hands, the board, the
      discards, the last move, its card knowledge) and its legal moves;
    * ``reward`` ``[N, P]`` float32, the team's reward to every player: the fireworks'
      growth, and minus the whole score when the last life is lost, so a game's return is
      its score (0 after a bomb, at most 25);
    * episodes end by termination (three bombs, all fireworks complete, or one round after
      the deck runs out); ``max_steps`` (100, above the longest possible game of 89 turns)
      truncates only as a guard.
    """
    jaxmarl = _import_jaxmarl()
    num_envs = check_int("num_envs", num_envs)
    num_players = check_int("num_players", num_players)
    max_steps = check_int("max_steps", max_steps)
    if not 2 <= num_players <= 5:
        raise ValueError(f"hanabi: num_players must be 2 to 5, got {num_players}")
    game = jaxmarl.make("hanabi", num_agents=num_players)
    agents = list(game.agents)
    P, N = num_players, num_envs
    A = int(game.action_space(agents[0]).n)
    spec = turn_based_spec("hanabi", (int(game.obs_size),), A, N, max_steps, P)
    v_reset, v_step = jax.vmap(game.reset), jax.vmap(game.step_env)
    v_legal = jax.vmap(game.get_legal_moves)

    def observe(obs: dict[str, Array], core: Any) -> tuple[dict[str, Array], Array]:
        player = jnp.argmax(core.cur_player_idx, axis=-1).astype(jnp.int32)
        take = lambda x: jnp.take_along_axis(x, player.reshape(-1, 1, *([1] * (x.ndim - 2))), 1)
        mask = _stack(v_legal(core), agents) > 0
        seen = take(_stack(obs, agents).astype(jnp.float32))[:, 0]
        return {OBS: seen, ACTION_MASK: take(mask)[:, 0]}, player

    def reset(key: PRNGKey) -> tuple[HanabiState, TimeStep]:
        obs, core = v_reset(jax.random.split(key, N))
        obs, player = observe(obs, core)
        returns, lengths, false = fresh_episodes(N, P)
        info = {
            "final_obs": obs,
            "episode_return": returns,
            "episode_length": lengths,
            "current_player": player,
        }
        return HanabiState(core, returns, lengths), TimeStep(obs, returns, false, false, info)

    def step(state: HanabiState, action: Array, key: PRNGKey) -> tuple[HanabiState, TimeStep]:
        step_key, reset_key = jax.random.split(key)
        actions = {a: action.astype(jnp.int32) for a in agents}  # only the mover's is read
        raw, core, reward, dones, _ = v_step(jax.random.split(step_key, N), state.core, actions)
        final_obs, _ = observe(raw, core)
        team = reward["__all__"].astype(jnp.float32)
        reward = jnp.broadcast_to(team[:, None], (N, P))
        ep_length = state.episode_length + 1
        terminated = dones["__all__"]
        truncated = ~terminated & (ep_length >= max_steps)
        done = terminated | truncated
        reset_raw, reset_core = v_reset(jax.random.split(reset_key, N))
        core = where_done(done, reset_core, core)
        raw = where_done(done, reset_raw, raw)
        obs, player = observe(raw, core)
        ep_return = state.episode_return + reward
        stats, ep_return, ep_length = close_episodes(done, ep_return, ep_length)
        info = {"final_obs": final_obs, **stats, "current_player": player}
        new_state = HanabiState(core, ep_return, ep_length)
        return new_state, TimeStep(obs, reward, terminated, truncated, info)

    return Env(spec=spec, reset=reset, step=step)
