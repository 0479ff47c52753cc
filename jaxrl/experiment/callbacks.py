"""Hooks into the training loop: callbacks the driver runs on the host between chunks.

A callback is an object with any of three methods (after Emote's ``Callback``, whose
``begin_training``/``end_cycle``/``end_training`` these mirror, and RLHive's scheduled
loggers), or a plain function, which is called as ``on_chunk``::

    on_start(event: Event) -> None           # before the first chunk of this process
    on_chunk(event: Event) -> str | None     # after every chunk; a non-empty str stops
    on_end(event: Event) -> None             # after the last chunk and the last checkpoint

The driver's own recording is written as callbacks too (``experiment.recorders``:
``MetricsLog`` writes the rows to the files and loggers, ``Checkpointer`` saves, ``Progress``
moves the console's line), run in one list with a user's, in this order (the contract):

* ``on_start`` and ``on_end``: the built-ins first, then the user's callbacks in the order
  given, so a user's ``on_end`` runs after the final checkpoint is on disk
  (``event.checkpoint_step == event.step``);
* ``on_chunk``: after the chunk's non-finite guard passed, the user's callbacks first, then
  ``MetricsLog``, ``Checkpointer`` and ``Progress``. So a callback logs more by adding keys
  to the rows in ``event.rows`` (one per member; they reach ``metrics.jsonl``,
  ``metrics.csv`` (whose header the first row fixes) and the loggers), and
  ``event.checkpoint_step`` is the newest checkpoint before this chunk's (None if none):
  this chunk's checkpoint, if one is due, is written after its rows.

Returning a reason (a non-empty string) from ``on_chunk`` ends the run after this chunk
as ``run.stop_return`` does: a checkpoint, the final evaluation, and a summary whose
``stopped_by`` reads ``"SPEC: reason"`` (exit code 0). ``event.state`` is the runner
state on the device (``event.state.agent_state``; every leaf with a leading member axis
for a ``--seeds``/``--sweep`` run); a callback reads it and must not keep it past the call
(the next chunk donates its buffers).

Callbacks are named in ``launch.yaml``'s ``callbacks`` (``--callback SPEC``, repeatable),
so that a resumed run has them again. A SPEC is

* ``NAME`` or ``NAME:key=value,key=value``: a registered factory called with those
  keyword arguments (values read as YAML scalars): ``register(name, factory)``, or a
  built-in: ``export`` (``jaxrl.export.callback.PeriodicExport``: ``every``, ``format``,
  ``batch``) and ``stop_when`` (``StopWhen``: ``metric``, ``above``, ``below``);
* ``MODULE:ATTR``: an attribute of an importable module (``importlib``; never ``eval``):
  a class is instantiated with no arguments, anything else is used as it is.

Built-ins are named by ``"module:attr"`` strings and imported when used, so this module
imports nothing above ``jaxrl.experiment``. A SPEC that names nothing valid is a
``ConfigError`` with one line, found before the run directory is created (or, for a
resume, before anything is changed); restoring, evaluating or exporting a run does not
import its callbacks.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from jaxrl import trust
from jaxrl.types import ConfigError

HOOKS = ("on_start", "on_chunk", "on_end")
_REGISTRY: dict[str, Callable[..., Any] | str] = {
    "export": "jaxrl.export.callback:PeriodicExport",
    "stop_when": "jaxrl.experiment.callbacks:StopWhen",
}


@dataclasses.dataclass
class Event:
    """What a callback is handed: ``step`` (env steps done, per member), ``chunk`` (chunks
    done), ``total_steps``, ``rows`` (this chunk's metric rows, one per member; empty for
    ``on_start``/``on_end``), ``state`` (the runner state), ``run_dir``, ``setup``
    (``experiment.setup.Setup``: ``agent``, ``env``, ``cfg``, ``launch``, ``members``) and
    ``checkpoint_step``: the env step of the run's newest checkpoint (None before the
    first), set by the built-in ``Checkpointer`` (see the module docstring for when)."""

    step: int
    chunk: int
    total_steps: int
    rows: list[dict[str, Any]]
    state: Any
    run_dir: Path
    setup: Any
    checkpoint_step: int | None = None

    @property
    def agent_state(self) -> Any:
        return self.state.agent_state

    @property
    def batched(self) -> bool:
        return bool(self.setup.launch.batched)


def register(name: str, factory: Callable[..., Any]) -> None:
    """Makes ``--callback NAME[:key=value,...]`` call ``factory(**kwargs)``; a name may be
    registered again (the newest wins), e.g. when a notebook cell is run twice."""
    if not name.isidentifier():
        raise ConfigError(f"callback name '{name}' must be an identifier (letters, _, digits)")
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY)


def _kwargs(spec: str, text: str) -> dict[str, Any]:
    out = {}
    for item in filter(None, text.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip().isidentifier():
            raise ConfigError(f"--callback '{spec}': '{item}' is not key=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _attr(spec: str, target: str, user: bool = False) -> Any:
    """The attribute ``target`` (``MODULE:ATTR``) of callback ``spec``; ``user``: a name a
    user gave, which imports only a module the command line named (``jaxrl.trust``)."""
    module_name, _, attr = target.partition(":")
    try:
        if user:
            module = trust.import_module(module_name, f"--callback '{spec}'")
        else:
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(
            f"--callback '{spec}': cannot import '{module_name}' ({e}); registered: "
            f"{', '.join(available())}, or MODULE:ATTR"
        ) from None
    if not attr or not hasattr(module, attr):
        raise ConfigError(f"--callback '{spec}': module '{module_name}' has no '{attr}'")
    return getattr(module, attr)


def resolve(spec: str) -> Any:
    """The callback object ``spec`` names (see the module docstring)."""
    name, colon, rest = spec.partition(":")
    if name in _REGISTRY:
        factory = _REGISTRY[name]
        if isinstance(factory, str):
            factory = _attr(spec, factory)
        kwargs = _kwargs(spec, rest)
        try:
            callback = factory(**kwargs)
        except TypeError as e:
            raise ConfigError(f"--callback '{spec}': {e}") from None
    elif colon and "=" not in rest:
        callback = _attr(spec, spec, user=True)
        if isinstance(callback, type):
            callback = callback()
    else:
        raise ConfigError(
            f"unknown --callback '{spec}'; registered: {', '.join(available())}, or "
            "MODULE:ATTR of an importable module"
        )
    if not callable(callback) and not any(hasattr(callback, h) for h in HOOKS):
        raise ConfigError(
            f"--callback '{spec}' is neither callable nor has any of {', '.join(HOOKS)}"
        )
    _check_hooks(spec, callback)
    return callback


def _check_hooks(spec: str, callback: Any) -> None:
    """ConfigError (one line) for a hook that cannot be called as ``hook(event)``."""
    import inspect

    hooks = [(h, getattr(callback, h)) for h in HOOKS if hasattr(callback, h)]
    if not hooks:
        hooks = [("on_chunk", callback)]  # a plain function is called as on_chunk
    for hook, fn in hooks:
        if not callable(fn):
            raise ConfigError(
                f"--callback '{spec}': {hook} is a {type(fn).__name__}, not a function"
            )
        try:
            inspect.signature(fn).bind(None)
        except TypeError:
            raise ConfigError(
                f"--callback '{spec}': {hook} must take one argument, the event "
                f"({hook}(event)); it takes {inspect.signature(fn)}"
            ) from None
        except ValueError:  # no signature to inspect: called as it is
            continue


def check(specs: Sequence[str], resolve_them: bool = False) -> list[str]:
    """``specs`` as a list of strings; with ``resolve_them`` each is also resolved once
    (ConfigError for one that names nothing). A run's ``launch.yaml`` is read without
    resolving, so that restoring, evaluating or exporting a run never needs its callbacks'
    modules; training and resuming resolve them before anything is written."""
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, str):
            raise ConfigError(f"--callback takes NAME[:k=v,...] or MODULE:ATTR, got {spec!r}")
        if resolve_them:
            resolve(spec)
    return specs


class Callbacks:
    """The run's callbacks, each kept with its spec, and the driver's ``builtins``
    (``experiment.recorders``); calls their hooks in the order of the module docstring:
    built-ins first at the start and the end, last after a chunk."""

    def __init__(self, specs: Sequence[str], builtins: Sequence[Any] = ()):
        self.items = [(spec, resolve(spec)) for spec in specs]
        self.builtins = [(type(b).__name__, b) for b in builtins]

    def _call(self, hook: str, event: Event, items) -> list[tuple[str, Any]]:
        out = []
        for spec, callback in items:
            fn = getattr(callback, hook, None)
            if fn is None and hook == "on_chunk" and callable(callback):
                fn = callback
            if fn is not None:
                out.append((spec, fn(event)))
        return out

    def start(self, event: Event) -> None:
        self._call("on_start", event, self.builtins + self.items)

    def chunk(self, event: Event) -> str | None:
        """Runs every ``on_chunk``; the first stop as ``"SPEC: reason"``, else None."""
        done = self._call("on_chunk", event, self.items + self.builtins)
        stops = [f"{spec}: {why}" for spec, why in done if why]
        return stops[0] if stops else None

    def end(self, event: Event) -> None:
        self._call("on_end", event, self.builtins + self.items)


class StopWhen:
    """Stops the run at the first chunk whose ``metric`` (the mean over members of the
    chunk's rows, NaN skipped) is ``>= above`` or ``<= below``.

    ``--callback stop_when:metric=loss,below=0.01``; a metric the rows lack is a
    ConfigError at the first chunk."""

    def __init__(self, metric: str, above: float | None = None, below: float | None = None):
        if above is None and below is None:
            raise ConfigError("--callback stop_when needs above=X or below=X")
        self.metric, self.above, self.below = metric, above, below

    def on_chunk(self, event: Event) -> str | None:
        if any(self.metric not in row for row in event.rows):
            have = ", ".join(event.rows[0]) if event.rows else "none"
            raise ConfigError(f"stop_when: no metric '{self.metric}' in the rows; have: {have}")
        values = np.asarray([row[self.metric] for row in event.rows], np.float64)
        if np.isnan(values).all():
            return None
        value = float(np.nanmean(values))
        if self.above is not None and value >= self.above:
            return f"{self.metric} {value:g} >= {self.above:g}"
        if self.below is not None and value <= self.below:
            return f"{self.metric} {value:g} <= {self.below:g}"
        return None
