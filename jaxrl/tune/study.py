"""The study: Optuna's database opened or created, a stopped study's trials recovered,
and the best trial's config written as a preset-format YAML.

A study records the command that started it (agent, env, preset, space, steps, seed,
overrides) as its user attribute ``command``; a restart with other values is refused, so
that one study never mixes two searches. A trial left ``RUNNING`` by a process that was
stopped (Ctrl-C, ``kill``, a crash) is failed with the user attribute ``interrupted`` and
its parameters asked again (``enqueue_trial``, the user attribute ``retry_of`` naming
it), so a restarted study trains the same trials it had asked. One process per study: a
second process on the same study would fail the first one's running trials.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from jaxrl.types import ConfigError

DB_FILE, BEST_FILE = "study.db", "best.yaml"
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first bytes of every SQLite database file


def optuna_module() -> Any:
    """``optuna``, quiet but for warnings; ConfigError when it is not installed."""
    try:
        import optuna
    except ImportError:
        raise ConfigError("jaxrl tune needs Optuna: pip install 'jaxrl[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def open_storage(url: str) -> Any:
    """Optuna's RDB storage at ``url`` (any SQLAlchemy URL Optuna accepts); ConfigError
    (one line) when it cannot be opened: a bad URL, a missing driver, a directory that
    does not exist, a file that is not a database."""
    optuna = optuna_module()
    _check_sqlite_file(url)
    try:
        return optuna.storages.RDBStorage(url)
    except Exception as e:  # SQLAlchemy's, a driver's ImportError, Optuna's ValueError
        text = " ".join(str(getattr(e, "orig", None) or e).split())
        raise ConfigError(f"--storage '{url}' cannot be opened: {text[:300]}") from None


def _check_sqlite_file(url: str) -> None:
    """ConfigError for a SQLite URL naming a file that holds something other than a
    SQLite database (SQLite would take a file of a few bytes over as a new database)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return  # RDBStorage says what is wrong with it
    path = Path(parsed.database or "")
    if not parsed.drivername.startswith("sqlite") or not path.is_file():
        return
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise ConfigError(f"--storage '{url}': '{path}' is not a SQLite database")


def load(
    storage: Any, name: str, command: Mapping[str, Any], sampler: Any, pruner: Any
) -> tuple[Any, list[str]]:
    """The study ``name`` (created, or loaded to go on), and a note per trial a stopped
    process left running (failed and asked again); ConfigError when an existing study was
    started by another command."""
    optuna = optuna_module()
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        sampler=sampler,
        pruner=pruner,
        direction="maximize",
        load_if_exists=True,
    )
    saved = study.user_attrs.get("command")
    if saved is None:
        study.set_user_attr("command", dict(command))
    elif saved != dict(command):
        differ = [k for k in command if saved.get(k) != command[k]]
        raise ConfigError(
            f"study '{name}' was started with {differ[0]} = {saved.get(differ[0])!r}, not "
            f"{command[differ[0]]!r}; resume it with the same options or give a new --study-name"
        )
    return study, recover(study)


def recover(study: Any) -> list[str]:
    """Fails each trial left ``RUNNING`` and enqueues its parameters again; a note each."""
    optuna = optuna_module()
    notes = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        optuna.trial.Trial(study, trial._trial_id).set_user_attr("interrupted", True)
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})
        notes.append(
            f"trial {trial.number} was interrupted: marked failed, its parameters asked again"
        )
    return notes


def finished(study: Any) -> int:
    """Trials done: complete, pruned, or failed other than by an interruption."""
    optuna = optuna_module()
    states = optuna.trial.TrialState
    done = (states.COMPLETE, states.PRUNED, states.FAIL)
    trials = study.get_trials(deepcopy=False, states=done)
    return sum(not t.user_attrs.get("interrupted") for t in trials)


def write_best(
    study: Any, preset_form: Callable[[Mapping[str, Any]], dict[str, Any]], path: Path
) -> Any:
    """Writes ``path``: the best complete trial's config as a preset is written (the
    options the study's preset and command set, and the trial's; ``preset_form``) with a
    header naming the study and trial; returns the trial, or None (nothing written)
    before any trial completed."""
    optuna = optuna_module()
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not complete:
        return None
    best = study.best_trial
    overrides = best.user_attrs["overrides"]
    data = preset_form(overrides)
    searched = ", ".join(f"{k}={v}" for k, v in overrides.items())
    header = [
        f"# The best trial of study '{study.study_name}': trial {best.number}, final "
        f"evaluation return {best.value:.2f},",
        f"# written by jaxrl tune on {datetime.date.today().isoformat()}; trained with "
        f"`python -m jaxrl.train --config {path.name}`.",
        f"# Searched: {searched}",
    ]
    tmp = path.with_name(f".{path.name}.tmp")
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    tmp.write_text("\n".join(header) + "\n" + body)
    os.replace(tmp, path)
    return best
