"""The contracts every part of jaxrl is written against (``docs/concepts/contracts.md``).

* ``EnvSpec`` / ``Discrete`` / ``Box``: static, hashable descriptions of an environment;
  ``EnvSpec.players`` (empty unless a turn-based game's players differ) gives each player
  its own spec, read through ``player_spec`` and ``player_view``.
* ``TimeStep``: what a vectorized, auto-resetting environment returns from ``reset`` and ``step``.
* ``Env``: a NamedTuple of pure functions ``reset`` and ``step`` plus its ``spec``.
* ``Transition``: one step of experience, batched with leading axes ``[T, num_envs]``.
* ``Agent``: a NamedTuple of pure functions ``init``, ``act``, ``update`` and ``init_carry``
  (typed by the protocols ``InitFn``, ``ActFn``, ``UpdateFn``, ``InitCarryFn``, generic in
  the agent's state type), and ``split_update``: a ``SplitUpdate`` for an agent whose
  update splits into a gradient and its application (A3C), else None.
* ``ConfigError``: a user's mistake (unknown name, bad override, mismatch). The CLI turns it
  into one line on stderr and exit code 2.

The design behind them (pytree observations and masks, the per-env carry, players,
members and shared fields, device layout) is in ``docs/concepts/``: ``contracts.md``,
``observations.md``, ``carry.md``, ``players.md``, ``members.md``, ``devices.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, cast

import jax
import jax.numpy as jnp

Array = jax.Array
PRNGKey = jax.Array
PyTree = Any  # a pytree of arrays (nested tuples, dicts, dataclasses)
Params = Any
AgentState = Any  # a flax.struct.dataclass holding arrays only
EnvState = Any  # a pytree of arrays
Metrics = dict[str, Array]
# A Python float or a jax array (a hyperparameter, maybe swept): arithmetic with arrays
# stays an Array, which jax.typing.ArrayLike (NumPy arrays, complex numbers) does not.
FloatOrArray = float | Array
Extras = dict[str, PyTree]  # what ``act`` returns beside the action, for the learner

# The type variables of the generic contracts: an agent's state, an env's state, a split
# update's gradient (``_co``: only returned, ``_contra``: only taken).
StateT = TypeVar("StateT")
if TYPE_CHECKING:
    # The array type of a TimeStep's or Transition's fields: jax.Array unless said
    # otherwise (TimeStep[np.ndarray] from a host env). A default needs PEP 696's TypeVar,
    # in typing from Python 3.13; the type checker reads typing_extensions' (run time
    # does not need the default).
    from typing_extensions import TypeVar as TypeVarWithDefault

    ArrayT = TypeVarWithDefault("ArrayT", covariant=True, default=jax.Array)
else:
    ArrayT = TypeVar("ArrayT", covariant=True)
_S_co = TypeVar("_S_co", covariant=True)
_S_contra = TypeVar("_S_contra", contravariant=True)
EnvStateT = TypeVar("EnvStateT")


class ConfigError(ValueError):
    """A user's mistake: the message is one line naming what is wrong and what is valid."""


@dataclasses.dataclass(frozen=True)
class Discrete:
    """A discrete action space ``{0, ..., n - 1}``; actions are int32 scalars per env."""

    n: int

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def dtype(self) -> str:
        return "int32"


@dataclasses.dataclass(frozen=True)
class Box:
    """A continuous space of float32 arrays of ``shape`` bounded elementwise by low/high.

    ``low`` and ``high`` are flat tuples with one entry per element (row-major), so the
    spec stays hashable and can be a static argument under ``jit``.
    """

    shape: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    @property
    def dtype(self) -> str:
        return "float32"


Space = Discrete | Box
Obs = Any  # an array [N, *obs_shape], or a dict {"obs": array, name: array, ...}
Carry = Any  # a pytree whose leaves have a leading [num_envs] axis; () when stateless

OBS = "obs"
ACTION_MASK = "action_mask"


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """Shape (without the ``num_envs`` axis) and numpy dtype name of one observation entry."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of a vectorized environment.

    Attributes:
      name: canonical environment id, e.g. ``"CartPole-v1"``.
      obs_shape: shape of one main observation (without the ``num_envs`` axis): what
        networks see.
      obs_dtype: numpy dtype name of the main observation (``"float32"``, ``"uint8"``).
      action_space: ``Discrete`` or ``Box``.
      num_envs: number of environments stepped in lock-step.
      max_episode_steps: the time limit after which an episode is truncated.
      obs_extras: further observation entries; when not empty, observations are dicts
        ``{"obs": main, spec.name: ...}`` (``ACTION_MASK``: bool ``(num_actions,)``).
      num_players: players of the game (1: a single-agent env).
      turn_based: players move one at a time (``info["current_player"]``), else all act
        at every step.
      players: a turn-based game whose players differ: each player's own spec
        (``num_players`` 1: its observation and action space); observations are then a
        tuple, entry ``p`` player ``p``'s view ``[N, ...]`` (``player_view``), whose
        action mask is empty when ``p`` is not to move. Empty: every player has this spec.
    """

    name: str
    obs_shape: tuple[int, ...]
    obs_dtype: str
    action_space: Space
    num_envs: int
    max_episode_steps: int
    obs_extras: tuple[ArraySpec, ...] = ()
    num_players: int = 1
    turn_based: bool = False
    players: tuple[EnvSpec, ...] = ()

    @property
    def obs_spec(self) -> Any:
        """The observation's pytree of ``jax.ShapeDtypeStruct`` without the ``num_envs``
        axis: one struct, or a dict of them keyed ``"obs"`` and each extra's name."""
        main = jax.ShapeDtypeStruct(self.obs_shape, jnp.dtype(self.obs_dtype))
        if not self.obs_extras:
            return main
        extras = {
            e.name: jax.ShapeDtypeStruct(e.shape, jnp.dtype(e.dtype)) for e in self.obs_extras
        }
        return {OBS: main, **extras}

    @property
    def has_action_mask(self) -> bool:
        return any(e.name == ACTION_MASK for e in self.obs_extras)


def player_spec(spec: EnvSpec, player: int) -> EnvSpec:
    """The spec an agent of ``player`` is built for: ``spec.players[player]`` in a game of
    players that differ, else ``spec``."""
    return spec.players[player] if spec.players else spec


def player_view(spec: EnvSpec, obs: Any, player: int) -> Any:
    """What ``player`` sees of ``obs``: entry ``player`` of a game of players that differ
    (``EnvSpec.players``), else ``obs``."""
    return obs[player] if spec.players else obs


def batched_spec(spec: Any, *leading: int) -> Any:
    """``spec`` (a pytree of ``jax.ShapeDtypeStruct``, e.g. ``EnvSpec.obs_spec``) with the
    axes ``leading`` put in front of every leaf."""
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct((*leading, *s.shape), s.dtype), spec)


def num_actions(spec: EnvSpec) -> int:
    """The number of actions of ``spec``'s action space, for an agent that has checked
    that it is ``Discrete``."""
    return cast(Discrete, spec.action_space).n


def main_obs(obs: Obs) -> Array:
    """The array networks see: ``obs`` itself, or ``obs["obs"]`` of a dict observation."""
    return obs[OBS] if isinstance(obs, dict) else obs


def action_mask(obs: Obs) -> Array | None:
    """The legal-action mask ``[..., num_actions]`` bool of ``obs``, or None if it has none."""
    return obs.get(ACTION_MASK) if isinstance(obs, dict) else None


def masked_argmax(values: Array, mask: Array | None) -> Array:
    """``argmax`` over the last axis among legal actions (``mask`` True); plain argmax when
    ``mask`` is None. ``values`` ``[..., A]`` float, ``mask`` ``[..., A]`` bool with at
    least one legal action per row; returns int32 ``[...]``."""
    if mask is not None:
        values = jnp.where(mask, values, -jnp.inf)
    return jnp.argmax(values, axis=-1).astype(jnp.int32)


def no_carry(num_envs: int) -> Carry:
    """The carry of an agent that keeps nothing between steps."""
    return ()


def reset_carry(carry: Carry, initial: Carry, done: Array) -> Carry:
    """``carry`` with each env where ``done`` (``[N]`` bool) set back to ``initial``."""

    def reset(c: Array, c0: Array) -> Array:
        return jnp.where(done.reshape(done.shape + (1,) * (c.ndim - 1)), c0, c)

    return jax.tree.map(reset, carry, initial)


SHARED = "shared_by_members"


if TYPE_CHECKING:
    # A type checker takes only the field specifiers that flax.struct.dataclass declares
    # (dataclass_transform) for fields; any other call on the right of a field is a
    # default value to it (and a field without one may then not follow). So it sees
    # flax's ``field`` here, which ``shared_field()`` is to it: a field without a default.
    from flax.struct import field as shared_field
else:

    def shared_field() -> Any:
        """A state field whose value every member of a vmapped seed or sweep run shares:
        an int32 counter that only grows by constants (env steps given to ``update``, rows
        written to a buffer). ``member_axes`` maps it to ``None``, so ``experiment.sweep``
        keeps it unbatched and a ``lax.cond`` on it (whether to learn, a target update)
        stays a real branch under ``vmap`` instead of becoming a select that runs both
        sides."""
        return dataclasses.field(metadata={SHARED: True})


def member_axes(tree: Any) -> Any:
    """The ``vmap`` axes of a batched ``tree`` over members: ``None`` for every
    ``shared_field`` of a dataclass node (at any depth), ``0`` for every other leaf."""
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        changes = {
            f.name: None if f.metadata.get(SHARED) else member_axes(getattr(tree, f.name))
            for f in dataclasses.fields(tree)
            if f.metadata.get("pytree_node", True)
        }
        return dataclasses.replace(tree, **changes)
    if not jax.tree.leaves(tree):
        return tree  # None, (), an optimizer's EmptyState: nothing to map
    if jax.tree_util.treedef_is_leaf(jax.tree.structure(tree)):
        return 0
    nested = lambda x: x is not tree and dataclasses.is_dataclass(x)
    children, treedef = jax.tree.flatten(tree, is_leaf=nested)
    return jax.tree.unflatten(treedef, [member_axes(c) for c in children])


def take_member(tree: Any, index: int) -> Any:
    """Member ``index`` of a batched ``tree``: its batched leaves indexed, shared ones kept."""
    axes = member_axes(tree)
    return jax.tree.map(
        lambda axis, x: x if axis is None else x[index], axes, tree, is_leaf=lambda a: a is None
    )


class TimeStep(NamedTuple, Generic[ArrayT]):
    """Output of ``Env.reset`` and ``Env.step``; every field has a leading ``num_envs`` axis.
    Its arrays are ``jax.Array``s (``TimeStep[np.ndarray]`` from a host env).

    Attributes:
      obs: ``[N, *obs_shape]`` (or a dict of such, see ``EnvSpec.obs_spec``); after an
        episode end, already the next episode's first obs.
      reward: ``[N]`` float32, the reward of the step just taken (0 after reset);
        ``[N, num_players]`` for a game of several players.
      terminated: ``[N]`` bool, the episode reached a terminal state (do not bootstrap).
      truncated: ``[N]`` bool, the episode was cut by a time limit (bootstrap from
        ``info["final_obs"]``). Never both true.
      info: dict with at least
        ``final_obs`` (same pytree as ``obs``): the true observation after the step (equal
        to ``obs`` unless the episode ended),
        ``episode_return`` ``[N]`` float32: raw return of the episode that just ended
        (meaningful where ``terminated | truncated``),
        ``episode_length`` ``[N]`` int32: its length in agent steps;
        and optionally ``episode_done`` ``[N]`` bool: where the two above are meaningful,
        when that differs from ``terminated | truncated`` (Atari's ``episodic_life``
        terminates at every lost life but reports the whole game's score at its end);
        ``current_player`` ``[N]`` int32 in turn-based games.
    """

    obs: Obs
    reward: ArrayT
    terminated: ArrayT
    truncated: ArrayT
    info: dict[str, PyTree]


class Env(NamedTuple, Generic[EnvStateT]):
    """A vectorized, functional, auto-resetting environment, generic in its state type.

    ``reset(key) -> (env_state, timestep)`` and
    ``step(env_state, action [N, ...], key) -> (env_state, timestep)`` are pure and jittable.
    """

    spec: EnvSpec
    reset: Callable[[PRNGKey], tuple[EnvStateT, TimeStep]]
    step: Callable[[EnvStateT, Array, PRNGKey], tuple[EnvStateT, TimeStep]]
    # False where the env state refers to resources of this process (ale-py's emulators):
    # such a state cannot be checkpointed and restored, so a resume restarts the env.
    state_is_portable: bool = True
    # False where ``reset``/``step`` cannot be vmapped over the members of a run
    # (``--seeds``, ``--sweep``): PettingZoo's games, one ordered host callback per step.
    vmappable: bool = True
    # True only for an env stepped from Python by ``runners/host.py`` (``HostEnv``).
    host_loop: bool = False


class Transition(NamedTuple, Generic[ArrayT]):
    """Experience with leading axes ``[T, num_envs]`` (or ``[batch, ...]`` when sampled).
    Its arrays are ``jax.Array``s; ``Transition[np.ndarray]`` holds NumPy arrays on the
    host (demonstrations), ``Transition[jax.ShapeDtypeStruct]`` an example's shapes.

    ``next_obs`` is the true next observation (``TimeStep.info["final_obs"]``), so a
    truncated step bootstraps from the real last state. ``obs`` and ``next_obs`` are
    observation pytrees (a dict carries ``next_obs["action_mask"]``, the legal actions to
    bootstrap from). ``extras`` carries what ``act`` returned for the learner (log-probs,
    values, a recurrent agent's carry); it may be empty.
    """

    obs: Obs
    action: ArrayT
    reward: ArrayT
    next_obs: Obs
    terminated: ArrayT
    truncated: ArrayT
    extras: Extras


class InitFn(Protocol[_S_co]):
    """``init(key) -> state``: an agent's initial state."""

    def __call__(self, key: PRNGKey, /) -> _S_co: ...


class ActFn(Protocol[_S_contra]):
    """``act(state, obs [N, ...], carry, key, explore) -> (action [N, ...], carry, extras)``;
    ``explore`` is static (True while training, False for greedy evaluation); ``carry``
    is the per-env state kept between steps (module docstring)."""

    def __call__(
        self, state: _S_contra, obs: Obs, carry: Carry, key: PRNGKey, explore: bool, /
    ) -> tuple[Array, Carry, Extras]: ...


class UpdateFn(Protocol[StateT]):
    """``update(state, rollout: Transition [T, N, ...], key) -> (state, metrics)``; metrics
    are float32 scalars, NaN where a quantity was not computed this call."""

    def __call__(
        self, state: StateT, rollout: Transition, key: PRNGKey, /
    ) -> tuple[StateT, Metrics]: ...


class InitCarryFn(Protocol):
    """``init_carry(num_envs) -> carry``, the carry at an episode's start (``()`` for an
    agent that keeps nothing between steps)."""

    def __call__(self, num_envs: int, /) -> Carry: ...


class Gradient(Protocol):
    """What a split update's ``gradient`` returns: anything (a pytree for ``apply``) that
    carries the metrics of the rollout it came from."""

    @property
    def metrics(self) -> Metrics: ...


GradientT = TypeVar("GradientT", bound=Gradient)
_G_co = TypeVar("_G_co", bound=Gradient, covariant=True)
_G_contra = TypeVar("_G_contra", bound=Gradient, contravariant=True)


class GradientFn(Protocol[_S_contra, _G_co]):
    """``gradient(state, rollout, key) -> gradient``, with no change of state."""

    def __call__(self, state: _S_contra, rollout: Transition, key: PRNGKey, /) -> _G_co: ...


class ApplyFn(Protocol[StateT, _G_contra]):
    """``apply(state, gradient) -> state``: a gradient applied to (possibly newer) state."""

    def __call__(self, state: StateT, gradient: _G_contra, /) -> StateT: ...


class SplitUpdate(NamedTuple, Generic[StateT, GradientT]):
    """An update split in two, as an agent declares it (``Agent.split_update``):
    ``update(state, rollout, key)`` is ``(apply(state, gradient(state, rollout, key)),
    metrics)``, so workers can compute gradients on stale states and apply them to the
    newest one (module docstring)."""

    gradient: GradientFn[StateT, GradientT]
    apply: ApplyFn[StateT, GradientT]


class Agent(NamedTuple, Generic[StateT]):
    """An agent as pure functions over an immutable state pytree of type ``StateT``.

    init:   ``(key) -> state`` (``InitFn``).
    act:    ``(state, obs [N, ...], carry, key, explore: bool) -> (action [N, ...], carry,
            extras)`` (``ActFn``); ``explore`` is static (True while training, False for
            greedy evaluation); ``carry`` is the per-env state kept between steps (module
            docstring).
    update: ``(state, rollout: Transition [T, N, ...], key) -> (state, metrics)``
            (``UpdateFn``); metrics are float32 scalars, NaN where a quantity was not
            computed this call.
    init_carry: ``(num_envs) -> carry``, the carry at an episode's start (``()`` for an
            agent that keeps nothing between steps).
    split_update: ``SplitUpdate(gradient, apply)`` of an agent whose update splits in two
            (A3C; module docstring), else None.
    """

    init: InitFn[StateT]
    act: ActFn[StateT]
    update: UpdateFn[StateT]
    init_carry: InitCarryFn = no_carry
    split_update: SplitUpdate[StateT, Any] | None = None
