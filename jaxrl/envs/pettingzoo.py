"""PettingZoo games on the host (``--env pz:connect_four_v3``), as turn-based envs of the
multi-player contract of ``jaxrl.types``, so that the fused self-play and independent-agent
runners (``runners/games/self_play.py``, ``runners/games/independent.py``) train them unchanged.

``pz:ID`` names a PettingZoo environment module (``connect_four_v3``, searched in
``pettingzoo.classic``, ``butterfly`` and ``sisl``; or ``classic.tictactoe_v3``) with an
AEC ``env()`` or a parallel ``parallel_env()`` (converted to AEC with PettingZoo's
``parallel_to_aec``). ``num_envs`` copies run on the host; ``step`` reaches them through
``jax.experimental.io_callback`` (ordered), so the env state is a handle to this process
(``state_is_portable=False``: a resume restarts the games) and a run is one member (no
``--seeds``).

* Players: PettingZoo's ``possible_agents`` in order; ``info["current_player"]`` is the
  index of ``agent_selection``; ``reward`` ``[N, P]`` the ``rewards`` of the step just taken.
* Observations: ``{"obs": float32 [N, *shape], "action_mask": bool [N, A]}`` from a
  ``{"observation", "action_mask"}`` observation (PettingZoo's classic games), or
  ``float32 [N, *shape]`` without a mask; ``Discrete`` actions only.
* A game ends when the agent to move is terminated or truncated (then ``final_obs`` is its
  observation, and the copy resets with the next seed), or after ``max_steps`` moves
  (truncated).
"""

from __future__ import annotations

import importlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from jaxrl.envs.core import turn_based_spec
from jaxrl.types import ACTION_MASK, OBS, ConfigError, Env, TimeStep
from jaxrl.validation import check_int

PREFIX = "pz:"
FAMILIES = ("classic", "butterfly", "sisl")


def load(env_id: str) -> Any:
    """A fresh AEC env of PettingZoo module ``env_id``; ConfigError if there is none."""
    names = (
        [f"pettingzoo.{env_id}"]
        if "." in env_id
        else [f"pettingzoo.{f}.{env_id}" for f in FAMILIES]
    )
    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "env"):
            return module.env()
        if hasattr(module, "parallel_env"):
            from pettingzoo.utils.conversions import parallel_to_aec

            return parallel_to_aec(module.parallel_env())
    raise ConfigError(
        f"no PettingZoo env '{env_id}' (looked for {', '.join(names)}; e.g. "
        f"pz:connect_four_v3, pz:tictactoe_v3); is pettingzoo installed?"
    )


class _Games:
    """``num_envs`` AEC games on the host, stepped in lock-step by ``step``."""

    def __init__(self, env_id: str, num_envs: int, max_steps: int):
        self.envs = [load(env_id) for _ in range(num_envs)]
        first = self.envs[0]
        self.agents = list(first.possible_agents)
        space = first.observation_space(self.agents[0])
        self.masked = hasattr(space, "spaces") and ACTION_MASK in space.spaces
        self.obs_shape = tuple((space["observation"] if self.masked else space).shape)
        action_space = first.action_space(self.agents[0])
        if not hasattr(action_space, "n"):
            raise ConfigError(f"pz:{env_id}: only discrete actions are supported")
        self.num_actions = int(action_space.n)
        self.max_steps = max_steps
        P = len(self.agents)
        self.returns = np.zeros((num_envs, P), np.float32)
        self.lengths = np.zeros(num_envs, np.int32)
        self.seed = 0

    def _observe(self, env: Any) -> tuple[np.ndarray, np.ndarray]:
        raw = env.observe(env.agent_selection)
        if not self.masked:
            return np.asarray(raw, np.float32), np.ones(self.num_actions, bool)
        return np.asarray(raw["observation"], np.float32), np.asarray(raw[ACTION_MASK], bool)

    def _player(self, env: Any) -> int:
        return self.agents.index(env.agent_selection)

    def _reset_one(self, i: int) -> None:
        self.envs[i].reset(seed=self.seed)
        self.seed += 1
        self.returns[i] = 0.0
        self.lengths[i] = 0

    def reset(self, seed: np.ndarray) -> tuple:
        self.seed = int(seed)
        for i in range(len(self.envs)):
            self._reset_one(i)
        obs, masks = zip(*(self._observe(e) for e in self.envs), strict=True)
        players = np.array([self._player(e) for e in self.envs], np.int32)
        return np.stack(obs), np.stack(masks), players

    def step(self, action: np.ndarray) -> tuple:
        N, P = len(self.envs), len(self.agents)
        reward = np.zeros((N, P), np.float32)
        out: dict[str, list[Any]] = {k: [] for k in ("obs", "mask", "final", "final_mask")}
        term, trunc = np.zeros(N, bool), np.zeros(N, bool)
        ep_return, ep_length = np.zeros((N, P), np.float32), np.zeros(N, np.int32)
        for i, env in enumerate(self.envs):
            env.step(int(action[i]))
            reward[i] = [env.rewards.get(a, 0.0) for a in self.agents]
            self.returns[i] += reward[i]
            self.lengths[i] += 1
            mover = env.agent_selection
            term[i] = bool(env.terminations.get(mover, True)) if env.agents else True
            trunc[i] = not term[i] and (
                bool(env.truncations.get(mover, False)) or self.lengths[i] >= self.max_steps
            )
            final, final_mask = self._observe(env)
            if term[i] or trunc[i]:
                ep_return[i], ep_length[i] = self.returns[i], self.lengths[i]
                self._reset_one(i)
            obs, mask = self._observe(env)
            for key, value in zip(out, (obs, mask, final, final_mask), strict=True):
                out[key].append(value)
        players = np.array([self._player(e) for e in self.envs], np.int32)
        stacked = [np.stack(out[k]) for k in out]
        return (*stacked, reward, term, trunc, ep_return, ep_length, players)


def make_pettingzoo_env(env_id: str, num_envs: int = 1, max_steps: int = 1000) -> Env:
    """The host-backed turn-based env of PettingZoo's ``env_id`` (module docstring)."""
    num_envs = check_int("num_envs", num_envs)
    max_steps = check_int("max_steps", max_steps)
    games = _Games(env_id, num_envs, max_steps)
    N, P, A = num_envs, len(games.agents), games.num_actions
    spec = turn_based_spec(PREFIX + env_id, games.obs_shape, A, N, max_steps, P, games.masked)
    sds = jax.ShapeDtypeStruct
    obs_s, mask_s = sds((N, *games.obs_shape), jnp.float32), sds((N, A), jnp.bool_)
    players_s = sds((N,), jnp.int32)
    flag_s = sds((N,), jnp.bool_)
    step_shapes: tuple[jax.ShapeDtypeStruct, ...]
    step_shapes = (obs_s, mask_s, obs_s, mask_s, sds((N, P), jnp.float32), flag_s, flag_s)
    step_shapes += (sds((N, P), jnp.float32), sds((N,), jnp.int32), players_s)

    def observation(obs, mask):
        return {OBS: obs, ACTION_MASK: mask} if games.masked else obs

    def reset(key: jax.Array) -> tuple[jax.Array, TimeStep]:
        seed = jax.random.randint(key, (), 0, 2**30)
        obs, mask, players = io_callback(
            games.reset, (obs_s, mask_s, players_s), seed, ordered=True
        )
        zeros, false = jnp.zeros((N, P), jnp.float32), jnp.zeros((N,), bool)
        o = observation(obs, mask)
        info = {
            "final_obs": o,
            "episode_return": zeros,
            "episode_length": jnp.zeros((N,), jnp.int32),
            "current_player": players,
        }
        return jnp.zeros((), jnp.int32), TimeStep(o, zeros, false, false, info)

    def step(handle: jax.Array, action: jax.Array, key: jax.Array) -> tuple[jax.Array, TimeStep]:
        del key  # the games draw from their own seeds
        out = io_callback(games.step, step_shapes, action.astype(jnp.int32), ordered=True)
        obs, mask, final, final_mask, reward, term, trunc, ep_return, ep_length, players = out
        info = {
            "final_obs": observation(final, final_mask),
            "episode_return": ep_return,
            "episode_length": ep_length,
            "current_player": players,
        }
        return handle + 1, TimeStep(observation(obs, mask), reward, term, trunc, info)

    return Env(spec=spec, reset=reset, step=step, state_is_portable=False, vmappable=False)
