"""The experiment entry points: start a run, resume one, restore a trained agent.

``run_experiment(config, logdir, launch=Launch(...))`` builds the env, evaluation env, agent
and runner from a resolved config (``experiment.config.resolve``; ``experiment.setup``),
compiles the program, then creates a fresh run directory (never reusing an existing one;
locked while it is trained, ``experiment.lock``), writes ``config.yaml`` and
``launch.yaml`` (seeds, sweep, checkpointing) and trains chunk by chunk
(``experiment.driver``), ending with a summary (``experiment.report``).

``resume_experiment(run_dir)`` rebuilds the same program from the saved files, restores
the newest readable checkpoint (saying which newer ones it skipped, and removing them
before it trains, so that it writes them again) or ``step``, cuts the metrics files back
to the rows that checkpoint had written, and goes on. For a JAX-native env the runner
state holds everything (agent state with replay buffer, env state, observations, carry,
key, chunk counter), so a resumed run is bit-identical to one that never stopped; where
the env's state cannot be saved (``Runner.save``), the learner is restored exactly and
the envs restart.

A ``Launch`` with ``init_from`` (``--init-from RUN[:STEP]``) starts the new run from parts
of another run's checkpoint (``experiment.warmstart``): the source is read and checked
before the run directory is created, and ``init_from.yaml`` records it with the starting
policy's evaluation.

``restore(run_dir, step=None) -> (agent, agent_state, config)`` gives back a trained agent
for a notebook or script (``jaxrl.checkpoint.restore``). Every restore refuses a checkpoint
whose agent state holds a non-finite array (``ConfigError``, one line).

Runs of several members (``--seeds``, ``--sweep``) vmap the runner over the member axis
(``experiment.sweep``) and shard it over local devices; metrics rows then carry the
member's ``seed`` and swept values (``agent.lr``) as columns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from jaxrl.experiment import actors, callbacks, checkpoint, guards, report, warmstart
from jaxrl.experiment.config import Experiment
from jaxrl.experiment.driver import compile_evaluate, drive, final_returns, prepare
from jaxrl.experiment.lock import RunLock
from jaxrl.experiment.report import Summary
from jaxrl.experiment.setup import (
    Launch,
    Setup,
    build,
    build_setup,
    new_run_dir,
    read_launch,
    write_run_files,
)
from jaxrl.runners.distributed.topology import broadcast_text, is_primary
from jaxrl.types import ConfigError

__all__ = [
    "Launch",
    "Setup",
    "Summary",
    "build",
    "build_setup",
    "new_run_dir",
    "read_launch",
    "restore",
    "restore_checkpoint",
    "resume_experiment",
    "run_experiment",
]


def check_logdir(logdir: str | Path) -> None:
    """ConfigError unless run directories can be created under ``logdir``: it must be a
    directory or creatable (its nearest existing ancestor a writable directory)."""
    if str(logdir) == "":
        raise ConfigError("--logdir is empty; give the directory that holds run directories")
    path = Path(logdir)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--logdir '{logdir}' is a file; give a directory")
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(f"--logdir '{logdir}' is inside '{probe}', which is a file")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"--logdir '{logdir}': '{probe}' is not writable")


def run_experiment(
    config: Experiment,
    logdir: str | Path = "runs",
    console: Console | None = None,
    launch: Launch | None = None,
    self_play: bool | None = None,
) -> Summary:
    """Trains as ``config`` and ``launch`` say, logging into a new run directory under
    ``logdir``; ``self_play`` is the ``--self-play`` flag (``experiment.modes``).

    Every mistake (config, sweep, ``logdir``, one found while compiling the program) is
    found before anything is written. Raises ``guards.NonFinite`` when training diverges
    and ``guards.Interrupted`` after saving when SIGINT or SIGTERM stopped it.
    """
    launch = launch or Launch()
    if launch.actor_processes:
        actors.check_link(launch)
    check_logdir(logdir)
    callbacks.check(launch.callbacks, resolve_them=True)
    setup = build_setup(config, launch, self_play)
    check_video(setup)
    source, warm = _warm_start(setup)
    launch = setup.launch
    console = console or Console()
    with guards.StopSignals() as signals:
        with report.compiling(_quiet_elsewhere(console), "the training program"):
            prepared = prepare(setup, warm=warm)
        run_dir = _new_run_dir(logdir, config, launch)
        with _lock(run_dir):
            if is_primary():
                write_run_files(run_dir, config, launch)
            if source is not None:
                _record_start(setup, run_dir, source, prepared.state.agent_state)
            return drive(setup, run_dir, console, None, prepared, signals)


def check_video(setup: Setup) -> None:
    """ConfigError (one line) where ``run.video_every`` asks for videos that cannot be
    made: an env that does not render, independent agents, no imageio (``video.check``)."""
    if setup.config.run.video_every:
        from jaxrl.experiment import video

        video.check(setup.config, max(1, len(setup.players)), "--run.video_every")


def _quiet_elsewhere(console: Console) -> Console:
    """``console`` on process 0 of a job, a quiet one on the others (which compile too)."""
    return console if is_primary() else Console(quiet=True)


def _new_run_dir(logdir: str | Path, config: Experiment, launch: Launch) -> Path:
    """A new run directory, created by process 0 of a job (``runners.distributed.topology``) and
    named to the others; ConfigError on every process when it cannot be created."""
    error = run_dir = ""
    if is_primary():
        try:
            run_dir = str(new_run_dir(logdir, config, launch))
        except OSError as e:
            error = f"cannot create a run directory under '{logdir}': {e.strerror}"
    named = broadcast_text(error or run_dir)
    if error or not Path(named).is_dir():
        raise ConfigError(error or named)
    return Path(named)


def _lock(run_dir: Path) -> Any:
    """The run directory's lock, held by process 0 of a job (the one that writes)."""
    return RunLock(run_dir) if is_primary() else contextlib.nullcontext()


def _warm_start(setup: Setup) -> tuple[warmstart.Source | None, Any]:
    """For ``--init-from``: the source (its checkpoint read and checked, ``launch.init_from``
    set to ``ABSOLUTE_RUN:STEP``) and the function that warms the initial state."""
    launch = setup.launch
    if launch.init_from is None:
        return None, None
    source = _load_source(launch.init_from, setup.config.agent.name)
    setup.launch = dataclasses.replace(launch, init_from=source.spec)
    members = len(setup.members) if launch.batched else 1

    def warm(state: Any) -> Any:
        agent_state = warmstart.merge(source, state.agent_state, launch.init_parts, members)
        return dataclasses.replace(state, agent_state=agent_state)

    return source, warm


def _load_source(init_from: str, agent_name: str) -> warmstart.Source:
    """Restores a warm start's source checkpoint; ConfigError for a missing run or
    checkpoint, or a run of another agent (checked before the checkpoint is read)."""
    run_dir, step = warmstart.parse_init_from(init_from)
    warmstart.check_agent(run_dir, agent_name)
    setup, restored, _ = restore_checkpoint(run_dir, step)
    members = len(setup.members) if setup.launch.batched else 1
    state = restored.state.agent_state
    return warmstart.Source(run_dir.resolve(), restored.step, agent_name, members, state)


def _record_start(setup: Setup, run_dir: Path, source: warmstart.Source, agent_state: Any) -> None:
    """``init_from.yaml``: the source and the starting policy's final-style evaluation."""
    _, eval_key = setup.keys()
    evaluate = compile_evaluate(setup.runner, agent_state, eval_key)
    members, episodes = len(setup.members), setup.run_config.eval_episodes
    returns = final_returns(evaluate, agent_state, eval_key, members, episodes).mean(axis=1)
    warmstart.write_record(run_dir, source, setup.launch.init_parts, returns)


def _check_metrics(run_dir: Path, rows: int) -> None:
    """ConfigError unless ``metrics.jsonl`` and ``metrics.csv`` hold the ``rows`` rows the
    checkpoint recorded (a resume appends to them; one cut short would lie)."""
    for name, header in (("metrics.jsonl", 0), ("metrics.csv", 1)):
        path = run_dir / name
        have = len(path.read_text().splitlines()) - header if path.is_file() else None
        if have is None or have < rows:
            what = "is missing" if have is None else f"has {max(have, 0)} rows"
            raise ConfigError(
                f"'{path}' {what} but the checkpoint recorded {rows}; restore it from a "
                "copy, or train a new run (a resume would leave it without the earlier rows)"
            )


def resume_experiment(
    run_dir: str | Path,
    steps: int | None = None,
    console: Console | None = None,
    checkpoint_every: int | None = None,
    keep: int | None = None,
    step: int | None = None,
    watchdog: float | None = None,
    devices: int | str | None = None,
) -> Summary | None:
    """Continues ``run_dir`` from its newest readable checkpoint (or ``step``), appending
    to its metrics; returns None, changing nothing, when the run is already complete.

    ``steps`` changes the run's total env steps (the one config value a resume may
    change; never below the steps already done); ``checkpoint_every``, ``keep`` and
    ``watchdog`` replace those of ``launch.yaml``; so does ``devices``: the checkpoint is
    restored onto the new device count's layout (``runners.distributed.devices``), every array as it
    was saved, and the run goes on there. A newer unreadable checkpoint is
    skipped, and said.
    """
    console = console or Console()
    run_dir = Path(run_dir)
    _check_is_run(run_dir)
    checkpoint.pick_step(run_dir, step)  # a missing run or checkpoint: one line, no change
    with _lock(run_dir):
        setup = build(run_dir)
        if setup.launch.actor_processes:
            actors.check_link(setup.launch)
        setup.launch = _relaunched(setup.launch, checkpoint_every, keep, watchdog)
        if devices is not None and devices != setup.launch.devices:
            setup = build_setup(setup.config, dataclasses.replace(setup.launch, devices=devices))
        if steps is not None and steps != setup.config.run.steps:
            extended, notes = setup.config.with_steps(steps)
            setup = build_setup(extended, setup.launch)
            for note in notes:
                console.print(f"note: {note}")
        shape, shardings = setup.saved_shape(), setup.shardings()
        restored, skipped = checkpoint.load_readable(run_dir, shape, step, shardings)
        for line in skipped:
            console.print(f"note: {line}; resuming from checkpoint {restored.step:,}")
        _check_finite(run_dir, restored)
        if steps is not None and steps < restored.step:
            raise ConfigError(
                f"--steps {steps:,} is below the {restored.step:,} steps checkpoint "
                f"{restored.step} has done; give more, or evaluate it as it is"
            )
        if restored.step >= setup.runner.layout.total_steps:
            console.print(
                f"'{run_dir}' is complete at step {restored.step:,}: nothing to do "
                "(raise --steps to train longer)"
            )
            return None
        _check_metrics(run_dir, int(restored.meta.get("rows", 0)))
        callbacks.check(setup.launch.callbacks, resolve_them=True)
        check_video(setup)
        with guards.StopSignals() as signals:
            with report.compiling(_quiet_elsewhere(console), "the training program"):
                prepared = prepare(setup, restored)
            if is_primary():
                write_run_files(run_dir, setup.config, setup.launch)
                for unreadable in skipped:  # this run writes them again; none keeps a slot
                    checkpoint.remove(run_dir, unreadable.step)
                    console.print(f"note: removed unreadable checkpoint {unreadable.step:,}")
            return drive(setup, run_dir, console, restored, prepared, signals)


def _relaunched(
    launch: Launch, checkpoint_every: int | None, keep: int | None, watchdog: float | None
) -> Launch:
    """``launch`` with the options a resume gave (None: as saved)."""
    return dataclasses.replace(
        launch,
        checkpoint_every=launch.checkpoint_every if checkpoint_every is None else checkpoint_every,
        keep=launch.keep if keep is None else keep,
        watchdog=launch.watchdog if watchdog is None else watchdog,
    )


def _check_is_run(run_dir: Path) -> None:
    """ConfigError naming the runs inside ``run_dir`` when it is a logdir, not a run."""
    if run_dir.is_dir() and not (run_dir / "config.yaml").is_file():
        runs = sorted(p.name for p in run_dir.iterdir() if (p / "config.yaml").is_file())
        if runs:
            raise ConfigError(
                f"'{run_dir}' holds {len(runs)} run directories, not a run; resume one of "
                f"them, e.g. '{run_dir / runs[-1]}'"
            )


def restore_checkpoint(
    run_dir: str | Path, step: int | None = None
) -> tuple[Setup, checkpoint.Checkpoint, list[checkpoint.Unreadable]]:
    """The run's ``Setup``, checkpoint ``step`` (default: the newest readable one) and the
    error of each newer unreadable checkpoint skipped (one line each). ConfigError for a
    checkpoint whose agent state holds a non-finite array."""
    run_dir = Path(run_dir)
    _check_is_run(run_dir)
    checkpoint.pick_step(run_dir, step)  # a missing checkpoint is reported before the config
    setup = build(run_dir)
    restored, skipped = checkpoint.load_readable(
        run_dir, setup.saved_shape(), step, setup.shardings()
    )
    _check_finite(run_dir, restored)
    return setup, restored, skipped


def _check_finite(run_dir: Path, restored: checkpoint.Checkpoint) -> None:
    """ConfigError (one line, naming the run's other checkpoints) when the restored agent
    state holds a non-finite array (``guards.first_nonfinite_leaf``)."""
    try:
        where = f"checkpoint {restored.step} of '{run_dir}'"
        guards.check_finite_state(restored.state.agent_state, where)
    except guards.NonFinite as e:
        others = [str(s) for s in checkpoint.checkpoint_steps(run_dir) if s != restored.step]
        hint = f"other checkpoints: {', '.join(others)}" if others else "no other checkpoint"
        raise ConfigError(f"{e} ({hint})") from None


def restore(run_dir: str | Path, step: int | None = None) -> tuple[Any, Any, Experiment]:
    """Loads a trained agent: ``agent, agent_state, config = restore("runs/...")``.

    ``agent`` is rebuilt from the run's ``config.yaml``; ``agent_state`` is the agent's
    state at checkpoint ``step`` (default: the newest readable one), ready for
    ``agent.act(agent_state, obs, agent.init_carry(num_envs), key, False)``. For a run of
    several seeds or sweep points every leaf of ``agent_state`` has a leading member axis
    (``launch.yaml`` lists them). For a run of independent agents (``--agents``),
    ``agent`` and ``agent_state`` are tuples, one entry per player. ``config`` is the
    run's ``Experiment`` (``config.to_dict()``: its ``config.yaml``).
    Raises ``ConfigError`` (one line) for a missing or corrupt run or checkpoint, or one
    whose agent state holds a non-finite array.
    """
    setup, restored, _ = restore_checkpoint(run_dir, step)
    agent = setup.players or setup.agent
    return agent, restored.state.agent_state, setup.config
