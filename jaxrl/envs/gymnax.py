"""MinAtar (Young & Tian 2019) through gymnax, as vectorized, auto-resetting jaxrl ``Env``s:
the ``backend="gymnax"`` option of ``jaxrl.envs.minatar`` (whose default is pgx-minatar
with sticky actions and ramping).

gymnax (Lange 2022, written against ``gymnax==1.0.1``, the ``jaxrl[minatar]`` extra)
implements MinAtar's games as functional environments ``reset_env(key, params)`` and
``step_env(key, state, action, params)``. Its ``step_env`` applies the game dynamics only:
it returns the *natural* termination and never resets, while gymnax's own ``step`` adds
the time limit and auto-reset and reports ``terminated`` and ``truncated`` from
``is_truncated(state) = state.time >= params.max_steps_in_episode``. This module wraps
``step_env`` as a single-env core and lets ``jaxrl.envs.core.make_vector_env`` add the time
limit (``max_episode_steps``, default gymnax's ``max_steps_in_episode``), episode
statistics and auto-reset, so the time limit is a ``truncated`` flag separate from
``terminated``, exactly as for every other jaxrl env, and ``info["final_obs"]`` is the true
last observation. Everything runs inside ``lax.scan`` (the fused runner).

Observations are ``[10, 10, C]`` float32 with values in {0, 1} (one channel per object
kind; C = 4 Breakout, 4 Asterix, 7 Freeway, 6 SpaceInvaders). They are kept as float32,
not uint8, because jaxrl's torsos divide integer observations by 255 (meant for Atari
frames); a replay buffer of 100,000 transitions of Breakout then holds
``2 * 100,000 * 400 * 4`` bytes = 320 MB of observations.

Differences from the original MinAtar (numpy) that gymnax documents or that we observe:
no sticky actions (MinAtar's default ``sticky_action_prob=0.1``); the minimal action sets
(Breakout 3, Asterix 5, Freeway 3, SpaceInvaders 4 actions); Freeway's 2,500-step game
clock is gymnax's time limit, so it ends Freeway episodes as ``truncated``.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxrl.envs.core import make_vector_env
from jaxrl.types import ConfigError, Discrete, Env

#: jaxrl id -> (gymnax id, description)
GAMES = {
    "MinAtar-Breakout": ("Breakout-MinAtar", "bounce a ball to break bricks: Discrete(3)"),
    "MinAtar-Asterix": ("Asterix-MinAtar", "collect gold, avoid enemies: Discrete(5)"),
    "MinAtar-Freeway": ("Freeway-MinAtar", "cross a road of cars: Discrete(3)"),
    "MinAtar-SpaceInvaders": ("SpaceInvaders-MinAtar", "shoot down aliens: Discrete(4)"),
}


def _gymnax():
    try:
        import gymnax
    except ModuleNotFoundError as e:  # gymnax itself, or ``six`` that it imports undeclared
        raise ConfigError(
            f"MinAtar envs need {e.name!r}, which is not installed; pip install 'jaxrl[minatar]'"
        ) from None
    return gymnax


def make_minatar(
    game: str, num_envs: int = 1, max_episode_steps: int | None = None, **gymnax_kwargs: Any
) -> Env:
    """A vectorized MinAtar game from gymnax.

    Args:
      game: a jaxrl id from ``GAMES`` (``"MinAtar-Breakout"``) or a gymnax id
        (``"Breakout-MinAtar"``).
      num_envs: environments stepped in lock-step.
      max_episode_steps: time limit (``truncated``); default gymnax's
        ``max_steps_in_episode`` (1,000; Freeway 2,500).
      gymnax_kwargs: constructor options of the gymnax env (``use_minimal_action_set``).

    Returns:
      An ``Env`` with obs ``[num_envs, 10, 10, C]`` float32 in {0, 1}, ``Discrete``
      actions, rewards float32 and the ``TimeStep.info`` of ``make_vector_env``.
    """
    gymnax_id = GAMES[game][0] if game in GAMES else game
    core, params = _gymnax().make(gymnax_id, **gymnax_kwargs)
    if max_episode_steps is None:
        max_episode_steps = int(params.max_steps_in_episode)
    # The time limit is ours: gymnax's step_env never truncates, so give it no limit.
    params = params.replace(max_steps_in_episode=2**30)
    obs_shape = tuple(core.observation_space(params).shape)
    name = next((k for k, (g, _) in GAMES.items() if g == gymnax_id), gymnax_id)

    def reset_fn(key: jax.Array):
        obs, state = core.reset_env(key, params)
        return state, obs

    def step_fn(state: Any, action: jax.Array, key: jax.Array):
        obs, state, reward, terminated, _ = core.step_env(key, state, action, params)
        return state, obs, reward, terminated

    return make_vector_env(
        name=name,
        obs_shape=obs_shape,
        obs_dtype="float32",
        action_space=Discrete(int(core.num_actions)),
        max_episode_steps=max_episode_steps,
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
    )


def breakout(num_envs: int = 1, max_episode_steps: int | None = None) -> Env:
    """MinAtar Breakout (gymnax ``Breakout-MinAtar``): obs [10, 10, 4], Discrete(3)."""
    return make_minatar("MinAtar-Breakout", num_envs, max_episode_steps)


def asterix(num_envs: int = 1, max_episode_steps: int | None = None) -> Env:
    """MinAtar Asterix (gymnax ``Asterix-MinAtar``): obs [10, 10, 4], Discrete(5)."""
    return make_minatar("MinAtar-Asterix", num_envs, max_episode_steps)


def freeway(num_envs: int = 1, max_episode_steps: int | None = None) -> Env:
    """MinAtar Freeway (gymnax ``Freeway-MinAtar``): obs [10, 10, 7], Discrete(3)."""
    return make_minatar("MinAtar-Freeway", num_envs, max_episode_steps)


def space_invaders(num_envs: int = 1, max_episode_steps: int | None = None) -> Env:
    """MinAtar SpaceInvaders (gymnax ``SpaceInvaders-MinAtar``): obs [10, 10, 6], Discrete(4)."""
    return make_minatar("MinAtar-SpaceInvaders", num_envs, max_episode_steps)
