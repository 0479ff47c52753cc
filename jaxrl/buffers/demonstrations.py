"""Demonstrations and exported replay: one ``.npz`` format for transitions, a read-only
demonstration buffer, and the mixing of its items into sampled batches.

File format
-----------
A demonstration file is a NumPy ``.npz`` archive (``numpy.savez``, read with
``allow_pickle=False``: no pickle) of ``M`` transitions, one array per field, every
array with leading axis ``[M]``:

* ``obs``, ``next_obs``: ``[M, *obs_shape]`` of the env's ``obs_dtype``; for a dict
  observation one array per entry, keyed ``obs/<name>`` and ``next_obs/<name>``
  (``obs/obs``, ``obs/action_mask``, ...);
* ``action``: ``[M, *action_shape]`` in the env's units (int32 for a discrete space,
  float32 within the ``Box`` for a continuous one);
* ``reward`` ``[M]`` float32 (the task reward), ``terminated``, ``truncated`` ``[M]`` bool.

``load_npz`` checks the keys and every shape and dtype against an ``EnvSpec`` and raises
a one-line ``ValueError`` naming what is wrong and what was expected; ``save_npz``
writes the same layout. ``replay_transitions`` reads the valid rows of a uniform replay
buffer (oldest first, env by env within a row), so a run's replay buffer exported with
``python -m jaxrl.export_buffer`` seeds another run's demonstrations.

Demonstration buffer
--------------------
The loaded transitions live in the agent state (a pytree of arrays, leaves ``[M, ...]``)
and are never written. ``sample_demos`` draws ``k`` of them uniformly with replacement;
``mix_batch`` puts them in the last ``k`` rows of a replay batch of ``B`` rows, so that a
batch holds exactly ``k = round(demo_ratio * B)`` demonstrations (``demo_count``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.types import Box, EnvSpec, Transition

FIELDS = ("obs", "action", "reward", "next_obs", "terminated", "truncated")


def expected_arrays(spec: EnvSpec) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{key: (shape without [M], dtype)}`` of a demonstration file for ``spec``."""
    space = spec.action_space
    obs = spec.obs_spec
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for field in ("obs", "next_obs"):
        if isinstance(obs, dict):
            for name, s in obs.items():
                out[f"{field}/{name}"] = (tuple(s.shape), np.dtype(s.dtype))
        else:
            out[field] = (tuple(obs.shape), np.dtype(obs.dtype))
    out["action"] = (tuple(space.shape), np.dtype(space.dtype))
    out["reward"] = ((), np.dtype("float32"))
    out["terminated"] = ((), np.dtype("bool"))
    out["truncated"] = ((), np.dtype("bool"))
    return out


def to_arrays(transitions: Transition[Any]) -> dict[str, np.ndarray]:
    """The ``.npz`` arrays of ``transitions`` (leaves ``[M, ...]``; ``extras`` and fields
    that are None left out)."""
    out = {}
    for field in FIELDS:
        value = getattr(transitions, field)
        if value is None:
            continue
        if isinstance(value, dict):
            out.update({f"{field}/{k}": np.asarray(v) for k, v in value.items()})
        else:
            out[field] = np.asarray(value)
    return out


def from_arrays(arrays: dict[str, np.ndarray]) -> Transition[np.ndarray]:
    """The ``Transition`` (leaves ``[M, ...]``, empty ``extras``) of ``.npz`` arrays."""

    def field(name: str) -> Any:
        if name in arrays:
            return arrays[name]
        prefix = f"{name}/"
        return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}

    return Transition(**{f: field(f) for f in FIELDS}, extras={})


def save_npz(path: str | Path, transitions: Transition[Any]) -> None:
    """Writes ``transitions`` (leaves ``[M, ...]``) to ``path`` in the format above."""
    arrays = to_arrays(transitions)
    sizes = {v.shape[0] if v.ndim else -1 for v in arrays.values()}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"every field needs the same leading axis [M], got {sorted(sizes)}")
    if any(v.dtype == object for v in arrays.values()):
        raise ValueError("transitions must be numeric or bool arrays (no pickled objects)")
    named: dict[str, Any] = arrays  # numpy's stubs take a keyword for allow_pickle otherwise
    with open(path, "wb") as f:
        np.savez(f, **named)


def load_npz(path: str | Path, spec: EnvSpec) -> Transition[np.ndarray]:
    """The transitions of the ``.npz`` file ``path``, checked against ``spec``.

    Returns a ``Transition`` of NumPy arrays ``[M, ...]`` with the spec's dtypes. Raises
    ``ValueError`` (one line) for a missing or unreadable file, missing or unknown keys,
    a shape or dtype that does not match ``spec``, fields of different lengths, an empty
    file, or (``Box`` actions) actions outside the box.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"demonstration file '{path}' does not exist")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError) as e:
        raise ValueError(f"demonstration file '{path}' is not a readable .npz: {e}") from None
    expected = expected_arrays(spec)
    missing, unknown = sorted(set(expected) - set(arrays)), sorted(set(arrays) - set(expected))
    if missing or unknown:
        raise ValueError(
            f"demonstration file '{path}' for {spec.name} needs the keys {sorted(expected)}; "
            f"missing {missing}, unknown {unknown}"
        )
    lengths = {k: v.shape[0] if v.ndim else 0 for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"demonstration file '{path}' has fields of different lengths {lengths}")
    size = lengths["reward"]
    if size == 0:
        raise ValueError(f"demonstration file '{path}' holds no transitions")
    for key, (shape, dtype) in expected.items():
        value = arrays[key]
        if value.shape != (size, *shape):
            raise ValueError(
                f"demonstration file '{path}': '{key}' has shape {value.shape}, expected "
                f"{(size, *shape)} ([M, ...] for {spec.name})"
            )
        same_kind = np.can_cast(value.dtype, dtype, "same_kind") or value.dtype == dtype
        if not same_kind:
            raise ValueError(
                f"demonstration file '{path}': '{key}' has dtype {value.dtype}, expected {dtype}"
            )
        arrays[key] = value.astype(dtype)
    space = spec.action_space
    if isinstance(space, Box):
        low, high = np.asarray(space.low).reshape(space.shape), np.asarray(space.high)
        a = arrays["action"]
        if (a < low).any() or (a > high.reshape(space.shape)).any():
            raise ValueError(
                f"demonstration file '{path}': actions lie outside {spec.name}'s box "
                f"[{space.low}, {space.high}]"
            )
    return from_arrays(arrays)


def replay_transitions(data: Any, position: Any, size: Any) -> Transition[np.ndarray]:
    """The valid transitions of a uniform replay ring (``buffers/replay.py``'s
    ``ReplayState``: ``data`` leaves ``[L, N, ...]``), oldest row first and the ``N``
    envs of a row in order: leaves ``[size * N, ...]`` (NumPy, ``extras`` dropped)."""
    data = jax.tree.map(np.asarray, data)
    num_rows = np.asarray(data.reward).shape[0]
    size, position = int(size), int(position)
    rows = (position - size + np.arange(size)) % num_rows
    flat = lambda x: x[rows].reshape((-1, *x.shape[2:]))
    return Transition(
        **{f: jax.tree.map(flat, getattr(data, f)) for f in FIELDS},
        extras={},
    )


def demo_count(demo_ratio: float, batch_size: int) -> int:
    """Demonstrations per batch of ``batch_size``: ``round(demo_ratio * batch_size)``."""
    return int(round(demo_ratio * batch_size))


def sample_demos(demos: Transition, key: jax.Array, count: int) -> Transition:
    """``count`` transitions (leaves ``[count, ...]``) drawn uniformly with replacement
    from ``demos`` (leaves ``[M, ...]``)."""
    size = jax.tree.leaves(demos)[0].shape[0]
    index = jax.random.randint(key, (count,), 0, size, jnp.int32)
    return jax.tree.map(lambda x: x[index], demos)


def mix_batch(batch: Transition, demos: Transition) -> Transition:
    """``batch`` (leaves ``[B, ...]``) with its last ``k`` rows replaced by ``demos``
    (leaves ``[k, ...]``, ``k <= B``): rows ``[0, B - k)`` stay replay, ``[B - k, B)`` are
    demonstrations. ``extras`` (importance weights, n-step discounts) are not mixed."""
    k = jax.tree.leaves(demos.reward)[0].shape[0]
    if k == 0:
        return batch
    b = batch.reward.shape[0]
    join = lambda x, d: jnp.concatenate([x[: b - k], d.astype(x.dtype)], axis=0)
    fields = {f: jax.tree.map(join, getattr(batch, f), getattr(demos, f)) for f in FIELDS}
    return Transition(**fields, extras=batch.extras)


def is_demo(batch_size: int, count: int) -> jax.Array:
    """``[B]`` bool, True at the rows ``mix_batch`` fills with demonstrations."""
    return jnp.arange(batch_size) >= batch_size - count


__all__ = [
    "FIELDS",
    "demo_count",
    "expected_arrays",
    "from_arrays",
    "is_demo",
    "load_npz",
    "mix_batch",
    "replay_transitions",
    "sample_demos",
    "save_npz",
    "to_arrays",
]
