"""Guards of a training run between chunks: non-finite values and stop signals.

* ``NonFiniteGuard`` checks, after every chunk, every floating-point array of the agent
  state (parameters, target parameters, optimizer state, normalization statistics; the
  replay buffer's stored experience is the env's and the hyperparameters are the
  validated config's, infinite where that means "no clip", so both are left out) and
  every logged metric. A
  metric of ``+-inf`` (NaN is the runners' "not computed this iteration", e.g. the loss
  before ``learning_starts``; a NaN loss makes the parameters NaN) or any non-finite
  array of the agent state raises ``NonFinite``: the driver stops
  before saving that state, so the checkpoints on disk stay finite and ``--keep`` never
  rotates a finite one away for a diverged one. The CLIs exit with code 3.
* ``NonFiniteGuard.diverging`` warns (one ``warning:`` line on stderr, once a run) when a
  loss is finite but has left any plausible scale: past ``DIVERGENCE_FLOOR`` (1e10) and
  ``DIVERGENCE_GROWTH`` (1e6) times the magnitude it first had in the run. The run goes
  on: a large finite loss is not wrong in itself (unscaled rewards give critic losses of
  1e4 to 1e6 on MuJoCo and MountainCarContinuous, and a user may be sweeping the
  learning rate on purpose), and its state is still usable, so stopping is kept for the
  unambiguous case of a non-finite value. The line names the step, the metric and its
  value, so a user can stop the run (Ctrl-C saves it) and lower the learning rate.
* ``StopSignals`` turns SIGINT and SIGTERM into a request to stop after the current
  chunk (the driver then saves a checkpoint, writes the summary and raises
  ``Interrupted``); a second signal aborts at once, from a watcher thread woken through
  ``signal.set_wakeup_fd``, even while the main thread is inside a compiled chunk. An
  abort never leaves a checkpoint a resume would pick: Orbax writes into a temporary
  directory that ``checkpoint.checkpoint_steps`` ignores.
* ``Watchdog`` ends a run whose chunk makes no progress for ``--watchdog`` seconds, with
  one line saying where the stacks of its threads were written (exit code 4).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

NONFINITE_EXIT = 3


class NonFinite(Exception):
    """A diverged run or checkpoint; the message is one line naming the step and what."""


class Interrupted(Exception):
    """A run stopped by ``signum`` after saving; ``exit_code`` is ``128 + signum``."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _checked(path: tuple) -> bool:
    """Whether a leaf of the agent state is checked: not the replay buffer's contents, and
    not the hyperparameters, set from the validated config and infinite where that is
    their meaning (PPO's ``value_loss_clip`` when the config has None)."""
    names = [str(getattr(k, "name", getattr(k, "key", ""))) for k in path]
    return "buffer" not in names and "hparams" not in names


def _finite_flags(agent_state: Any) -> list[jax.Array]:
    flags = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(agent_state):
        if _checked(path) and jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.inexact):
            flags.append(jnp.isfinite(leaf).all())
        else:
            flags.append(jnp.bool_(True))
    return flags


def first_nonfinite_leaf(agent_state: Any, flags: list[Any] | None = None) -> str | None:
    """The key path of the first non-finite floating-point array of ``agent_state`` (the
    replay buffer's experience excluded), or None when all are finite."""
    if flags is None:
        flags = _finite_flags(agent_state)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(agent_state)]
    for path, ok in zip(paths, flags, strict=True):
        if not bool(ok):
            return path
    return None


DIVERGENCE_FLOOR = 1e10
DIVERGENCE_GROWTH = 1e6


class NonFiniteGuard:
    """Checks each chunk's metrics and the agent state after it (see module docstring)."""

    def __init__(self) -> None:
        self._flags = jax.jit(_finite_flags)
        self._scale: dict[str, float] = {}  # each loss's first finite magnitude
        self._warned = False

    def diverging(self, metrics: Mapping[str, np.ndarray]) -> str | None:
        """A one-line warning, the first time in the run that a finite loss (a metric with
        ``loss`` in its name) of a chunk's ``{name: [iterations]}`` (or ``[members,
        iterations]``) exceeds ``max(DIVERGENCE_FLOOR, DIVERGENCE_GROWTH * s)``, ``s`` its
        first finite magnitude in earlier chunks (the floor alone before there is one);
        None otherwise. It names the iteration's ``step``, the metric and the value."""
        if self._warned:
            return None
        steps = np.asarray(metrics["step"])
        steps = steps.reshape(-1, steps.shape[-1]) if steps.ndim else steps[None, None]
        first = None
        for name in sorted(k for k in metrics if "loss" in k):
            values = np.abs(np.asarray(metrics[name], np.float64))
            values = values.reshape(-1, values.shape[-1]) if values.ndim else values[None, None]
            values = np.where(np.isfinite(values), values, np.nan)
            bound = max(DIVERGENCE_FLOOR, DIVERGENCE_GROWTH * self._scale.get(name, 0.0))
            with np.errstate(invalid="ignore"):
                over = (values > bound).any(axis=0)
            if over.any():
                i = int(np.argmax(over))
                if first is None or i < first[0]:
                    first = (i, name, float(np.nanmax(values[:, i])), bound)
            seen = values[np.isfinite(values) & (values > 0)]
            if name not in self._scale and seen.size:
                self._scale[name] = float(seen[0])
        if first is None:
            return None
        self._warned = True
        i, name, value, bound = first
        return (
            f"{name} = {value:.3g} at step {int(steps[0, i]):,} is past {bound:.3g}"
            "; training looks diverged (lower the learning rate?); Ctrl-C stops it and saves"
        )

    def metric(self, metrics: Mapping[str, np.ndarray]) -> tuple[int, str, float] | None:
        """``(iteration, name, value)`` of the first infinite metric of a chunk's
        ``{name: [iterations]}`` (or ``[members, iterations]``), or None. NaN is the
        runners' "not computed this iteration" (a loss before ``learning_starts``, TD3's
        delayed actor loss, an iteration without evaluation), so a NaN loss is caught
        through the parameters it makes NaN."""
        first = None
        for name, values in metrics.items():
            values = np.asarray(values, np.float64)
            values = values.reshape(-1, values.shape[-1]) if values.ndim else values[None, None]
            bad = np.isinf(values).any(axis=0)
            if bad.any():
                i = int(np.argmax(bad))
                if first is None or i < first[0]:
                    first = (i, name, float(values[:, i][np.isinf(values[:, i])][0]))
        return first

    def check(self, agent_state: Any, metrics: Mapping[str, np.ndarray], step: int) -> None:
        """Raises ``NonFinite`` naming the step and the metric or array at fault."""
        found = self.metric({k: v for k, v in metrics.items() if k != "step"})
        if found is not None:
            i, name, value = found
            steps = np.asarray(metrics["step"]).reshape(-1, np.shape(metrics["step"])[-1])
            raise NonFinite(
                f"non-finite {name} = {value} at step {int(steps[0, i]):,}; the run stopped "
                "and its last finite checkpoint is kept (lower the learning rate?)"
            )
        flags = jax.device_get(self._flags(agent_state))
        if not all(bool(f) for f in flags):
            leaf = first_nonfinite_leaf(agent_state, flags)
            raise NonFinite(
                f"non-finite agent state {leaf} at step {step:,}; the run stopped and its "
                "last finite checkpoint is kept (lower the learning rate?)"
            )


def check_finite_state(agent_state: Any, where: str) -> None:
    """Raises ``NonFinite`` when a restored agent state holds a non-finite array."""
    leaf = first_nonfinite_leaf(agent_state)
    if leaf is not None:
        raise NonFinite(f"{where} holds non-finite values ({leaf}); refusing to use it")


class StopSignals:
    """While entered (in the main thread), SIGINT and SIGTERM request a stop at the end of
    the chunk (``requested``); a second one prints ``abort_message()`` and exits at once
    with ``128 + signum``. Elsewhere (not the main thread) it does nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: int | None = None
        self.abort_message = lambda: "aborted"
        self._previous: dict[int, Any] = {}
        self._wakeup: int | None = None
        self._pipe: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None

    def _note(self, signum: int) -> None:
        if self.requested is None:
            self.requested = signum
            name = signal.Signals(signum).name
            print(
                f"{name}: stopping after this chunk to save a checkpoint (again to abort now)",
                flush=True,
            )
        elif signum != 0:
            print(f"error: {self.abort_message()}", file=sys.stderr, flush=True)
            os._exit(128 + signum)

    def _handler(self, signum: int, frame: Any) -> None:
        pass  # the watcher thread, woken by the wakeup fd, does the work at once

    def _watch(self) -> None:
        read = cast(tuple[int, int], self._pipe)[0]
        while True:
            try:
                data = os.read(read, 64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in self.SIGNALS:
                    self._note(signum)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        self._pipe = os.pipe()
        os.set_blocking(self._pipe[1], False)
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handler)
        self._wakeup = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, daemon=True, name="jaxrl-signals")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._pipe is None:
            return
        signal.set_wakeup_fd(self._wakeup if self._wakeup is not None else -1)
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        os.close(self._pipe[1])
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        os.close(self._pipe[0])
        self._pipe = None


WEDGED_EXIT = 4


class Watchdog:
    """A thread that ends the process when one chunk runs longer than ``timeout`` seconds
    (a wedged program makes no progress and prints nothing, which is worse than a crash).

    ``chunk(n)`` marks chunk ``n`` started, ``done()`` finished. On a stall it writes the
    Python stack of every thread (``faulthandler``; a native stack needs ``py-spy dump``
    or ``gdb`` on the pid it names) to ``stack_file``, prints one line with the chunk,
    the time waited and where the stack is, and exits with ``WEDGED_EXIT``. Metric rows
    and checkpoints already written stay: they are flushed as they are written, and the
    state inside the stuck chunk cannot be reached. ``timeout`` 0 turns it off.
    """

    def __init__(self, timeout: float, stack_file: Any, hint: Callable[[], str] = lambda: ""):
        self.timeout, self.stack_file, self.hint = timeout, stack_file, hint
        self._started: tuple[int, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def chunk(self, number: int) -> None:
        self._started = (number, time.monotonic())

    def done(self) -> None:
        self._started = None

    def _watch(self) -> None:
        period = min(1.0, self.timeout / 4)
        while not self._stop.wait(period):
            started = self._started
            if started is None or time.monotonic() - started[1] < self.timeout:
                continue
            number, since = started
            waited = time.monotonic() - since
            try:
                with open(self.stack_file, "w") as f:
                    f.write(f"pid {os.getpid()}: chunk {number} stalled for {waited:.0f} s\n")
                    faulthandler.dump_traceback(f, all_threads=True)
                where = f"Python stacks of all threads in {self.stack_file}"
            except OSError as e:
                where = f"no stack dump ({e.strerror})"
            print(
                f"error: chunk {number} made no progress for {waited:.0f} s (--watchdog "
                f"{self.timeout:g}); {where}; native: py-spy dump --native --pid {os.getpid()}"
                f"{self.hint()}",
                file=sys.stderr,
                flush=True,
            )
            os._exit(WEDGED_EXIT)
            return  # (a test's stand-in for os._exit returns)

    def __enter__(self) -> Watchdog:
        if self.timeout > 0:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="jaxrl-watchdog")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def exit_with(code: int) -> None:
    """``sys.exit(code)`` for a command-line entry point. For exit code 2 (a user's
    mistake, already reported in one line on stderr) stderr is closed first: Orbax's
    abandoned reads of an unreadable checkpoint can print "Event loop is closed"
    tracebacks from its I/O threads while the interpreter shuts down, after that line."""
    if code == 2:
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    sys.exit(code)
