"""Checkpoints of a whole training run with Orbax's ``CheckpointManager``.

A checkpoint lives in ``RUN_DIR/checkpoints/<env step>/`` and holds two items:

* ``state``: every array of what the runner saves (``Runner.save``): for a JAX-native env
  the whole ``jaxrl.runners.RunnerState`` (the agent state with params, target params,
  optimizer state, replay buffer (sum tree included), counters and hparams; the env
  state; the current observations and carry; the PRNG key; the chunk counter), else a
  ``LearnerCheckpoint`` (agent state, key, chunk counter). Orbax's ``StandardSave``
  writes it as a flat mapping ``{"00000": leaf, ...}`` in the order of
  ``jax.tree.leaves``. The tree structure is not stored: it is rebuilt from the run's
  ``config.yaml`` (``Runner.saved_shape``), so nothing is pickled.
* ``meta``: JSON with the host driver's position: env steps, chunks done, metric rows
  written, best evaluation, run time, the key path of every saved array (checked on
  restore, so a config that no longer matches the checkpoint is a one-line error) and
  ``crc32``, the CRC-32 of each saved array's bytes (checked on restore, so garbled bytes
  make the checkpoint unreadable; a checkpoint saved without it is read unchecked).

Orbax writes a checkpoint into a temporary directory and renames it when complete, so a
run killed in the middle of a save leaves the previous checkpoints intact and a leftover
``*.orbax-checkpoint-tmp*`` directory that restore ignores (and the next save removes).

``load`` gives back what ``CheckpointWriter.save`` wrote, given the shapes it should have
(``Runner.saved_shape``); ``experiment.run.restore`` builds a trained agent from it. This
module knows nothing of runs: it imports no other part of ``jaxrl.experiment``.
A missing run directory, missing or unreadable checkpoint raises ``ConfigError`` with one
line (the CLIs print it and exit with code 2); nothing in the run directory is changed.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import shutil
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.types import ConfigError

CHECKPOINT_DIR = "checkpoints"


def _ocp():
    """Imports Orbax lazily (its import costs about a second) and quiets its INFO logs."""
    import orbax.checkpoint as ocp

    logging.getLogger("absl").setLevel(logging.WARNING)
    return ocp


class Unreadable(ConfigError):
    """Checkpoint ``step`` exists but cannot be read (a file missing or garbled)."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


@dataclasses.dataclass
class Checkpoint:
    """A restored checkpoint: its env ``step``, the runner ``state`` and the ``meta`` dict."""

    step: int
    state: Any
    meta: dict[str, Any]


def _options(keep: int | None, create: bool):
    ocp = _ocp()
    return ocp.CheckpointManagerOptions(
        max_to_keep=keep,
        create=create,
        enable_async_checkpointing=False,
        cleanup_tmp_directories=create,
    )


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def checksum(leaf: Any) -> int | None:
    """The CRC-32 of an array's bytes in C order (``zlib.crc32``) in the dtype it is
    restored as; None for an array sharded over several processes of a job, of which no
    process holds all the bytes."""
    leaf = leaf if isinstance(leaf, jax.Array) else jnp.asarray(leaf)  # as it is restored
    if not leaf.is_fully_addressable:
        return None
    return zlib.crc32(np.ascontiguousarray(np.asarray(leaf)).reshape(-1).view(np.uint8).data)


def leaf_paths(state: Any) -> list[str]:
    """The key path of every array of ``state``, in ``jax.tree.leaves`` order."""
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(state)]


class CheckpointWriter:
    """Saves runner states into ``RUN_DIR/checkpoints``, keeping the newest ``keep``."""

    def __init__(self, run_dir: str | Path, keep: int = 3):
        if keep < 1:
            raise ConfigError(f"--keep must be >= 1, got {keep}")
        self.directory = Path(run_dir).resolve() / CHECKPOINT_DIR
        self._manager = _ocp().CheckpointManager(self.directory, options=_options(keep, True))

    def save(self, step: int, state: Any, meta: dict[str, Any]) -> None:
        """Writes ``state`` (a pytree of arrays) and ``meta`` (JSON) as checkpoint ``step``,
        atomically; returns when it is on disk. An existing ``step`` is left as it is."""
        ocp = _ocp()
        if step in self._manager.all_steps():
            return
        leaves = {
            f"{i:05d}": leaf for i, leaf in enumerate(jax.tree.leaves(state)) if _stored(leaf)
        }
        sums = {name: checksum(leaf) for name, leaf in leaves.items()}
        crc32 = {name: value for name, value in sums.items() if value is not None}
        meta = _json_safe({**meta, "paths": leaf_paths(state), "crc32": crc32})
        self._manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(leaves), meta=ocp.args.JsonSave(meta)
            ),
        )
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> CheckpointWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def checkpoint_steps(run_dir: str | Path) -> list[int]:
    """The env steps of the complete checkpoints of a run, oldest first."""
    directory = Path(run_dir) / CHECKPOINT_DIR
    if not directory.is_dir():
        return []
    steps = []
    for path in directory.iterdir():  # Orbax names finished checkpoints by their step only
        if path.is_dir() and path.name.isdigit() and (path / "_CHECKPOINT_METADATA").exists():
            steps.append(int(path.name))
    return sorted(steps)


def pick_step(run_dir: Path, step: int | None = None) -> int:
    """``step``, or the newest checkpoint's; ConfigError when there is none to restore."""
    if not run_dir.is_dir():
        raise ConfigError(f"run directory '{run_dir}' does not exist")
    steps = checkpoint_steps(run_dir)
    if not steps:
        raise ConfigError(
            f"'{run_dir}' has no checkpoint (a run saves one at its end and every "
            "--checkpoint-every env steps)"
        )
    if step is None:
        return steps[-1]
    if step not in steps:
        raise ConfigError(
            f"'{run_dir}' has no checkpoint at step {step}; available: {', '.join(map(str, steps))}"
        )
    return step


def load(
    run_dir: str | Path, abstract_state: Any, step: int | None = None, shardings: Any = None
) -> Checkpoint:
    """Restores checkpoint ``step`` (default: the newest complete one) of ``run_dir``.

    ``abstract_state`` gives the tree structure, shapes and dtypes (e.g.
    ``jax.eval_shape(runner.init, key)``); ``shardings`` an optional matching tree of
    ``jax.sharding.Sharding`` (default: the first local device). Raises ``ConfigError``
    when the directory or checkpoint is missing, unreadable, or does not match.
    """
    ocp = _ocp()
    run_dir = Path(run_dir)
    step = pick_step(run_dir, step)
    leaves, treedef = jax.tree.flatten(abstract_state)
    if shardings is None:
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        sharding_leaves = [device] * len(leaves)
    else:
        sharding_leaves = jax.tree.leaves(shardings)
    abstract = {
        f"{i:05d}": jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)
        for i, (leaf, sharding) in enumerate(zip(leaves, sharding_leaves, strict=True))
    }
    where = f"checkpoint {step} of '{run_dir}'"
    manager = None
    try:
        manager = ocp.CheckpointManager(
            run_dir.resolve() / CHECKPOINT_DIR, options=_options(None, False)
        )
        meta = manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
        paths = leaf_paths(abstract_state)
        if not isinstance(meta, dict) or meta.get("paths") != paths:
            raise ConfigError(
                f"{where} does not match the state its config.yaml builds ({len(paths)} "
                "arrays); was config.yaml edited?"
            )
        stored = {name: leaf for name, leaf in abstract.items() if _stored(leaf)}
        restored = manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(stored))
        )["state"]
        for name, leaf in stored.items():
            got = restored[name]
            if got.shape != leaf.shape or got.dtype != leaf.dtype:
                raise ValueError(f"array {name}: {got.shape} {got.dtype}")
        _verify(restored, meta.get("crc32"), paths, where, step)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to read is a corrupt checkpoint
        _quiet_abandoned_reads()
        raise Unreadable(f"{where} is unreadable ({_reason(e)}); it may be corrupt", step) from None
    finally:
        if manager is not None:
            manager.close()
    arrays = [
        restored[name]
        if name in stored
        else jax.device_put(jnp.zeros(a.shape, a.dtype), a.sharding)
        for name, a in abstract.items()
    ]
    return Checkpoint(step=step, state=jax.tree.unflatten(treedef, arrays), meta=meta)


def _verify(restored: dict[str, Any], sums: Any, paths: list[str], where: str, step: int) -> None:
    """Unreadable unless each restored array has the checksum saved with it (``sums``:
    ``{name: crc32}``; None for a checkpoint saved without checksums, not checked)."""
    if sums is None:
        return
    for name, value in sums.items():
        got = checksum(restored[name]) if name in restored else None
        if got is not None and got != value:  # None: sharded over processes, not checked
            raise Unreadable(
                f"{where} is unreadable: array {paths[int(name)]} does not match the checksum "
                "saved with it; it is corrupt",
                step,
            )


def remove(run_dir: str | Path, step: int) -> None:
    """Deletes checkpoint ``step`` of ``run_dir`` (one found unreadable)."""
    shutil.rmtree(Path(run_dir) / CHECKPOINT_DIR / str(step), ignore_errors=True)


def _stored(leaf: Any) -> bool:
    """Whether a leaf is written: Orbax refuses arrays of zero elements (MJX's ``Data`` holds
    several, e.g. ``act`` of shape ``(0,)``); those are rebuilt from their shape on load."""
    return math.prod(getattr(leaf, "shape", ())) > 0


def _quiet_abandoned_reads() -> None:
    """Orbax leaves one coroutine per array of a failed restore whose exception is never
    retrieved; Python prints each (a traceback of dozens of lines) when it is collected,
    after the one-line error. Those are dropped: the failure is reported once, above."""
    if getattr(sys.unraisablehook, "_jaxrl_quiet", False):
        return
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        code = getattr(unraisable.object, "cr_code", None)
        if code is not None and "orbax" in code.co_filename:
            return
        previous(unraisable)

    hook._jaxrl_quiet = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook
    # Their I/O threads may also finish after Orbax's event loop closed and print
    # "RuntimeError: Event loop is closed" from ``call_soon_threadsafe`` (through
    # ``sys.excepthook``, or ``threading.excepthook`` for a Python thread): dropped too.
    previous_except, previous_thread = sys.excepthook, threading.excepthook

    def loop_closed(exc_type: Any, exc: Any) -> bool:
        return exc_type is RuntimeError and str(exc) == "Event loop is closed"

    def except_hook(exc_type: Any, exc: Any, tb: Any) -> None:
        if not loop_closed(exc_type, exc):
            previous_except(exc_type, exc, tb)

    def thread_hook(args: Any) -> None:
        if not loop_closed(args.exc_type, args.exc_value):
            previous_thread(args)

    sys.excepthook, threading.excepthook = except_hook, thread_hook


def _reason(e: Exception) -> str:
    """A short reason for an unreadable checkpoint: the exception's type and first line."""
    text = str(e).strip().split(". See full")[0].splitlines()[0][:120] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def load_readable(
    run_dir: str | Path, abstract_state: Any, step: int | None = None, shardings: Any = None
) -> tuple[Checkpoint, list[Unreadable]]:
    """``load`` of checkpoint ``step``; with ``step`` None the newest *readable* one,
    falling back past unreadable newer ones. Returns the checkpoint and the error of each
    checkpoint skipped, newest first (its one line is ``str(error)``; empty when the
    newest was read)."""
    if step is not None:
        return load(run_dir, abstract_state, step, shardings), []
    skipped: list[Unreadable] = []
    steps = checkpoint_steps(run_dir) or [pick_step(Path(run_dir))]
    for candidate in reversed(steps):
        try:
            return load(run_dir, abstract_state, candidate, shardings), skipped
        except Unreadable as e:
            skipped.append(e)
    raise ConfigError(f"no checkpoint of '{run_dir}' is readable; newest: {skipped[0]}")
