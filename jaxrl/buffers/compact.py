"""Compact replay for (stacked) image observations: each frame is stored once.

An Atari agent sees a stack of the last ``S`` frames (``S = 4``) and learns from
n-step transitions ``(s_t, a_t, r_t .. r_{t+n-1}, s_{t+n})``. Storing every transition's
stacked ``obs`` and ``next_obs`` keeps each frame ``2 S`` times; this buffer keeps it
once, like Dopamine's ``OutOfGraphReplayBuffer`` and RLHive's ``CircularReplayBuffer``,
and assembles stacks and n-step windows when it samples. As pure functions over a
pytree of fixed-size arrays it lives inside an agent's state and works under
``jax.jit``, ``jax.lax.scan`` and ``jax.vmap`` (one buffer per seed of a sweep).

Memory layout
-------------
As in :mod:`jaxrl.buffers.replay`, storage is time-major per environment: with
``L = capacity // num_envs`` rows, row ``i`` holds one step of all ``N`` environments,
rows form a ring, ``position`` is the next row to write and ``size`` the number written
(``<= L``); the oldest row is ``(position - size) mod L``. Per row and env it stores

* ``frames``: the newest frame of the observation, its last entry along ``stack_axis``
  (``obs[..., -1]``, so ``[L, N, H, W]`` for ``[H, W, S]`` observations), or the whole
  observation when ``stack = 0``;
* ``action``, ``reward`` (float32), ``terminated`` and ``truncated`` (bool, kept apart);
* each declared extra (``extras={"name": (shape, dtype)}``, as RLHive's
  ``extra_storage_types``), taken from ``Transition.extras`` of the added rollout;
* for a dict observation ``{"obs": main, name: ...}`` (declared by ``obs_extras``), each
  entry other than the main one, whole per step (an action mask ``[N, A]`` is not
  stacked); the main entry is the frame-stacked one stored one frame per step;
* a sum tree (:mod:`jaxrl.buffers.sum_tree`) over the ``L N`` items ``row * N + env``
  holding the sampling weight of every item: positive iff the item is valid (see
  *Validity*), 0 otherwise. The tree is the only record of validity.

``next_obs`` is not stored: the next observation of row ``i`` is row ``i + 1``. A
1,000,000-transition Atari buffer (84x84 uint8 frames, S = 4, any ``N``) takes
7,071,129,304 bytes (~7.07 GB), of which 7.056 GB are frames and 4.1 MB the tree;
storing stacked ``obs`` and ``next_obs`` per transition takes ~56.4 GB.

Frame stacks
------------
The observation of row ``t`` is rebuilt from the frames of rows ``t-S+1 .. t`` (newest
last along ``stack_axis``). A row whose step ended an episode (``terminated`` or
``truncated``) is followed by the first row of the next episode, so frames from rows
before the start of ``t``'s episode are replaced: by zeros (``stack_padding="zero"``,
as Dopamine and Stable-Baselines3's ``VecFrameStack``) or by the episode's first frame
(``stack_padding="repeat"``, as envpool, ale-py's vector env and gymnasium's
``FrameStackObservation``). Pick the one the environment uses, so that the rebuilt
stack equals the observation the agent acted on. The ``next_obs`` of a step that ended
an episode is all zeros: its true final observation is not stored (see *Validity*).

Validity
--------
The item ``(t, e)`` (storage row ``t``, env ``e``) is the start of an n-step window of
rows ``t .. t+n-1`` (``n = window``). It is *valid*, i.e. sampleable, iff

1. **stored, behind the head**: rows ``t .. t+n`` (the window and the row after it, the
   bootstrap observation) are all written rows, in order from the oldest row to
   ``position - 1``; so a window never crosses the write head, and the newest ``n``
   rows are not sampleable until more rows arrive;
2. **no missing final observation**: walking ``k = 0 .. n-1``, the first row ``t+k``
   that ended an episode, if any, is not a truncation. After a *termination* the window
   is cut there (no bootstrap; later rows are ignored by
   :func:`jaxrl.ops.n_step_bootstrap`). After a *truncation* the target would
   bootstrap from the true last observation, which is not stored (the next row holds
   the next episode's first observation), so such a start is **invalid** and never
   sampled; like Dopamine, which never samples a transition whose next state is not in
   the buffer. The last ``n`` steps before each time limit are thus excluded; every
   sampled target is correct. (A step with both flags set counts as terminated.)
3. **stack stored**: every earlier row whose frame the stack of ``t`` uses (rows
   ``t-1, t-2, .. t-S+1`` back to the start of ``t``'s episode) is a stored row. The
   flags of rows older than the oldest stored row are unknown (their slots hold newer
   data, or nothing yet), so the start of ``t``'s episode must be *seen*: ``t`` is at
   least ``S - 1`` rows after the oldest row, or one of the stored rows
   ``oldest .. t-1`` ended an episode. Hence the first ``S - 1`` rows ever written, and
   after wrap-around the ``S - 1`` oldest rows unless an episode starts within them,
   are not sampleable (conservative: the very first row is usually a reset, but the
   buffer cannot know). Stacks of later steps of the window use a subset of these rows.

So for every sampled window, ``obs`` and ``next_obs`` are true states until the first
episode end, and ``next_obs[bootstrap_index]`` of :func:`jaxrl.ops.n_step_bootstrap` is
the true state to bootstrap from (or irrelevant after a termination).

Sampling weights
----------------
``mode="uniform"``: every valid item has weight 1. ``mode="prioritized"`` (Schaul et al.
2016, "Prioritized Experience Replay", ICLR): weights are ``p^alpha``; an item that
becomes valid with new data gets the running maximum priority ``max_p^alpha``
(``max_p`` starts at 1), and ``update_priorities`` sets ``(|p| + eps)^alpha`` on
items that are still valid, never on invalid ones. Invalid items always weigh 0; a valid
item weighs at least the smallest normal float32 (~1.2e-38, so that "weight > 0" still
means "valid" when ``eps = 0`` and a priority is 0: such an item is practically never
drawn, but stays in the count of valid items).

The buffer's functions
----------------------
``make_compact_replay`` returns a ``ReplayBuffer`` (:mod:`jaxrl.buffers.base`):


* ``init(example=None)``: allocates zeroed storage, an all-zero tree, ``position =
  size = num_items = 0``, ``max_priority = 1``. ``example`` (a ``Transition`` of one
  step, leaves ``[N, ...]``, arrays or ``ShapeDtypeStruct``s) is optional; if given,
  its ``obs`` and ``action`` shapes are checked against the declared ones.
* ``add(state, rollout, priority=None)``: ``rollout`` is a ``Transition`` with leaves
  ``[T, N, ...]``, static ``1 <= T <= L``; stores ``obs`` (its newest frame), ``action``,
  ``reward``, ``terminated``, ``truncated`` and the declared extras at rows
  ``(position + t) mod L`` (cast to the stored dtypes), ignores ``next_obs``,
  advances ``position``/``size`` as :func:`jaxrl.buffers.replay.make_uniform_replay`
  does, and re-evaluates validity and weights of the affected items only. Rows
  must be added in the order the environment produced them.
* ``sample(state, key)``: ``B`` items drawn with probability proportional to their
  weight (stratified, :func:`jaxrl.buffers.sum_tree.sample`), gathered as below.
  Only meaningful when ``can_sample(state)``; otherwise it returns zeros/garbage
  rather than failing.
* ``can_sample(state)``: ``num_items(state) > 0``.
* ``update_priorities(state, indices, priorities, priority=None)``: prioritized
  mode: weight ``(|p| + eps) ** alpha`` for the items ``indices`` (``[K]``, as in
  ``ReplaySample.indices``) that are valid now; invalid items keep weight 0; with
  duplicates the last one wins; ``max_priority`` grows to the largest ``|p| + eps``
  applied. Uniform mode: returns ``state`` unchanged. Call it before the next
  ``add`` (which may overwrite the sampled items).
* ``num_items(state)``: int32, the number of valid items.
* ``gather(state, time_index, env_index)``: ``Transition`` with leaves ``[B, n,
  ...]``; for ``j < n``, entry ``j`` is the step stored at row ``r_j = (t + j) mod
  L``: ``obs`` is the stack of rows ``r_j - S + 1 .. r_j`` (padded before the
  episode start), ``action``, ``reward``, ``terminated``, ``truncated``, ``extras``
  are stored values, and ``next_obs`` is the stack of rows ``r_j - S + 2 ..
  r_j + 1`` (padded before that row's episode start), except that it is all zeros
  when step ``j`` ended an episode (the true final observation is not stored).
  Steps after an episode end within the window belong to the next episode (cut
  them with the flags, e.g. :func:`jaxrl.ops.n_step_bootstrap`). Meaningful for
  valid items; for others it returns whatever the slots hold.

Cost
----
``add`` of ``T`` rows writes ``T N`` entries and re-evaluates validity for the
``K = min(T + n + S - 1, L)`` rows ``position - n .. position + T + S - 2`` (the new
rows, the ``n`` rows before the head whose windows may have completed, and the ``S - 1``
rows after it, the new oldest rows, whose stacks may now reach overwritten rows): ``K N``
items, ``O(K N (n + S))`` flags read and ``O(K N log(L N))`` tree work. ``sample`` draws
``B`` leaves (``O(B log(L N))``) and gathers ``B (n + S)`` frames. Nothing is
``O(capacity)``: inside ``jit``/``scan`` (or with the state donated) every write is in
place; a test checks that the compiled ``add`` and ``update_priorities`` copy no
capacity-sized array.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.buffers import sum_tree
from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample, require_priority
from jaxrl.buffers.prioritized import write_priorities
from jaxrl.buffers.validity import compact_valid
from jaxrl.types import OBS, Obs, Transition, main_obs, shared_field
from jaxrl.validation import check_int

Array = jax.Array

_MODES = ("uniform", "prioritized")
_PADDINGS = ("zero", "repeat")
# The least weight of a valid item, so that "weight > 0" is "valid" even at priority 0.
_MIN_WEIGHT = float(np.finfo(np.float32).tiny)


@flax.struct.dataclass
class CompactReplayState:
    """State of a compact replay buffer; a pytree of arrays only.

    Attributes:
      frames: ``[L, N, *frame_shape]``, the newest frame of each stored observation
        (``frame_shape`` is ``obs_shape`` without the stack axis), or ``[L, N,
        *obs_shape]`` when ``stack = 0``.
      action: ``[L, N, *action_shape]``.
      reward: ``[L, N]`` float32.
      terminated: ``[L, N]`` bool.
      truncated: ``[L, N]`` bool.
      extras: dict name -> ``[L, N, *shape]`` of the declared extras.
      obs_extras: dict name -> ``[L, N, *shape]`` of the declared observation entries
        besides the main one (empty for array observations).
      tree: ``SumTree`` over the ``L * N`` items ``row * N + env``; leaf = sampling
        weight, positive iff the item is valid.
      position: int32 scalar, the next row to write, in ``[0, L)``.
      size: int32 scalar, the number of rows written, capped at ``L``.
      num_items: int32 scalar, the number of valid items (leaves > 0).
      max_priority: float32 scalar, the largest priority ``|p| + eps`` set so far
        (starts at 1); new items get weight ``max_priority ** alpha`` (``alpha`` and
        ``eps`` are arguments, ``PriorityParams``, not state).
    """

    frames: Array
    action: Array
    reward: Array
    terminated: Array
    truncated: Array
    extras: dict[str, Array]
    obs_extras: dict[str, Array]
    tree: sum_tree.SumTree
    position: Array = shared_field()
    size: Array = shared_field()
    num_items: Array
    max_priority: Array


def _shape(name: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, tuple | list) or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        raise ValueError(f"{name} must be a tuple of non-negative ints, got {value!r}")
    return tuple(int(d) for d in value)


def _dtype(name: str, value: Any) -> np.dtype:
    try:
        return np.dtype(value)
    except TypeError as err:
        raise ValueError(f"{name} must be a dtype, got {value!r}") from err


def _parse_extras(extras: Mapping[str, Any] | None) -> dict[str, tuple[tuple[int, ...], Any]]:
    """``{name: (shape, dtype)}``; RLHive's order ``(dtype, shape)`` is accepted too."""
    if extras is None:
        return {}
    if not isinstance(extras, Mapping):
        raise ValueError(f"extras must be a dict name -> (shape, dtype), got {extras!r}")
    out = {}
    for name, spec in extras.items():
        if not isinstance(name, str) or not isinstance(spec, tuple | list) or len(spec) != 2:
            raise ValueError(
                f"extras must map a str name to (shape, dtype), got {name!r}: {spec!r}"
            )
        first, second = spec
        if isinstance(first, tuple | list | int) and not isinstance(first, bool):
            shape, dtype = first, second
        else:  # RLHive's extra_storage_types order: (dtype, shape)
            dtype, shape = first, second
        out[name] = (_shape(f"shape of extra {name!r}", shape), _dtype(f"extra {name!r}", dtype))
    return out


def make_compact_replay(
    capacity: int,
    num_envs: int,
    batch_size: int,
    obs_shape: tuple[int, ...],
    obs_dtype: Any = "uint8",
    window: int = 1,
    stack: int = 4,
    extras: Mapping[str, Any] | None = None,
    mode: str = "uniform",
    *,
    obs_extras: Mapping[str, Any] | None = None,
    action_shape: tuple[int, ...] = (),
    action_dtype: Any = "int32",
    stack_axis: int = -1,
    stack_padding: str = "zero",
    branching: int = 8,
) -> ReplayBuffer[CompactReplayState]:
    """Build a compact replay buffer of ``window``-step windows (see the module docstring).

    Args:
      capacity: number of transitions kept, rounded down to a multiple of ``num_envs``
        (``L = capacity // num_envs`` rows); ``L >= window + max(stack, 1)``.
      num_envs: ``N``, the number of environments in each added step.
      batch_size: ``B``, the number of windows per ``sample``.
      obs_shape: the shape of one environment's observation as the env emits it, e.g.
        ``(84, 84, 4)``; with ``stack >= 1`` its ``stack_axis`` has length ``stack``.
      obs_dtype: dtype of stored observations (``uint8`` for Atari frames).
      window: ``n``, the number of consecutive steps per sampled window (n-step returns;
        1 for one-step transitions).
      stack: ``S``, the number of frames stacked along ``stack_axis`` of the observation,
        newest last; only the newest frame of each step is stored. ``0``: observations
        are not stacked and are stored whole (e.g. vector observations).
      extras: ``{name: (shape, dtype)}`` of extra per-step fields to store (as RLHive's
        ``extra_storage_types``; its ``(dtype, shape)`` order is accepted too), read from
        ``rollout.extras[name]`` in ``add`` and returned in ``experience.extras``.
        Undeclared keys of ``rollout.extras`` are ignored.
      mode: ``"uniform"`` or ``"prioritized"``.
      obs_extras: ``{name: (shape, dtype)}`` of the entries of a dict observation
        ``{"obs": main, name: ...}`` besides the main one (e.g. ``"action_mask"``), each
        stored whole per step; None for array observations.
      action_shape: shape of one env's action (``()`` for discrete actions).
      action_dtype: dtype of stored actions.
      stack_axis: the axis of ``obs_shape`` along which frames are stacked; ``-1``
        (channel-last, ``[H, W, S]``) or e.g. ``0`` (channel-first, ``[S, H, W]``).
      stack_padding: what the stack holds before an episode's first frame: ``"zero"``
        (zeros, Dopamine) or ``"repeat"`` (the first frame repeated, envpool/gymnasium).
      branching: the sum tree's branching factor, a power of two ``>= 2`` (see
        :mod:`jaxrl.buffers.sum_tree`).

    Returns:
      A ``ReplayBuffer`` (:mod:`jaxrl.buffers.base`) whose functions the module
      docstring describes (*The buffer's functions*); ``priority`` is a
      ``PriorityParams(alpha, eps)``, needed in prioritized mode.

    Raises:
      ValueError: on bad arguments (one line naming the argument); from ``init``/``add``
        at trace time on shapes that do not match the declared ones.
    """
    layout = _layout(
        capacity, num_envs, batch_size, obs_shape, obs_dtype, window, stack, extras, mode,
        obs_extras, action_shape, action_dtype, stack_axis, stack_padding, branching,
    )  # fmt: skip
    return ReplayBuffer(
        init=functools.partial(_init, layout),
        add=functools.partial(_add, layout),
        sample=functools.partial(_sample, layout),
        can_sample=_can_sample,
        update_priorities=functools.partial(_update_priorities, layout),
        num_items=_num_items,
        gather=functools.partial(_gather, layout),
    )


class _Layout(NamedTuple):
    """The static shape of a compact buffer (hashable, so a closure over it is static)."""

    num_rows: int  # L
    num_envs: int  # N
    batch_size: int  # B
    window: int  # n
    stack: int  # 0: not stacked
    rows_per_obs: int  # S = max(stack, 1)
    axis: int  # the stack axis of obs_shape, non-negative
    obs_shape: tuple[int, ...]
    frame_shape: tuple[int, ...]
    obs_dtype: np.dtype
    action_shape: tuple[int, ...]
    action_dtype: np.dtype
    extra_specs: tuple[tuple[str, tuple[tuple[int, ...], np.dtype]], ...]
    obs_extra_specs: tuple[tuple[str, tuple[tuple[int, ...], np.dtype]], ...]
    stack_padding: str
    branching: int
    prioritized: bool


def _layout(
    capacity: int,
    num_envs: int,
    batch_size: int,
    obs_shape: tuple[int, ...],
    obs_dtype: Any,
    window: int,
    stack: int,
    extras: Mapping[str, Any] | None,
    mode: str,
    obs_extras: Mapping[str, Any] | None,
    action_shape: tuple[int, ...],
    action_dtype: Any,
    stack_axis: int,
    stack_padding: str,
    branching: int,
) -> _Layout:
    """The checked arguments of :func:`make_compact_replay` (ValueError naming a bad one)."""
    capacity = check_int("capacity", capacity)
    num_envs = check_int("num_envs", num_envs)
    batch_size = check_int("batch_size", batch_size)
    window = check_int("window", window)
    stack = check_int("stack", stack, minimum=0)
    obs_shape = _shape("obs_shape", obs_shape)
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    if stack_padding not in _PADDINGS:
        raise ValueError(f"stack_padding must be one of {_PADDINGS}, got {stack_padding!r}")
    if (
        isinstance(branching, bool)
        or not isinstance(branching, int)
        or branching < 2
        or (branching & (branching - 1))
    ):
        raise ValueError(f"branching must be a power of two >= 2, got {branching!r}")
    if stack >= 1:
        if not isinstance(stack_axis, int) or not -len(obs_shape) <= stack_axis < len(obs_shape):
            raise ValueError(
                f"stack_axis must be an axis of obs_shape {obs_shape}, got {stack_axis!r}"
            )
        axis = stack_axis % len(obs_shape)
        if obs_shape[axis] != stack:
            raise ValueError(
                f"obs_shape {obs_shape} must have length stack={stack} along stack_axis="
                f"{stack_axis} (use stack=0 for observations that are not stacked)"
            )
        frame_shape = obs_shape[:axis] + obs_shape[axis + 1 :]
    else:
        axis = 0
        frame_shape = obs_shape
    rows_per_obs = max(stack, 1)
    num_rows = capacity // num_envs
    if num_rows < window + rows_per_obs:
        raise ValueError(
            f"capacity // num_envs = {num_rows} rows must be >= window + max(stack, 1) = "
            f"{window + rows_per_obs} (capacity {capacity}, num_envs {num_envs})"
        )
    return _Layout(
        num_rows=num_rows,
        num_envs=num_envs,
        batch_size=batch_size,
        window=window,
        stack=stack,
        rows_per_obs=rows_per_obs,
        axis=axis,
        obs_shape=obs_shape,
        frame_shape=frame_shape,
        obs_dtype=_dtype("obs_dtype", obs_dtype),
        action_shape=_shape("action_shape", action_shape),
        action_dtype=_dtype("action_dtype", action_dtype),
        extra_specs=tuple(_parse_extras(extras).items()),
        obs_extra_specs=tuple(_parse_extras(obs_extras).items()),
        stack_padding=stack_padding,
        branching=branching,
        prioritized=mode == "prioritized",
    )


def _init(layout: _Layout, example: Transition | None = None) -> CompactReplayState:
    L, N = layout.num_rows, layout.num_envs
    if example is not None:
        for name, want in (("obs", layout.obs_shape), ("action", layout.action_shape)):
            value = getattr(example, name)
            got = tuple((main_obs(value) if name == "obs" else value).shape)
            if got != (N, *want):
                raise ValueError(f"init: example.{name} must have shape {(N, *want)}, got {got}")
    return CompactReplayState(
        frames=jnp.zeros((L, N, *layout.frame_shape), layout.obs_dtype),
        action=jnp.zeros((L, N, *layout.action_shape), layout.action_dtype),
        reward=jnp.zeros((L, N), jnp.float32),
        terminated=jnp.zeros((L, N), bool),
        truncated=jnp.zeros((L, N), bool),
        extras={k: jnp.zeros((L, N, *s), d) for k, (s, d) in layout.extra_specs},
        obs_extras={k: jnp.zeros((L, N, *s), d) for k, (s, d) in layout.obs_extra_specs},
        tree=sum_tree.init(L * N, layout.branching),
        position=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
        num_items=jnp.zeros((), jnp.int32),
        max_priority=jnp.ones((), jnp.float32),
    )


def _write_rows(layout: _Layout, state: CompactReplayState, rollout: Transition):
    """``(state, T)``: ``rollout``'s steps written at rows ``position .. position + T - 1``
    (``position`` and ``size`` advanced); the tree is left for :func:`_add` to update."""
    L, N, stack, axis = layout.num_rows, layout.num_envs, layout.stack, layout.axis
    extra_specs, obs_extra_specs = dict(layout.extra_specs), dict(layout.obs_extra_specs)
    full_obs = rollout.obs
    if obs_extra_specs and not isinstance(full_obs, Mapping):
        raise ValueError(f"add expects dict observations with keys {sorted(obs_extra_specs)}")
    obs = jnp.asarray(main_obs(full_obs))
    T = obs.shape[0] if obs.ndim else 0
    if not 1 <= T <= L:
        raise ValueError(
            f"add expects leaves [T, N, ...] with 1 <= T <= L = {L}, got obs of shape {obs.shape}"
        )

    def check(name: str, value: Any, shape: tuple[int, ...]) -> Array:
        value = jnp.asarray(value)
        if value.shape != (T, N, *shape):
            raise ValueError(
                f"add expects {name} of shape {(T, N, *shape)} ([T, N, ...]), got {value.shape}"
            )
        return value

    obs = check("obs", obs, layout.obs_shape)
    newest = jnp.take(obs, stack - 1, axis=2 + axis) if stack >= 1 else obs
    rollout_extras = rollout.extras or {}
    missing = sorted(set(extra_specs) - set(rollout_extras))
    if missing:
        raise ValueError(
            f"add: rollout.extras lacks declared extras {missing} (has {sorted(rollout_extras)})"
        )
    p = state.position
    rows = (p + jnp.arange(T, dtype=jnp.int32)) % L

    def write(stored: Array, new: Array) -> Array:
        return stored.at[rows].set(
            new.astype(stored.dtype), unique_indices=True, mode="promise_in_bounds"
        )

    state = dataclasses.replace(
        state,
        frames=write(state.frames, newest),
        action=write(state.action, check("action", rollout.action, layout.action_shape)),
        reward=write(state.reward, check("reward", rollout.reward, ())),
        terminated=write(state.terminated, check("terminated", rollout.terminated, ())),
        truncated=write(state.truncated, check("truncated", rollout.truncated, ())),
        extras={
            k: write(v, check(f"extras[{k!r}]", rollout_extras[k], extra_specs[k][0]))
            for k, v in state.extras.items()
        },
        obs_extras={
            k: write(v, check(f"obs[{k!r}]", full_obs[k], obs_extra_specs[k][0]))
            for k, v in state.obs_extras.items()
        },
        position=((p + T) % L).astype(jnp.int32),
        size=jnp.minimum(state.size + T, L).astype(jnp.int32),
    )
    return state, T


def _add(
    layout: _Layout,
    state: CompactReplayState,
    rollout: Transition,
    priority: PriorityParams | None = None,
) -> CompactReplayState:
    L, N, n, S = layout.num_rows, layout.num_envs, layout.window, layout.rows_per_obs
    p = state.position
    state, T = _write_rows(layout, state, rollout)
    # Re-evaluate the items whose validity may have changed: rows p-n .. p+T+S-2
    # (all L rows when that is more), each exactly once.
    K = min(T + n + S - 1, L)
    krows = (p - n + jnp.arange(K, dtype=jnp.int32)) % L  # [K], distinct
    new_valid = compact_valid(
        state.terminated, state.truncated, state.position, state.size, krows, n, layout.stack
    )  # [K, N]
    items = (krows[:, None] * N + jnp.arange(N, dtype=jnp.int32)).reshape(-1)
    new_valid = new_valid.reshape(-1)
    old_weight = sum_tree.get(state.tree, items)
    old_valid = old_weight > 0
    if layout.prioritized:
        alpha = require_priority(priority, "add").alpha
        is_new_row = ((krows - p) % L < T)[:, None]
        keep = old_valid & ~jnp.broadcast_to(is_new_row, (K, N)).reshape(-1)
        fresh = jnp.maximum(state.max_priority**alpha, _MIN_WEIGHT)
        weight = jnp.where(keep, old_weight, fresh)
    else:
        # Valid leaves are all 1. Reading them (rather than writing a constant 1)
        # makes the update depend on the read, so XLA orders the read first and
        # updates the tree in place instead of copying it.
        weight = jnp.where(old_valid, old_weight, 1.0)
    weight = jnp.where(new_valid, weight, 0.0)
    num_items = state.num_items + jnp.sum(new_valid, dtype=jnp.int32)
    num_items -= jnp.sum(old_valid, dtype=jnp.int32)
    return dataclasses.replace(
        state,
        tree=sum_tree.update(state.tree, items, weight, assume_unique=True),
        num_items=num_items,
    )


def _stacks(layout: _Layout, frames: Array, ends_before: Array, first_row: int) -> Array:
    """``[B, n, S, *F]``: the frame stacks of the rows at positions ``first_row + j + S - 1``
    (``j < n``) of the gathered rows, padded before each stack's episode start."""
    n, S = layout.window, layout.rows_per_obs
    B = frames.shape[0]
    j = jnp.arange(n)[:, None]
    src = first_row + j + jnp.arange(S)[None, :]  # [n, S] frame positions
    cur = first_row + j + S - 1  # [n, 1] the stack's own row
    # A frame belongs to the stack's episode iff no episode ended in between.
    same = ends_before[:, cur] == ends_before[:, src]  # [B, n, S]
    if layout.stack_padding == "repeat":
        first = cur - jnp.sum(same, axis=-1, keepdims=True) + 1  # episode's first
        src = jnp.maximum(src[None], first)  # [B, n, S]
        return frames[jnp.arange(B)[:, None, None], src]
    out = frames[:, src]
    mask = same.reshape(same.shape + (1,) * len(layout.frame_shape))
    return jnp.where(mask, out, jnp.zeros((), out.dtype))


def _gather(
    layout: _Layout, state: CompactReplayState, time_index: Any, env_index: Any
) -> Transition:
    L, n, S = layout.num_rows, layout.window, layout.rows_per_obs
    time_index = jnp.asarray(time_index, jnp.int32)
    env_index = jnp.asarray(env_index, jnp.int32)
    B = time_index.shape[0]
    # Rows t-S+1 .. t+n: position q of the gathered rows is row t - S + 1 + q.
    rows = (time_index[:, None] + jnp.arange(-(S - 1), n + 1, dtype=jnp.int32)) % L
    env = env_index[:, None]
    frames = state.frames[rows, env]  # [B, S+n, *F]
    ended = state.terminated[rows, env] | state.truncated[rows, env]  # [B, S+n]
    # ends_before[:, q] = number of episode ends at positions < q.
    ends_before = jnp.concatenate(
        [jnp.zeros((B, 1), jnp.int32), jnp.cumsum(ended, axis=1, dtype=jnp.int32)], axis=1
    )

    def to_obs(x: Array) -> Array:
        return x[:, :, 0] if layout.stack == 0 else jnp.moveaxis(x, 2, 2 + layout.axis)

    steps = rows[:, S - 1 : S - 1 + n]  # [B, n] the window's rows
    step_ended = ended[:, S - 1 : S - 1 + n]
    obs: Obs = to_obs(_stacks(layout, frames, ends_before, 0))
    next_obs: Obs = _stacks(layout, frames, ends_before, 1)
    keep = ~step_ended.reshape(step_ended.shape + (1,) * (next_obs.ndim - 2))
    next_obs = to_obs(jnp.where(keep, next_obs, jnp.zeros((), next_obs.dtype)))

    def take(x: Array) -> Array:
        return x[steps, env]

    if layout.obs_extra_specs:  # dict observations: the other entries, whole per step
        next_steps = rows[:, S : S + n]

        def take_next(x: Array) -> Array:
            out = x[next_steps, env]
            ok = ~step_ended.reshape(step_ended.shape + (1,) * (out.ndim - 2))
            return jnp.where(ok, out, jnp.zeros((), out.dtype))

        obs = {OBS: obs, **{k: take(v) for k, v in state.obs_extras.items()}}
        next_obs = {OBS: next_obs, **{k: take_next(v) for k, v in state.obs_extras.items()}}

    return Transition(
        obs=obs,
        action=take(state.action),
        reward=take(state.reward),
        next_obs=next_obs,
        terminated=take(state.terminated),
        truncated=take(state.truncated),
        extras={k: take(v) for k, v in state.extras.items()},
    )


def _sample(layout: _Layout, state: CompactReplayState, key: jax.Array) -> ReplaySample:
    # The total from the same descent: a separate read of the root would make XLA
    # copy the whole tree before a later in-place priority update.
    indices, weight, total = sum_tree.sample_with_total(state.tree, key, layout.batch_size)
    indices = indices.astype(jnp.int32)
    time_index, env_index = indices // layout.num_envs, indices % layout.num_envs
    probabilities = weight / jnp.where(total > 0, total, 1.0)
    return ReplaySample(
        experience=_gather(layout, state, time_index, env_index),
        time_index=time_index,
        env_index=env_index,
        indices=indices,
        probabilities=probabilities.astype(jnp.float32),
    )


def _can_sample(state: CompactReplayState) -> Array:
    return state.num_items > 0


def _num_items(state: CompactReplayState) -> Array:
    return state.num_items


def _update_priorities(
    layout: _Layout,
    state: CompactReplayState,
    indices: Any,
    priorities: Any,
    priority: PriorityParams | None = None,
) -> CompactReplayState:
    if not layout.prioritized:
        return state
    num_items_total = layout.num_rows * layout.num_envs
    priority = require_priority(priority, "update_priorities")
    indices, priorities = sum_tree.index_value_batch(indices, priorities, "update_priorities")
    in_range = (indices >= 0) & (indices < num_items_total)
    current = sum_tree.get(state.tree, jnp.clip(indices, 0, num_items_total - 1))
    valid = (current > 0) & in_range
    tree, max_priority = write_priorities(state, indices, priorities, valid, priority, _MIN_WEIGHT)
    return dataclasses.replace(state, tree=tree, max_priority=max_priority)
