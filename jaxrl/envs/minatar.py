"""MinAtar (Young & Tian 2019) as its paper runs it: five games, sticky actions, difficulty
ramping; vectorized, auto-resetting jaxrl ``Env``s that run inside the fused runner.

The game dynamics are pgx's JAX port (``pgx-minatar==0.5.1``, the ``jaxrl[minatar]``
extra): each game module's deterministic step ``_step_det(state, action, *draws)`` and
initial state ``_init_det(*draws)`` / ``_init(key)``, where ``draws`` are the step's random
outcomes (spawn side, kind, row; Freeway's car speeds and directions). This module draws
those outcomes itself (``step_draws``), with the distributions of the original numpy
package (``minatar==1.0.15``), so that a test can feed the very same outcomes to the
original's random-number calls and compare the two step for step.

Options (the original's ``Environment(sticky_action_prob, difficulty_ramping)``):

* ``sticky_action_prob`` (default 0.1): with this probability the previous executed action
  is repeated instead of the chosen one (Machado et al. 2018's sticky actions, MinAtar's
  default). The previous action is reset to no-op at every episode start.
* ``difficulty_ramping`` (default true): Asterix speeds up every 100 steps, Seaquest at each
  surfacing with six divers, Space Invaders at each cleared wave (the original's
  ``ramping``; Breakout and Freeway have none). pgx always ramps; with ramping off this
  module puts each step's ramp fields (speeds, intervals, ramp timer and index) back to
  their values before the step. That equals the original with ``ramping=False`` because
  the original ramps as the last act of a step (Asterix, Seaquest's surfacing) or changes
  only a value that the same step no longer reads (Space Invaders' move interval).

Observations ``[10, 10, C]`` float32 in {0, 1} (C = 4 Breakout, 4 Asterix, 7 Freeway,
10 Seaquest, 6 SpaceInvaders), minimal action sets (3, 5, 3, 6, 4 actions). Time limit
``max_episode_steps`` (``truncated``; default 1,000 steps as the gymnax backend; Freeway
ends itself (``terminated``) after 2,500 steps, its default limit). The original has no
time limit of its own.

``backend="gymnax"`` gives ``jaxrl.envs.gymnax`` instead (no sticky actions, no Seaquest;
gymnax's Asterix ramps, its other games do not): the setting of this project's results
before issue 20 and of ``benchmarks/bit_identical.py``.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.envs.core import documented_partial, make_vector_env
from jaxrl.types import ConfigError, Discrete, Env

#: jaxrl id -> (pgx_minatar module, gymnax id or None, description)
GAMES = {
    "MinAtar-Breakout": ("breakout", "Breakout-MinAtar", "bounce a ball to break bricks"),
    "MinAtar-Asterix": ("asterix", "Asterix-MinAtar", "collect gold, avoid enemies"),
    "MinAtar-Freeway": ("freeway", "Freeway-MinAtar", "cross a road of cars"),
    "MinAtar-Seaquest": ("seaquest", None, "shoot, rescue divers, surface for air"),
    "MinAtar-SpaceInvaders": ("space_invaders", "SpaceInvaders-MinAtar", "shoot aliens"),
}
#: module -> (channels, minimal action set as indices of the original's 6 actions)
SPECS = {
    "breakout": (4, (0, 1, 3)),
    "asterix": (4, (0, 1, 2, 3, 4)),
    "freeway": (7, (0, 2, 4)),
    "seaquest": (10, (0, 1, 2, 3, 4, 5)),
    "space_invaders": (6, (0, 1, 3, 5)),
}
#: module -> state fields that difficulty ramping changes (kept fixed when it is off)
RAMP_FIELDS = {
    "breakout": (),
    "asterix": ("_spawn_speed", "_move_speed", "_ramp_timer", "_ramp_index"),
    "freeway": (),
    "seaquest": ("_e_spawn_speed", "_move_speed", "_ramp_index"),
    "space_invaders": ("_enemy_move_interval", "_ramp_index"),
}
BACKENDS = ("pgx", "gymnax")


def game_module(game: str):
    """The ``pgx_minatar`` module of ``game`` (a key of ``GAMES`` or a module name)."""
    name = GAMES[game][0] if game in GAMES else game
    try:
        return importlib.import_module(f"pgx_minatar.{name}")
    except ModuleNotFoundError as e:
        raise ConfigError(
            f"MinAtar envs need {e.name!r}, which is not installed; pip install 'jaxrl[minatar]'"
        ) from None


def _coin(key: jax.Array, p: float) -> jax.Array:
    return jax.random.uniform(key) < p


def init_draws(module: str, key: jax.Array) -> tuple:
    """The random outcomes of a reset: Breakout's ball side (0 left, 1 right), Freeway's
    car speeds (int32 [8] in 1..5) and directions (int32 [8] in {-1, 1}); none otherwise."""
    if module == "breakout":
        return (jax.random.randint(key, (), 0, 2),)
    if module == "freeway":
        return step_draws(module, key, None)
    return ()


def step_draws(module: str, key: jax.Array, state: Any) -> tuple:
    """The random outcomes one step may use, drawn whether or not it uses them, with the
    original's distributions: Asterix ``(from_left p=1/2, is_gold p=1/3, row slot uniform
    over the empty ones)``, Seaquest ``(enemy from_left p=1/2, is_sub p=1/3, enemy row
    1..8, diver from_left p=1/2, diver row 1..8)``, Freeway ``(speeds, directions)``."""
    k = jax.random.split(key, 5)
    if module == "asterix":
        empty = state._entities[:, 0] == game_module("asterix").INF
        empty = jnp.where(empty.any(), empty, jnp.arange(8) == 0)
        slot = jax.random.choice(k[2], 8, p=empty / empty.sum())
        return _coin(k[0], 1 / 2), _coin(k[1], 1 / 3), slot
    if module == "seaquest":
        rows = [jax.random.randint(k[i], (), 1, 9) for i in (2, 4)]
        return _coin(k[0], 1 / 2), _coin(k[1], 1 / 3), rows[0], _coin(k[3], 1 / 2), rows[1]
    if module == "freeway":
        speeds = jax.random.randint(k[0], (8,), 1, 6, dtype=jnp.int32)
        return speeds, jnp.where(jax.random.bernoulli(k[1], 0.5, (8,)), 1, -1).astype(jnp.int32)
    return ()


def initial_state(module: str, key: jax.Array) -> Any:
    """pgx's initial state of ``module`` (from ``init_draws`` where it is random)."""
    mod = game_module(module)
    draws = init_draws(module, key)
    return mod._init_det(*draws) if draws else mod.State()


def game_step(module: str, state: Any, action: jax.Array, draws: tuple, ramping: bool) -> Any:
    """One deterministic step of pgx's ``module`` with full-set ``action`` (int32 0..5);
    with ``ramping`` false the ramp fields keep their values from before the step."""
    new = game_module(module)._step_det(state, action, *draws)
    if not ramping and RAMP_FIELDS[module]:
        new = new.replace(**{f: getattr(state, f) for f in RAMP_FIELDS[module]})
    return new


def observe(module: str, state: Any) -> jax.Array:
    """The observation ``[10, 10, C]`` float32 in {0, 1}."""
    return game_module(module)._observe(state).astype(jnp.float32)


def make_minatar(
    game: str,
    num_envs: int = 1,
    max_episode_steps: int | None = None,
    sticky_action_prob: float | None = None,
    difficulty_ramping: bool | None = None,
    backend: str = "pgx",
) -> Env:
    """A vectorized MinAtar game.

    Args:
      game: a jaxrl id from ``GAMES`` (``"MinAtar-Seaquest"``).
      num_envs: environments stepped in lock-step.
      max_episode_steps: time limit (``truncated``); default 1,000 (Freeway 2,500).
      sticky_action_prob: probability in [0, 1] of repeating the previous action; unset:
        0.1 (pgx), 0 (gymnax, which has none; any other value is refused).
      difficulty_ramping: the original's difficulty ramping; unset: true (pgx), gymnax's
        own (its Asterix ramps, its other games do not; setting it is refused).
      backend: ``"pgx"`` (this module) or ``"gymnax"`` (``jaxrl.envs.gymnax``; no
        Seaquest).

    Returns:
      An ``Env`` with obs ``[num_envs, 10, 10, C]`` float32 in {0, 1}, ``Discrete``
      minimal actions, rewards float32 and the ``TimeStep.info`` of ``make_vector_env``.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown MinAtar backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if sticky_action_prob is not None and not (
        isinstance(sticky_action_prob, int | float)
        and not isinstance(sticky_action_prob, bool)
        and 0.0 <= sticky_action_prob <= 1.0
    ):
        raise ConfigError(
            f"sticky_action_prob must be a number in [0, 1], got {sticky_action_prob!r}"
        )
    if difficulty_ramping is not None and not isinstance(difficulty_ramping, bool):
        raise ConfigError(f"difficulty_ramping must be true or false, got {difficulty_ramping!r}")
    if backend == "gymnax":
        return _gymnax(game, num_envs, max_episode_steps, sticky_action_prob, difficulty_ramping)
    prob = 0.1 if sticky_action_prob is None else float(sticky_action_prob)
    ramping = True if difficulty_ramping is None else difficulty_ramping
    module = GAMES[game][0]
    channels, action_set = SPECS[module]
    game_module(module)  # a missing package is one line, before tracing
    full_action = jnp.asarray(action_set, jnp.int32)

    def reset_fn(key: jax.Array):
        state = initial_state(module, key)
        return state, observe(module, state)

    def step_fn(state: Any, action: jax.Array, key: jax.Array):
        k_sticky, k_draws = jax.random.split(key)
        chosen = full_action[action]
        executed = jnp.where(_coin(k_sticky, prob), state._last_action, chosen)
        new = game_step(module, state, executed, step_draws(module, k_draws, state), ramping)
        return new, observe(module, new), new.rewards[0], new.terminated

    return make_vector_env(
        name=game,
        obs_shape=(10, 10, channels),
        obs_dtype="float32",
        action_space=Discrete(len(action_set)),
        max_episode_steps=max_episode_steps or (2500 if module == "freeway" else 1000),
        num_envs=num_envs,
        reset_fn=reset_fn,
        step_fn=step_fn,
    )


def _gymnax(game, num_envs, max_episode_steps, sticky_action_prob, difficulty_ramping) -> Env:
    from jaxrl.envs import gymnax

    if GAMES[game][1] is None:
        raise ConfigError(f"{game} has no gymnax backend; valid backend for it: pgx")
    if sticky_action_prob not in (None, 0, 0.0) or difficulty_ramping is not None:
        raise ConfigError(
            "the gymnax MinAtar backend has no sticky actions and fixed ramping (Asterix ramps, "
            "the others do not): leave sticky_action_prob (or 0) and difficulty_ramping unset, "
            "or use backend pgx"
        )
    return gymnax.make_minatar(game, num_envs, max_episode_steps)


def factory(game: str) -> functools.partial[Env]:
    """The registry factory of ``game``: ``make_minatar`` with its options."""
    doc = f"MinAtar {game.removeprefix('MinAtar-')}: see ``make_minatar``."
    return documented_partial(doc, make_minatar, game)


breakout = factory("MinAtar-Breakout")
asterix = factory("MinAtar-Asterix")
freeway = factory("MinAtar-Freeway")
seaquest = factory("MinAtar-Seaquest")
space_invaders = factory("MinAtar-SpaceInvaders")
