"""Trials as programs: a batch of asked trials grouped by program shape, each group
trained as one vmapped program (``experiment.sweep``, zipped: one member per trial),
its evaluations reported to Optuna chunk by chunk and its members pruned.

A trial's options split into *continuous* ones (an agent's ``hparams``: ``lr``,
``gamma``, ``tau``...; one value per member of a vmapped program) and *structural* ones
(everything else: network sizes, ``n_step``, ``batch_size``, ``run.rollout_len``), which
change the program. Trials of a batch with the same structural values share a program.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
from rich.console import Console

from jaxrl import agents
from jaxrl.experiment import callbacks, guards
from jaxrl.experiment.config import Experiment
from jaxrl.experiment.run import Launch, run_experiment
from jaxrl.experiment.sweep import hparam_names
from jaxrl.tune.space import Param, sample, value
from jaxrl.types import ConfigError

REPORTER = "tune_trials"  # the callback name a group's launch.yaml records


def flat(config: Experiment) -> dict[str, Any]:
    """``{"agent.lr": 5e-4, "run.steps": 50000, "env.num_envs": 8, ...}`` of ``config``."""
    data = config.to_dict()
    return {f"{s}.{k}": v for s in ("agent", "env", "run") for k, v in data[s].items()}


def continuous_names(config: Experiment) -> set[str]:
    """``agent.NAME`` of every hyperparameter the agent keeps in ``hparams`` (vmappable)."""
    agent = agents.build(config.agent, config.env.make().spec)
    state = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
    return {f"agent.{n}" for n in hparam_names(getattr(state, "hparams", None))}


def is_continuous(param: Param, names: set[str]) -> bool:
    """Whether every option ``param`` sets is a continuous hyperparameter, with numbers."""
    numbers = all(isinstance(c, int | float) and not isinstance(c, bool) for c in param.choices)
    return all(n in names for n in param.names) and (numbers or not param.choices)


def suggest(trial: Any, params: Sequence[Param], base: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``trial`` trains with: every parameter sampled in the space's order,
    then turned into option values (``space.value``; the derived ones last, so that they
    read the sampled options they depend on)."""
    raws = {p.name: sample(trial, p) for p in params}
    out: dict[str, Any] = {}
    for p in sorted(params, key=lambda p: bool(p.quotient_of or p.of_steps)):
        v = value(p, raws[p.name], {**base, **out})
        out.update({name: v for name in p.names})
    return out


def groups(overrides: Sequence[Mapping[str, Any]], continuous: set[str]) -> list[list[int]]:
    """Indices of ``overrides`` grouped by their structural values, in first-seen order;
    with no continuous option, each its own group (they would be the same program)."""
    out: dict[Any, list[int]] = {}
    for i, o in enumerate(overrides):
        key = repr(sorted((n, v) for n, v in o.items() if n not in continuous))
        if not any(n in continuous for n in o):
            key += f" #{i}"
        out.setdefault(key, []).append(i)
    return list(out.values())


class Reporter:
    """The callback of one group's program: each chunk's evaluation reported to its
    member's trial (``trial.report(eval_return, step)``), and a trial the pruner stops told
    pruned (its member trains on inside the program; nothing counts it any more). Ends the
    program when every trial is pruned."""

    def __init__(self, study: Any, trials: Sequence[Any]):
        self.study, self.trials = study, list(trials)
        self.pruned: set[int] = set()

    def on_start(self, event: callbacks.Event) -> None:
        for trial in self.trials:
            trial.set_user_attr("run_dir", str(event.run_dir))

    def on_chunk(self, event: callbacks.Event) -> str | None:
        import optuna

        for trial, row in zip(self.trials, event.rows, strict=True):
            evaluation = row.get("eval_return", math.nan)
            if trial.number in self.pruned or not math.isfinite(evaluation):
                continue
            trial.report(float(evaluation), int(row["step"]))
            if trial.should_prune():
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                self.pruned.add(trial.number)
        return "every trial pruned" if len(self.pruned) == len(self.trials) else None


class Outcome(NamedTuple):
    """What became of a group's trials: final return (None: pruned, diverged or failed)."""

    trial: int
    final: float | None
    note: str


def run_group(
    study: Any,
    trials: Sequence[Any],
    overrides: Sequence[Mapping[str, Any]],
    make_config: Callable[[Mapping[str, Any]], Experiment],
    continuous: set[str],
    logdir: Path,
) -> list[Outcome]:
    """Trains ``trials`` (one structural shape) as one program under ``logdir`` and tells
    Optuna each result: the final evaluation, or pruned. A program that diverges
    (``guards.NonFinite``) is split in halves and each run again, so that one trial's
    divergence costs the others only time; a trial that diverges alone is told pruned
    (as RL Zoo does with NaN). A ``ConfigError`` (a combination of options jaxrl refuses)
    fails the group's trials with the message as their ``error``."""
    import optuna

    reporter = Reporter(study, trials)
    try:
        config = make_config({n: v for n, v in overrides[0].items() if n not in continuous})
        sweep = {
            n.partition(".")[2]: [float(o[n]) for o in overrides]
            for n in overrides[0]
            if n in continuous
        }
        callbacks.register(REPORTER, lambda: reporter)
        launch = Launch(sweep=sweep, zip_sweep=True, loggers=[], callbacks=[REPORTER])
        summary = run_experiment(config, logdir, Console(quiet=True), launch)
    except ConfigError as e:
        live = [t for t in trials if t.number not in reporter.pruned]
        for trial in live:
            trial.set_user_attr("error", str(e))
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return [Outcome(t.number, None, f"failed: {e}") for t in live]
    except guards.NonFinite as e:
        live = [i for i, t in enumerate(trials) if t.number not in reporter.pruned]
        done = [Outcome(t.number, None, "pruned") for t in trials if t.number in reporter.pruned]
        if len(trials) == 1 and live:
            trials[0].set_user_attr("diverged", str(e))
            study.tell(trials[0], state=optuna.trial.TrialState.PRUNED)
            return [Outcome(trials[0].number, None, "diverged")]
        half = len(live) // 2
        for part in filter(None, (live[:half], live[half:])):
            done += run_group(
                study,
                [trials[i] for i in part],
                [overrides[i] for i in part],
                make_config,
                continuous,
                logdir,
            )
        return done
    out = []
    for trial, final in zip(trials, summary.final_eval_returns, strict=True):
        if trial.number in reporter.pruned:
            out.append(Outcome(trial.number, None, "pruned"))
        else:
            study.tell(trial, float(final))
            out.append(Outcome(trial.number, float(final), f"{final:.1f}"))
    return out
