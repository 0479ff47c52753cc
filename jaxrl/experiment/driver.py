"""The chunk driver: runs a ``Setup``'s runner chunk after chunk, writing one metrics row
per chunk (per member for seed and sweep runs), saving a checkpoint every
``launch.checkpoint_every`` env steps and at the end, stopping early when an evaluation
reaches ``run.stop_return`` (single runs only; a seed or sweep run records each member's
first step at it instead), and closing with a greedy evaluation of at least
``report.FINAL_EPISODES`` episodes per member.

``prepare(setup, restored)`` builds the initial (or restored) state and compiles the chunk
before anything is written, so a mistake found while tracing leaves no run directory;
``drive(setup, run_dir, console, restored, prepared)`` serves a new run (``restored``
None) and a resumed one (a ``checkpoint.Checkpoint``): the ``Position`` saved in the
checkpoint's meta says where to go on from.

Between chunks the driver applies the ``guards``: a non-finite metric or agent state
raises ``guards.NonFinite`` before that state is saved (the CLI exits with code 3), a
finite loss that has left any plausible scale gets one ``warning:`` line, and
a SIGINT or SIGTERM (``guards.StopSignals``) ends the run after the current chunk with a
checkpoint and the summary, raising ``guards.Interrupted``. Then come the callbacks, in
one list: the run's own (``launch.callbacks``, ``experiment.callbacks``; one may stop the
run, which then ends as at ``stop_return``, its summary's ``stopped_by`` saying why) and
the built-in recorders (``experiment.recorders``: metric rows to their files and loggers,
periodic and final checkpoints, the progress line), called at the start, after each
chunk and at the end in the order ``experiment.callbacks`` states. What differs
between a fused and a host runner (jitting, what a checkpoint holds) comes from the
``Runner``; the driver has no case of its own.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import jax
import numpy as np
from rich.console import Console

from jaxrl.experiment import callbacks, checkpoint, guards, recorders, report
from jaxrl.experiment.histograms import make_collector
from jaxrl.experiment.logging import MetricsWriter
from jaxrl.experiment.setup import Setup
from jaxrl.runners.distributed.topology import is_primary


@dataclasses.dataclass
class Position:
    """Where a run is, as a checkpoint's meta records it: env steps and chunks done, metric
    rows written, best evaluation, first time ``stop_return`` was reached, run time (chunks
    only) and wall time (compiles included) before this process started."""

    steps: int = 0
    chunk: int = 0
    rows: int = 0
    best: float = math.nan
    first_solved: float | None = None
    run_time: float = 0.0
    time: float = 0.0
    first_solve_steps: list[int | None] | None = None  # per member
    stopped_at: tuple[int, float] | None = None  # the (step, return) a single run stopped at
    stopped_by: str | None = None  # "SPEC: reason" of the callback that stopped the run

    @classmethod
    def resumed(cls, meta: dict[str, Any], steps_per_chunk: int) -> Position:
        saved = {name: read(meta[name]) for name, read in SAVED.items() if name in meta}
        return cls(steps=saved.get("chunk", 0) * steps_per_chunk, **saved)

    def meta(self, now: float) -> dict[str, Any]:
        out = {"env_steps": self.steps, **{name: getattr(self, name) for name in SAVED}}
        out["time"] = now
        return out


_same: Callable[[Any], Any] = lambda value: value
# The fields of a ``Position`` that a checkpoint's meta records, each with how it is read.
SAVED: dict[str, Callable[[Any], Any]] = {
    "chunk": int,
    "rows": int,
    "best": report.nan_if_none,
    "first_solved": _same,
    "run_time": float,
    "time": float,
    "first_solve_steps": _same,
}


def compile_chunk(runner: Any, state: Any) -> Any:
    """``run_chunk`` compiled for ``state`` (donated), or as it is for a host runner."""
    if not runner.jittable:
        return runner.run_chunk
    return jax.jit(runner.run_chunk, donate_argnums=0).lower(state).compile()


def compile_evaluate(runner: Any, agent_state: Any, key: jax.Array) -> Any:
    if not runner.jittable:
        return runner.evaluate
    return jax.jit(runner.evaluate).lower(agent_state, key).compile()


@dataclasses.dataclass
class Prepared:
    """The state to start from and the compiled chunk (``prepare``)."""

    state: Any
    run_chunk: Any
    compile_time: float


def prepare(setup: Setup, restored: Any = None, warm: Any = None) -> Prepared:
    """The initial or restored runner state and the compiled chunk; a mistake found while
    tracing the program (a ``ConfigError``) is raised before any file is written.
    ``warm``: a function of the initial state giving a warm start's (``warmstart``)."""
    start = time.perf_counter()
    state = setup.resumed(restored.state) if restored is not None else setup.init_state()
    if warm is not None:
        state = warm(state)
    run_chunk = compile_chunk(setup.runner, state)
    return Prepared(state, run_chunk, time.perf_counter() - start)


class _Silent:
    """The metrics writer of a process other than 0 in a job of several: it writes nothing
    (process 0 writes the run's rows; every process computes them)."""

    takes_histograms = False

    def write(self, row: Any, member: int = 0) -> None:
        pass

    def finish(self, *args: Any) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc) -> None:
        pass


class _Driver:
    """One process's part of a run: the loop over chunks and what happens between them.

    A chunk reads top to bottom: run it, apply the guards, update the position, call the
    callbacks: the user's and the built-in recorders (``experiment.recorders``: rows to
    files and loggers, checkpoints, the progress line) in the order of
    ``experiment.callbacks``."""

    def __init__(
        self,
        setup: Setup,
        run_dir: Path,
        console: Console,
        restored: Any,
        signals: guards.StopSignals | None = None,
    ):
        self.setup, self.run_dir, self.console = setup, run_dir, console
        self.signals = signals or guards.StopSignals()
        self.guard = guards.NonFiniteGuard()
        self.layout = setup.runner.layout
        self.start = time.perf_counter()
        meta = restored.meta if restored is not None else {}
        self.position = Position.resumed(meta, self.layout.steps_per_chunk)
        if self.position.first_solve_steps is None:
            self.position.first_solve_steps = [None] * len(setup.members)
        self.writer = (
            MetricsWriter(
                run_dir,
                keep_rows=int(meta["rows"]) if restored is not None else None,
                purge_step=restored.step + 1 if restored is not None else None,
                loggers=setup.launch.loggers,
                config=setup.config.to_dict(),
                members=setup.members,
                batched=setup.launch.batched,
            )
            if is_primary()
            else _Silent()
        )
        self.saver = checkpoint.CheckpointWriter(run_dir, keep=setup.launch.keep)
        batched = setup.launch.batched
        wants = self.writer.takes_histograms and not batched and jax.process_count() == 1
        histograms = _histograms(setup) if wants else None
        self.watchdog = guards.Watchdog(
            setup.launch.watchdog,
            run_dir / "watchdog-stacks.txt",
            lambda: f"; {_stalled_hint(run_dir, setup.launch.watchdog)}",
        )
        self.bar = report.ProgressBar(
            console,
            self.layout.total_steps,
            self.position.steps,
            compiling=not setup.runner.jittable,  # a host runner compiles in its first chunk
        )
        writer = cast(MetricsWriter, self.writer)  # _Silent on other processes of a job
        self.log = recorders.MetricsLog(writer, self.position, batched, histograms)
        self.checkpointer = recorders.Checkpointer(
            self.saver,
            setup.launch.checkpoint_every,
            setup.runner.save,
            lambda: self.position.meta(self.now()),
            lambda: self.position.steps,
            restored.step if restored is not None else None,
        )
        films = setup.run_config.video_every > 0 and is_primary()
        videos = (
            [recorders.video_log(setup, writer, run_dir, lambda: self.position.steps)]
            if films
            else []
        )
        builtins = (self.log, *videos, self.checkpointer, recorders.Progress(self.bar))
        self.callbacks = callbacks.Callbacks(setup.launch.callbacks, builtins)

    def event(self, state: Any, rows: list[dict[str, Any]]) -> callbacks.Event:
        step = rows[0]["step"] if rows else self.position.steps
        total = self.layout.total_steps
        return callbacks.Event(
            step,
            self.position.chunk,
            total,
            rows,
            state,
            self.run_dir,
            self.setup,
            self.checkpointer.saved_step,
        )

    def now(self) -> float:
        """Wall seconds of the whole run so far, earlier processes' included."""
        return self.position.time + time.perf_counter() - self.start

    def rows(self, metrics: Any, chunk_start: float) -> list[dict[str, Any]]:
        """A chunk's metric rows (one per member) with the run's wall ``time`` and the
        chunk's env steps per second ``sps``; adds the chunk to ``position.run_time``."""
        pos = self.position
        chunk_time = time.perf_counter() - chunk_start
        pos.run_time += chunk_time
        now, sps = self.now(), self.layout.steps_per_chunk / chunk_time
        rows = report.member_rows(metrics, self.setup.members, self.setup.launch.batched)
        for row in rows:
            row["time"], row["sps"] = now, sps
        return rows

    def guards(self, state: Any, metrics: Any, chunk_start: float) -> None:
        """Raises ``guards.NonFinite`` (after writing the rows that show the divergence)
        for a non-finite metric or state; one ``warning:`` line for a diverging loss."""
        try:
            self.guard.check(state.agent_state, metrics, int(np.max(metrics["step"])))
        except guards.NonFinite:
            self.log.write_rows(self.rows(metrics, chunk_start))
            raise
        warning = self.guard.diverging(metrics)
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr, flush=True)

    def run_chunk(self, run_chunk: Any, state: Any) -> tuple[Any, bool]:
        """Runs one chunk, its guards and its callbacks; returns the state and whether the
        run should stop."""
        pos = self.position
        chunk_start = time.perf_counter()
        self.watchdog.chunk(pos.chunk + 1)
        state, metrics = run_chunk(state)
        pos.chunk += 1
        metrics = jax.device_get(metrics)
        self.watchdog.done()
        self.guards(state, metrics, chunk_start)
        rows = self.rows(metrics, chunk_start)
        pos.steps, eval_mean = rows[0]["step"], report.mean_eval(rows)
        if not math.isnan(eval_mean):
            pos.best = eval_mean if math.isnan(pos.best) else max(pos.best, eval_mean)
        pos.stopped_by = self.callbacks.chunk(self.event(state, rows))
        stop = self.setup.run_config.stop_return
        solves = cast(list[int | None], pos.first_solve_steps)  # set in __init__
        pos.first_solve_steps = report.first_solves(rows, stop, solves)
        if not self.setup.launch.batched and stop is not None and eval_mean >= stop:
            pos.first_solved, pos.stopped_at = self.now(), (pos.steps, eval_mean)
            return state, True
        if pos.stopped_by is not None:
            self.console.print(f"stopped by callback {pos.stopped_by} at step {pos.steps:,}")
            return state, True
        return state, False

    def train(self, state: Any, run_chunk: Any) -> Any:
        """Chunks until the run's end, its ``stop_return`` or a stop signal; the
        callbacks' ``on_end`` (the built-in ``Checkpointer``'s saves the last state). The
        metrics writer is the caller's to open and close (``drive``: the final evaluation
        is logged too)."""
        stopped = False
        with self.bar, self.saver, self.watchdog:
            self.callbacks.start(self.event(state, []))
            while self.position.chunk < self.layout.num_chunks and not stopped:
                if self.signals.requested is not None:
                    break
                state, stopped = self.run_chunk(run_chunk, state)
            self.callbacks.end(self.event(state, []))
        return state


def _histograms(setup: Setup) -> Any:
    """``collect(agent_state, key)`` of the evaluation histograms (``make_collector``), or
    None where the evaluation env has none; for independent agents each agent's under
    its label (``a0/q_values``, ...)."""
    agents = setup.players or (setup.agent,)
    collectors = [make_collector(a, setup.eval_env) for a in agents]
    if any(c is None for c in collectors):
        return None

    def collect(agent_state: Any, key: jax.Array) -> dict[str, Any]:
        out = {}
        for policy, c in zip(setup.policies(agent_state), cast(list[Any], collectors), strict=True):
            prefix = f"{policy.label}/" if policy.label else ""
            out.update({prefix + k: v for k, v in c(policy.state, key).items()})
        return out

    return collect


def rounds(eval_episodes: int) -> int:
    """Evaluations of ``eval_episodes`` episodes that make at least ``FINAL_EPISODES``."""
    return math.ceil(report.FINAL_EPISODES / eval_episodes)


def final_returns(
    evaluate: Any, agent_state: Any, key: jax.Array, members: int, episodes: int
) -> np.ndarray:
    """``[members, rounds * episodes]`` float64: ``rounds(episodes)`` greedy evaluations of
    ``episodes`` episodes of the final policy, the first with ``key`` (as a run's final
    evaluation always was), round ``r`` with ``fold_in(key, r)`` (per member for a batched
    ``key [M, 2]``)."""
    fold = jax.random.fold_in if key.ndim == 1 else jax.vmap(jax.random.fold_in, (0, None))
    out = []
    for r in range(rounds(episodes)):
        returns = evaluate(agent_state, key if r == 0 else fold(key, r))
        out.append(np.asarray(jax.device_get(returns), np.float64).reshape(members, -1))
    return np.concatenate(out, axis=1)


def announce(setup: Setup, run_dir: Path, console: Console, restored: Any) -> None:
    """The run's first line, and a note where ``--steps`` or ``--checkpoint-every`` is
    rounded up to whole chunks."""
    config, layout = setup.config, setup.runner.layout
    what = f"{len(setup.members)} members, " if setup.launch.batched else ""
    verb = f"resuming at step {restored.step:,}" if restored is not None else "->"
    console.print(
        f"[bold]jaxrl[/] {','.join(a.name for a in config.trained)} on {config.env.name} "
        f"({what}{config.env.num_envs} envs, preset: {config.preset}) {verb} {run_dir}"
    )
    chunk = layout.steps_per_chunk
    why = f"whole chunks of {chunk:,} env steps (run.log_every, rollout_len x num_envs)"
    if layout.total_steps != config.run.steps:
        console.print(
            f"note: steps {config.run.steps:,} rounded up to {layout.total_steps:,}: {why}"
        )
    every = setup.launch.checkpoint_every
    if every and every % chunk:
        console.print(f"note: checkpoints at the first chunk end past every {every:,}: {why}")


def _summary(driver: _Driver, compile_time: float, finals: np.ndarray) -> report.Summary:
    pos, run_cfg = driver.position, driver.setup.run_config
    members = len(driver.setup.members)
    return report.Summary(
        run_dir=driver.run_dir,
        steps=pos.steps,
        compile_time=compile_time,
        run_time=pos.run_time,
        sps=pos.steps * members / pos.run_time if pos.run_time else math.nan,
        final_eval_return=float(finals.mean()),
        best_eval_return=pos.best,
        first_solved_time=pos.first_solved,
        solved=pos.first_solved is not None,
        final_eval_returns=[float(f) for f in finals],
        final_eval_episodes=rounds(run_cfg.eval_episodes) * run_cfg.eval_episodes,
        target=run_cfg.stop_return,
        first_solve_steps=cast(list[int | None], pos.first_solve_steps),
        stopped_at_step=pos.stopped_at[0] if pos.stopped_at else None,
        stopped_at_return=pos.stopped_at[1] if pos.stopped_at else None,
        stopped_by=pos.stopped_by,
    )


def _resume_hint(run_dir: Path) -> str:
    return f"resume with: python -m jaxrl.train --resume {run_dir}"


def _stalled_hint(run_dir: Path, watchdog: float) -> str:
    """What a run ended by its watchdog can do: resume from its newest checkpoint, or,
    with none saved yet, run again with a longer (or no) watchdog."""
    if checkpoint.checkpoint_steps(run_dir):
        return _resume_hint(run_dir)
    return (
        f"no checkpoint was saved before it, so it cannot resume; where one chunk (its "
        f"evaluation included) takes longer than {watchdog:g} s, run again with a larger "
        f"--watchdog (0: off) or a shorter --run.log_every"
    )


def drive(
    setup: Setup,
    run_dir: Path,
    console: Console,
    restored: Any = None,
    prepared: Prepared | None = None,
    signals: guards.StopSignals | None = None,
) -> report.Summary:
    """Trains ``setup`` into ``run_dir`` from the start, or from checkpoint ``restored``.

    Raises ``guards.NonFinite`` when training diverges (nothing non-finite is saved) and
    ``guards.Interrupted`` after saving when ``signals`` saw SIGINT or SIGTERM.
    """
    if not is_primary():  # a job's process 0 alone prints and writes (runners.distributed.topology)
        console = Console(quiet=True)
    prepared = prepared or prepare(setup, restored)
    driver = _Driver(setup, run_dir, console, restored, signals)
    driver.signals.abort_message = lambda: (
        f"aborted at step {driver.position.steps:,} by a second signal; the newest complete "
        f"checkpoint is kept: {_resume_hint(run_dir)}"
    )
    announce(setup, run_dir, console, restored)
    with driver.writer:
        return _train_and_evaluate(driver, prepared)


def _train_and_evaluate(driver: _Driver, prepared: Prepared) -> report.Summary:
    """The chunks, then (unless a signal stopped the run before its end) the final
    evaluation, the summary written, logged and printed."""
    setup, run_dir, console = driver.setup, driver.run_dir, driver.console
    runner, run_cfg = setup.runner, setup.run_config
    _, eval_key = setup.keys()
    state = driver.train(prepared.state, prepared.run_chunk)
    requested, pos = driver.signals.requested, driver.position
    early = pos.first_solved is not None or pos.stopped_by is not None
    if requested is not None and pos.chunk < driver.layout.num_chunks and not early:
        if is_primary():
            summary = _summary(driver, prepared.compile_time, np.full(1, np.nan))
            report.write_summary(summary, run_dir)
        name = signal.Signals(requested).name
        raise guards.Interrupted(
            f"stopped by {name} at step {driver.position.steps:,} of "
            f"{driver.layout.total_steps:,}; checkpoint saved; {_resume_hint(run_dir)}",
            requested,
        )

    compile_start = time.perf_counter()
    with report.compiling(console, "the evaluation program"):
        evaluate = compile_evaluate(runner, state.agent_state, eval_key)
    compile_time = prepared.compile_time + time.perf_counter() - compile_start
    members, episodes = len(setup.members), run_cfg.eval_episodes
    finals = final_returns(evaluate, state.agent_state, eval_key, members, episodes).mean(axis=1)
    summary = _summary(driver, compile_time, finals)
    batched = setup.launch.batched
    if batched:
        summary = report.across_members(summary, setup.members)
    if is_primary():
        report.write_summary(summary, run_dir)
        driver.writer.finish(pos.steps, list(finals), report.summary_dict(summary))
    report.print_summary(
        summary, setup.members, batched, run_cfg.eval_episodes, run_cfg.stop_return, console
    )
    return summary
