"""Environments: vectorized, functional, auto-resetting (see ``jaxrl.types.Env``).

The registry maps names to factories ``factory(num_envs=..., **kwargs) -> Env``::

    env = jaxrl.envs.make("CartPole", num_envs=8)        # short name -> "CartPole-v1"
    env = jaxrl.envs.make("mypkg.envs:make_my_env")      # import a module, call its factory
    jaxrl.envs.register("MyEnv-v0", make_my_env, "what it is", aliases=("MyEnv",))

Names resolve in this order: a canonical id (case-sensitive), an alias, a unique
case-insensitive match of either, ``"gym:ID"`` for any Gymnasium id (a host-side
``envs.gymnasium.HostEnv``, stepped by ``runners.host``), then ``"package.module:attr"``,
which imports ``package.module`` and uses the name ``attr`` if the import registered it,
else the module's attribute ``attr`` as the factory. A user's mistake raises a one-line
``ConfigError``.

``check(env)`` (``envs.checker``) lists the ways an env breaks the contract, one line each.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterable
from typing import Any, cast

from jaxrl import trust
from jaxrl.envs import boundary, classic, gymnasium
from jaxrl.envs.checker import check
from jaxrl.envs.core import VectorEnvState, make_vector_env
from jaxrl.envs.mujoco_render import headless_gl
from jaxrl.types import ConfigError, Env
from jaxrl.validation import check_int, check_names

__all__ = [
    "VectorEnvState",
    "available",
    "canonical_name",
    "check",
    "family",
    "make",
    "make_vector_env",
    "register",
]

Factory = Callable[..., Env]

headless_gl()  # MuJoCo's OpenGL platform, before anything imports mujoco (envs.mujoco_render)

_FACTORIES: dict[str, Factory | str] = {}  # canonical name -> factory or "module:attr"
_DESCRIPTIONS: dict[str, str] = {}
_ALIASES: dict[str, str] = {}  # alias -> canonical name
_FAMILIES: dict[str, str] = {}  # canonical name -> family ("atari"), where it has one


def register(
    name: str,
    factory: Factory | str,
    description: str = "",
    aliases: Iterable[str] = (),
    family: str | None = None,
) -> None:
    """Register ``factory(num_envs=..., **kwargs) -> Env`` under ``name``.

    ``family`` groups environments that share presets (``"atari"``: a preset whose env
    section says ``family: atari`` applies to every Atari game).

    ``factory`` may also be a ``"package.module:attr"`` string, imported on first use (for
    environments with heavy optional dependencies). Registering an existing name again
    replaces it; a name or alias that already means a different environment is an error.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"env name must be a non-empty string, got {name!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise ConfigError(f"factory for env {name!r} must be callable or 'module:attr'")
    aliases = tuple(aliases)
    if _ALIASES.get(name, name) != name:
        raise ConfigError(f"env name {name!r} is already an alias of {_ALIASES[name]!r}")
    for alias in aliases:
        taken = alias in _FACTORIES and alias != name
        if taken or _ALIASES.get(alias, name) != name:
            other = alias if taken else _ALIASES[alias]
            raise ConfigError(f"alias {alias!r} for env {name!r} already names {other!r}")
    _FACTORIES[name] = factory
    _DESCRIPTIONS[name] = description
    for alias in aliases:
        _ALIASES[alias] = name
    if family:
        _FAMILIES[name] = family
    else:
        _FAMILIES.pop(name, None)


def family(name: str) -> str | None:
    """The family of environment ``name`` (any accepted spelling), or None."""
    return _FAMILIES.get(canonical_name(name))


def available() -> dict[str, str]:
    """Canonical name -> one-line description of every registered environment."""
    return dict(_DESCRIPTIONS)


GROUP_TITLES = {
    "classic": "classic control",
    "minatar": "MinAtar",
    "mujoco": "MuJoCo (MJX; Brax)",
    "atari": "Atari",
    "games": "multi-player",
    "toy_text": "toy text",
    "pomdp": "partially observed",
    "multi_input": "several inputs",
}


def group(name: str) -> str:
    """The group of a canonical env name for help and errors: its registered family, else
    ``mujoco`` (``*-mjx``, ``*-brax``), ``minatar`` (``MinAtar-*``) or ``classic``."""
    if name in _FAMILIES:
        return _FAMILIES[name]
    if name.endswith(("-mjx", "-brax")):
        return "mujoco"
    return "minatar" if name.startswith("MinAtar-") else "classic"


def groups() -> dict[str, list[str]]:
    """Group (``group``) -> its canonical env names, in registration order."""
    out: dict[str, list[str]] = {}
    for name in _DESCRIPTIONS:
        out.setdefault(group(name), []).append(name)
    return out


def _choices() -> str:
    parts = []
    for key, names in groups().items():
        title = GROUP_TITLES.get(key, key)
        if len(names) > 6:
            parts.append(f"{title} ({len(names)} envs, e.g. {names[0]})")
        else:
            parts.append(f"{title} ({', '.join(names)})")
    return (
        "; ".join(parts)
        + "; gym:ID (any Gymnasium id); pz:ID (a PettingZoo game); package.module:factory"
    )


def _unknown(name: str) -> str:
    from jaxrl.suggest import close, phrase

    spellings = [*_FACTORIES, *_ALIASES]
    found = (_lookup(m) for m in close(name, spellings, n=6))  # registered: never None
    matches = list(dict.fromkeys(c for c in found if c is not None))[:3]
    return f"unknown env {name!r}{phrase(matches)}; valid: {_choices()}"


def _lookup(name: str) -> str | None:
    """The canonical registered name for ``name`` or None."""
    if name in _FACTORIES:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    folded = {n.casefold(): n for n in _FACTORIES} | {a.casefold(): c for a, c in _ALIASES.items()}
    matches = {c for k, c in folded.items() if k == name.casefold()}
    return matches.pop() if len(matches) == 1 else None


def _import(module_name: str, what: str, user: bool = False) -> Any:
    """``module_name``, imported for env ``what``; ``user``: a name a user gave, which
    imports only a module the command line named (``jaxrl.trust``)."""
    try:
        if user:
            return trust.import_module(module_name, f"env {what!r}")
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise ConfigError(f"cannot import module {module_name!r} for env {what!r}") from None
        raise ConfigError(f"env {what!r} needs {missing!r}, which is not installed") from None


def _resolve(name: str) -> tuple[str, Callable[..., Env | gymnasium.HostEnv]]:
    """``(canonical name, factory)`` for any accepted spelling of an environment name."""
    if not isinstance(name, str):
        raise ConfigError(f"env name must be a string, got {name!r}; valid: {_choices()}")
    if name.startswith(gymnasium.PREFIX):  # a host-side Gymnasium env (envs/gymnasium.py)
        env_id = gymnasium.check_id(name[len(gymnasium.PREFIX) :])
        return gymnasium.PREFIX + env_id, functools.partial(gymnasium.make_host_env, env_id)
    if name.startswith("pz:"):  # a PettingZoo game on the host (envs/pettingzoo.py)
        from jaxrl.envs import pettingzoo

        return name, functools.partial(pettingzoo.make_pettingzoo_env, name[3:])
    canonical = _lookup(name)
    if canonical is None and ":" in name:
        module_name, _, attr = name.partition(":")
        if not module_name or not attr:
            raise ConfigError(f"bad env {name!r}: expected 'package.module:factory'")
        module = _import(module_name, name, user=True)
        canonical = _lookup(attr)
        if canonical is None:
            factory = getattr(module, attr, None)
            if not callable(factory):
                raise ConfigError(f"module {module_name!r} has no env factory {attr!r}")
            return name, factory
    if canonical is None:
        raise ConfigError(_unknown(name))
    factory = _FACTORIES[canonical]
    if isinstance(factory, str):
        module_name, _, attr = factory.partition(":")
        factory = getattr(_import(module_name, canonical), attr)
    return canonical, factory


def canonical_name(name: str) -> str:
    """The canonical id for ``name`` (``"CartPole"`` -> ``"CartPole-v1"``).

    A ``"module:attr"`` name that is not registered is its own canonical name.
    """
    return _resolve(name)[0]


def _factory_options(factory: Callable[..., Any]) -> dict[str, Any] | None:
    """``{option: default}`` (``inspect.Parameter.empty``: none) of the keyword options a
    factory takes besides ``num_envs``; None where it has no signature or takes
    ``**kwargs`` (it checks its options itself)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature (e.g. some builtins)
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.default for p in params if p.kind in kinds and p.name != "num_envs"}


def options(name: str) -> tuple[str, dict[str, Any] | None]:
    """``(canonical name, {option: default})`` of env ``name``: the options ``make`` passes
    to its factory (None: the factory checks them itself, e.g. ``gym:`` envs)."""
    canonical, factory = _resolve(name)
    return canonical, _factory_options(factory)


def make(name: str, num_envs: int = 1, **kwargs: Any) -> Env | gymnasium.HostEnv:
    """Build a vectorized environment of ``num_envs`` copies of ``name``.

    ``kwargs`` go to the factory (for the classic envs: ``max_episode_steps``); an option
    the factory does not accept raises ``ConfigError`` naming it and the valid options.
    """
    canonical, factory = _resolve(name)
    num_envs = check_int("num_envs", num_envs)
    pixel_opts = None
    if not canonical.startswith(gymnasium.PREFIX):  # gym: envs take them as options
        from jaxrl.envs import pixels

        kwargs = dict(kwargs)
        for key in ("resize", "grayscale"):  # they shape a rendering; Atari has its own
            if key in kwargs and kwargs.get("pixels") is not True:
                raise ConfigError(
                    f"unknown option {key!r} for env {canonical!r} without pixels: true (it "
                    "shapes the frames a JAX-native env renders)"
                )
        pixel_opts = pixels.options(kwargs)
    own = _factory_options(factory)
    if own is not None:
        check_names(
            kwargs,
            own,
            lambda key, listing: (
                f"unknown option {key!r} for env {canonical!r}; valid options: {listing}"
            ),
        )
    user = trust.is_user_code(factory)
    if user:
        boundary.check_factory(canonical, factory)
    env = factory(num_envs=num_envs, **kwargs)
    if user:  # its contract checked where it enters (a host-loop env is stepped by its own)
        if not getattr(env, "host_loop", False):
            boundary.check_env(canonical, env, num_envs)
    elif not isinstance(env, Env | gymnasium.HostEnv):
        raise TypeError(f"factory for env {canonical!r} returned {type(env).__name__}, not Env")
    if pixel_opts is not None and pixel_opts.active:
        if getattr(env, "host_loop", True):  # the declared field, as the mode table reads it
            raise ConfigError(f"env {canonical!r}: pixel options need a JAX-native env")
        env = pixels.wrap(cast(Env, env), pixel_opts)
    return env


# Classic control (envs/classic.py), each with its Gymnasium id's name as an alias.
for _name, _factory, _what in (
    (
        "CartPole-v1",
        classic.cartpole,
        "Balance a pole on a moving cart: Discrete(2), obs [4], 500 steps (Gymnasium dynamics).",
    ),
    (
        "Acrobot-v1",
        classic.acrobot,
        "Swing a two-link arm above a line: Discrete(3), obs [6], 500 steps (Gymnasium dynamics).",
    ),
    (
        "MountainCar-v0",
        classic.mountain_car,
        "Drive an underpowered car up a hill: Discrete(3), obs [2], 200 steps (Gymnasium).",
    ),
    (
        "MountainCarContinuous-v0",
        classic.mountain_car_continuous,
        "Mountain car with a continuous force: Box(1,) in [-1, 1], obs [2], 999 steps (Gymnasium).",
    ),
    (
        "Pendulum-v1",
        classic.pendulum,
        "Swing up and hold a pendulum: Box(1,) in [-2, 2], obs [3], 200 steps (Gymnasium).",
    ),
):
    register(_name, _factory, _what, aliases=(_name.partition("-")[0],))
register(
    "FrozenLake-v1",
    "jaxrl.envs.gridworld:frozen_lake",
    "Walk a slippery frozen lake to the goal (Gymnasium's dynamics): Discrete(4), obs "
    "one-hot [16], 100 steps; options map_name (4x4, 8x8), is_slippery.",
    aliases=("FrozenLake",),
    family="toy_text",
)


def _register_tasks(module: str, tasks: Iterable[tuple[str, str, str]]) -> None:
    """Each ``(name, attr, description)`` of ``tasks`` as ``jaxrl.envs.MODULE:attr``, in
    family ``module``, its alias the name before the version."""
    for name, attr, what in tasks:
        register(
            name, f"jaxrl.envs.{module}:{attr}", what, (name.partition("-")[0],), family=module
        )


# Partially observed tasks (envs/pomdp.py): classic control with the velocities masked,
# and bsuite's memory task.
_register_tasks(
    "pomdp",
    (
        (
            "StatelessCartPole-v1",
            "stateless_cartpole",
            "CartPole-v1 with the velocities masked (POPGym): Discrete(2), obs [x, theta], "
            "500 steps.",
        ),
        (
            "StatelessPendulum-v1",
            "stateless_pendulum",
            "Pendulum-v1 with the velocity masked (POPGym): Box(1,), obs [cos, sin], 200 steps.",
        ),
        (
            "MemoryChain-v0",
            "memory_chain",
            "Remember a bit shown at the first step until the query at the last (bsuite's memory "
            "length): Discrete(2), obs [3], return +1 or -1; option memory_length (10).",
        ),
    ),
)

# Observations of several inputs (envs/multi_input.py): an image of the positions and a
# vector of the velocities, for the ``multi`` torso.
_register_tasks(
    "multi_input",
    (
        (
            "MultiInputCartPole-v1",
            "multi_input_cartpole",
            "CartPole-v1 seen as an image of the positions and a vector of the velocities: "
            "Discrete(2), obs {obs: uint8 [16, 16, 1], velocity: [2]}, 500 steps; option size.",
        ),
        (
            "MultiInputPendulum-v1",
            "multi_input_pendulum",
            "Pendulum-v1 seen as an image of the rod and its angular velocity: Box(1,), obs "
            "{obs: uint8 [16, 16, 1], velocity: [1]}, 200 steps; option size.",
        ),
    ),
)

# MuJoCo locomotion on MJX (Gymnasium v5's tasks; ``--env.backend brax`` for Brax's) and on
# Brax as ``<Task>-brax``; the optional extra ``jaxrl[mujoco]``.
for _task, _what in (
    ("HalfCheetah", "run forward: Box(6,), obs [17], no termination"),
    ("Hopper", "hop forward: Box(3,), ends when unhealthy"),
    ("Walker2d", "walk forward: Box(6,), ends when unhealthy"),
    ("Ant", "walk forward on four legs: Box(8,), ends when unhealthy"),
    ("Humanoid", "walk forward: Box(17,) in [-0.4, 0.4], ends when fallen"),
):
    register(
        f"{_task}-mjx",
        f"jaxrl.envs.mujoco:{_task.lower()}",
        f"MuJoCo {_task}-v5 on MJX (pip install jaxrl[mujoco]): {_what}, 1000 steps.",
        aliases=(_task,),
    )
    register(
        f"{_task}-brax",
        f"jaxrl.envs.mujoco:{_task.lower()}_brax",
        f"MuJoCo {_task} in Brax (pip install jaxrl[mujoco]): {_what}, 1000 steps.",
    )


def _register_atari() -> None:
    """Every single-player ALE game as ``ALE/<Game>-v5`` with aliases ``<Game>-v5`` and
    ``<Game>``. Needs ale-py (``pip install 'jaxrl[atari]'``), imported on first use."""
    from jaxrl.envs import atari

    for rom in atari.GAMES:
        game = atari.game_name(rom)
        register(
            f"ALE/{game}-v5",
            atari.factory(rom),
            f"Atari 2600 {game} (ale-py XLA vector env): uint8 [84, 84, 4] frames, "
            "sticky actions 0.25; needs jaxrl[atari]",
            aliases=(f"{game}-v5", game),
            family="atari",
        )


_register_atari()

# MinAtar (Young & Tian 2019) as its paper runs it (envs/minatar.py: pgx-minatar, sticky
# actions 0.1, difficulty ramping; backend gymnax as an option): extra jaxrl[minatar].
for _name, _attr, _what in (
    ("MinAtar-Breakout", "breakout", "bounce a ball to break bricks: Discrete(3)"),
    ("MinAtar-Asterix", "asterix", "collect gold, avoid enemies: Discrete(5)"),
    ("MinAtar-Freeway", "freeway", "cross a road of cars: Discrete(3)"),
    ("MinAtar-Seaquest", "seaquest", "shoot, rescue divers, surface for air: Discrete(6)"),
    ("MinAtar-SpaceInvaders", "space_invaders", "shoot aliens: Discrete(4)"),
):
    _gymnax_id = _name.removeprefix("MinAtar-") + "-MinAtar"
    register(
        _name,
        f"jaxrl.envs.minatar:{_attr}",
        f"MinAtar {_what}, obs [10, 10, C] float32 0/1, sticky actions 0.1, difficulty "
        "ramping (pgx-minatar; options sticky_action_prob, difficulty_ramping, backend "
        "pgx|gymnax; jaxrl[minatar]).",
        aliases=(_gymnax_id,),
        family="minatar",
    )

# Two-player turn-based board games through pgx (envs/games.py; extra jaxrl[games]).
register(
    "tic_tac_toe",
    "jaxrl.envs.games:tic_tac_toe",
    "Tic-tac-toe (pgx; jaxrl[games]): 2 players, turns, obs [3, 3, 2] + action_mask, "
    "Discrete(9); train with --self-play.",
    aliases=("TicTacToe",),
    family="games",
)
register(
    "connect_four",
    "jaxrl.envs.games:connect_four",
    "Connect Four (pgx; jaxrl[games]): 2 players, turns, obs [6, 7, 2] + action_mask, "
    "Discrete(7); train with --self-play.",
    aliases=("ConnectFour",),
    family="games",
)

# Cooperative multi-agent particle tasks through JaxMARL (envs/marl.py; extra jaxrl[marl]).
register(
    "mpe:simple_spread",
    "jaxrl.envs.marl:simple_spread",
    "MPE simple_spread (JaxMARL; jaxrl[marl]): 3 agents cover 3 landmarks, simultaneous "
    "moves, obs [18] per agent, Discrete(5), 25 steps; each agent an env of its own "
    "(parameter sharing; options local_ratio, max_steps).",
    aliases=("simple_spread",),
    family="games",
)
register(
    "hanabi",
    "jaxrl.envs.marl:hanabi",
    "Hanabi (JaxMARL; jaxrl[marl]): cooperative, 2 players (option num_players 2-5), turns, "
    "obs [658] + action_mask, Discrete(21), return = score (0-25); train with --self-play.",
    family="games",
)
