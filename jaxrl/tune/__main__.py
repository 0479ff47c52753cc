"""``python -m jaxrl.tune`` (``jaxrl tune``): search hyperparameters with Optuna.

Examples::

    jaxrl tune --agent dqn --env CartPole --trials 32 --steps 50000
    jaxrl tune --agent ppo --env CartPole --space builtin-continuous --batch 16
    jaxrl tune --agent dqn --env CartPole --space my_space.yaml --storage postgresql://...

Asks ``--batch`` trials at a time (Optuna's ask-and-tell), trains the trials that share a
program shape as one vmapped program (``tune.trials``), reports each chunk's evaluation
and prunes, until the study holds ``--trials`` finished trials. The study lives in
``LOGDIR/NAME/``: ``study.db`` (unless ``--storage`` names another database), the
programs' run directories under ``runs/``, and ``best.yaml``, the best trial's config,
which ``python -m jaxrl.train --config`` trains. The same command run again resumes the
study (``tune.study``). A user's mistake is one line and exit code 2, before anything is
written; Ctrl-C stops after the current chunk (exit code 130).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxrl.experiment.guards import Interrupted
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser

PRUNERS, SAMPLERS = ("median", "halving", "none"), ("tpe", "random")


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, Any]]:
    """The flags, and the dotted overrides every trial shares (``--agent.n_step 3``)."""
    from jaxrl.experiment.config import parse_override

    parser = ArgumentParser(
        prog="jaxrl tune",
        usage="%(prog)s --agent NAME --env NAME [options] [--agent.KEY VALUE ...]",
        description="Search an agent's hyperparameters with Optuna; trials that share a "
        "program shape train as one vmapped program. Dotted overrides (--agent.n_step 3) hold "
        "for every trial.",
    )
    parser.add_argument("--agent", default="dqn", help="agent name (dqn)")
    parser.add_argument("--env", default="CartPole-v1", help="environment name (CartPole-v1)")
    parser.add_argument("--preset", metavar="NAME", help="start from this preset")
    parser.add_argument(
        "--space",
        default="builtin",
        metavar="FILE|builtin|builtin-continuous",
        help="search space: a YAML file, RL Zoo's (builtin) or its vmappable part",
    )
    parser.add_argument("--trials", type=int, default=16, help="finished trials (16)")
    parser.add_argument("--batch", type=int, default=8, help="trials asked at once (8)")
    parser.add_argument("--study-name", metavar="NAME", help="(default: AGENT-ENV)")
    parser.add_argument("--storage", metavar="URL", help="database URL (LOGDIR/NAME/study.db)")
    parser.add_argument("--pruner", choices=PRUNERS, default="median", help="(median)")
    parser.add_argument("--sampler", choices=SAMPLERS, default="tpe", help="(tpe)")
    parser.add_argument("--steps", type=int, help="env steps per trial (the preset's)")
    parser.add_argument("--num-envs", type=int, help="parallel environments (the preset's)")
    parser.add_argument("--seed", type=int, help="every trial's seed, and the sampler's (0)")
    parser.add_argument("--logdir", default="tunes", help="parent of study folders (tunes)")
    args, rest = parser.parse_known_args(argv)
    overrides: dict[str, Any] = {}
    while rest:
        token = rest.pop(0)
        key, eq, text = token[2:].partition("=")
        if not token.startswith("--") or "." not in key or not (eq or rest):
            raise ConfigError(f"unrecognized argument '{token}'; overrides look like --agent.KEY V")
        overrides[key] = parse_override(text if eq else rest.pop(0))
    for flag, value in (("--trials", args.trials), ("--batch", args.batch)):
        if value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    return args, overrides


def _sampler(optuna: Any, name: str, seed: int) -> Any:
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)


def _pruner(optuna: Any, name: str, steps: int) -> Any:
    """RL Zoo's choices: the median rule after 5 trials and a third of the run, or
    successive halving; ``none`` never prunes."""
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=steps // 3)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


class Search:
    """One ``jaxrl tune`` command: the base config, the space, and how to make a trial's
    config; checked whole before anything is written."""

    def __init__(self, args: argparse.Namespace, overrides: Mapping[str, Any]):
        from jaxrl.tune import space, trials

        self.args, self.overrides = args, dict(overrides)
        self.base = self.config({})
        self.continuous = trials.continuous_names(self.base)
        params = space.load(args.space, self.base.agent.name)
        if args.space == space.CONTINUOUS:
            params = [p for p in params if trials.is_continuous(p, self.continuous)]
        self.params = params
        self.flat = trials.flat(self.base)
        self.check_space()

    def config(self, chosen: Mapping[str, Any]) -> Any:
        """The config of a trial's (or a program's) ``chosen`` options."""
        from jaxrl.experiment.config import resolve

        flags = ("agent", "env", "preset", "steps", "seed", "num_envs")
        given = {flag: getattr(self.args, flag) for flag in flags}
        return resolve(**given, overrides={**self.overrides, **chosen})

    def preset_form(self, chosen: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's config as a preset file holds one: the sections of the study's preset
        (or the agent and env alone), the command's overrides, steps, seed and envs, and
        the trial's ``chosen`` options. Options left out stay derived when the file is
        trained (an on-policy agent's ``total_steps`` follows ``--steps``)."""
        from jaxrl.experiment.config import load_preset

        data = load_preset(self.base.preset) if self.base.preset else {}
        data.pop("preset", None)
        out = {s: dict(data.get(s) or {}) for s in ("agent", "env", "run")}
        out["agent"]["name"], out["env"]["name"] = self.base.agent.name, self.base.env.name
        out["env"].pop("family", None)
        out["env"]["num_envs"] = self.base.env.num_envs
        out["run"].update(steps=self.base.run.steps, seed=self.base.run.seed)
        for name, value in {**self.overrides, **chosen}.items():
            section, _, key = name.partition(".")
            out[section][key] = value
        return out

    def check_space(self) -> None:
        """ConfigError (one line) for a parameter that names no option of the agent, env or
        run, or whose bounds or choices are not valid values of it."""
        from jaxrl.tune import space

        for p in self.params:
            for raw in space.extremes(p):
                where = f"--space '{self.args.space}': {p.name}"
                try:
                    v = space.value(p, raw, self.flat)
                    self.config({name: v for name in p.names})
                except KeyError as e:
                    raise ConfigError(f"{where}: quotient_of names no option {e}") from None
                except ConfigError as e:
                    raise ConfigError(f"{where}: {e}") from None

    def command(self) -> dict[str, Any]:
        """What a resumed study must be run with again."""
        a = self.args
        return dict(
            agent=self.base.agent.name,
            env=self.base.env.name,
            preset=self.base.preset,
            space=a.space,
            params=[list(p.names) for p in self.params],
            steps=self.base.run.steps,
            seed=self.base.run.seed,
            overrides={k: repr(v) for k, v in self.overrides.items()},
        )


def _open(search: Search, name: str) -> tuple[Any, Path, list[str]]:
    """The study and its folder (created here unless it exists); nothing is left behind
    when the database cannot be opened."""
    from jaxrl.experiment.run import check_logdir
    from jaxrl.tune import study

    args = search.args
    check_logdir(args.logdir)
    folder = Path(args.logdir) / name.replace("/", "-")
    created = [p for p in (Path(args.logdir), folder) if not p.exists()]
    url = args.storage or f"sqlite:///{folder / study.DB_FILE}"
    optuna = study.optuna_module()
    try:
        if args.storage is None:
            folder.mkdir(parents=True, exist_ok=True)
        storage = study.open_storage(url)
        sampler = _sampler(optuna, args.sampler, search.base.run.seed)
        pruner = _pruner(optuna, args.pruner, search.base.run.steps)
        opened, notes = study.load(storage, name, search.command(), sampler, pruner)
    except ConfigError:
        for path in reversed(created):
            shutil.rmtree(path, ignore_errors=True)
        raise
    folder.mkdir(parents=True, exist_ok=True)
    return opened, folder, notes


def _ask(search: Search, opened: Any, count: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """``count`` trials asked, each with its options (user attribute ``overrides``)."""
    from jaxrl.tune import trials

    asked, chosen = [], []
    for _ in range(count):
        trial = opened.ask()
        options = trials.suggest(trial, search.params, search.flat)
        trial.set_user_attr("overrides", options)
        asked.append(trial)
        chosen.append(options)
    return asked, chosen


def tune(search: Search) -> int:
    """Runs the study to ``--trials`` finished trials; prints a line per program."""
    from jaxrl.tune import study, trials

    args = search.args
    name = args.study_name or f"{search.base.agent.name}-{search.base.env.name}"
    opened, folder, notes = _open(search, name)
    for note in notes:
        print(f"note: {note}")
    done = study.finished(opened)
    print(f"study '{name}' in {folder}: {done} of {args.trials} trials done")
    while done < args.trials:
        asked, chosen = _ask(search, opened, min(args.batch, args.trials - done))
        for group in trials.groups(chosen, search.continuous):
            start = time.perf_counter()
            outcomes = trials.run_group(
                opened,
                [asked[i] for i in group],
                [chosen[i] for i in group],
                search.config,
                search.continuous,
                folder / "runs",
            )
            results = ", ".join(f"{o.trial}: {o.note}" for o in outcomes)
            print(f"trials {results} ({time.perf_counter() - start:.0f} s)", flush=True)
        study.write_best(opened, search.preset_form, folder / study.BEST_FILE)
        done = study.finished(opened)
    best = study.write_best(opened, search.preset_form, folder / study.BEST_FILE)
    if best is None:
        print("no trial completed: no best config")
        return 0
    path = folder / study.BEST_FILE
    print(f"best: trial {best.number}, final return {best.value:.2f}; config {path}")
    print(f"train it: python -m jaxrl.train --config {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, overrides = parse_args(sys.argv[1:] if argv is None else argv)
        return tune(Search(args, overrides))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"{e}; the same jaxrl tune command resumes the study", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted; the same jaxrl tune command resumes the study", file=sys.stderr)
        return 130


if __name__ == "__main__":
    from jaxrl.experiment.guards import exit_with

    exit_with(main())
