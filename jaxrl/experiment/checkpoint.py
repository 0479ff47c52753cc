"""Checkpoints of a whole training run with Orbax's ``CheckpointManager``.

A checkpoint lives in ``RUN_DIR/checkpoints/<env step>/`` and holds two items:

* ``state``: every array of the runner state (``jaxrl.runners.RunnerState``: the agent
  state with params, target params, optimizer state, replay buffer (sum tree included),
  counters and hparams; the env state of a JAX-native env; the current observations; the
  PRNG key; the chunk counter), saved by Orbax's ``StandardSave`` as a flat mapping
  ``{"00000": leaf, ...}`` in the order of ``jax.tree.leaves``. The tree structure is not
  stored: it is rebuilt from the run's ``config.yaml`` (``jax.eval_shape`` of the
  runner's ``init``), so nothing is pickled.
* ``meta``: JSON with the host driver's position: env steps, chunks done, metric rows
  written, best evaluation, run time, and the key path of every saved array (checked on
  restore, so a config that no longer matches the checkpoint is a one-line error).

Orbax writes a checkpoint into a temporary directory and renames it when complete, so a
run killed in the middle of a save leaves the previous checkpoints intact and a leftover
``*.orbax-checkpoint-tmp*`` directory that restore ignores (and the next save removes).

``restore(run_dir, step=None) -> (agent, agent_state, config)`` gives back a trained agent
for a notebook or script; ``load`` gives back the whole runner state for ``--resume``.
A missing run directory, missing or unreadable checkpoint raises ``ConfigError`` with one
line (the CLIs print it and exit with code 2); nothing in the run directory is changed.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

import jax

from jaxrl.types import Agent, ConfigError

CHECKPOINT_DIR = "checkpoints"


def _ocp():
    """Imports Orbax lazily (its import costs about a second) and quiets its INFO logs."""
    import orbax.checkpoint as ocp

    logging.getLogger("absl").setLevel(logging.WARNING)
    return ocp


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
        leaves = {f"{i:05d}": leaf for i, leaf in enumerate(jax.tree.leaves(state))}
        meta = _json_safe({**meta, "paths": leaf_paths(state)})
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
    try:
        manager = ocp.CheckpointManager(
            run_dir.resolve() / CHECKPOINT_DIR, options=_options(None, False)
        )
        meta = manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
    except Exception as e:  # noqa: BLE001 - any failure to read is a corrupt checkpoint
        raise ConfigError(
            f"{where} is unreadable ({type(e).__name__}); it may be corrupt"
        ) from None
    paths = leaf_paths(abstract_state)
    if not isinstance(meta, dict) or meta.get("paths") != paths:
        raise ConfigError(
            f"{where} does not match the state its config.yaml builds ({len(paths)} arrays); "
            "was config.yaml edited?"
        )
    try:
        restored = manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract))
        )["state"]
        for name, leaf in abstract.items():
            got = restored[name]
            if got.shape != leaf.shape or got.dtype != leaf.dtype:
                raise ValueError(f"array {name}: {got.shape} {got.dtype}")
    except Exception as e:  # noqa: BLE001
        raise ConfigError(
            f"{where} is unreadable ({type(e).__name__}); it may be corrupt"
        ) from None
    finally:
        manager.close()
    state = jax.tree.unflatten(treedef, [restored[name] for name in abstract])
    return Checkpoint(step=step, state=state, meta=meta)


def restore(run_dir: str | Path, step: int | None = None) -> tuple[Agent, Any, dict[str, Any]]:
    """Loads a trained agent: ``agent, agent_state, config = restore("runs/...")``.

    ``agent`` is rebuilt from the run's ``config.yaml``; ``agent_state`` is the agent's
    state at checkpoint ``step`` (default: the newest), ready for
    ``agent.act(agent_state, obs, agent.init_carry(num_envs), key, False)``. For a run of
    several seeds or sweep points every leaf of ``agent_state`` has a leading member axis
    (``launch.yaml`` lists them).
    Raises ``ConfigError`` (one line) for a missing or corrupt run or checkpoint.
    """
    from jaxrl.experiment.run import build

    run_dir = Path(run_dir)
    pick_step(run_dir, step)  # a missing checkpoint is reported before the config is read
    setup = build(run_dir)
    checkpoint = load(run_dir, setup.abstract_state(), step, setup.shardings())
    return setup.agent, checkpoint.state.agent_state, setup.cfg
