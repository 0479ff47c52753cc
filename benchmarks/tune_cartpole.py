"""``jaxrl tune`` on CartPole: trials per hour against the same trials run one after
another through the CLI, and the best config found judged over 32 held-out seeds beside
the shipped preset at the same budget.

For each agent: ``jaxrl tune --space builtin-continuous`` (RL Zoo's space, the options a
vmapped program varies per member) with ``--trials`` trials asked ``--batch`` at a time,
timed whole (process start, compiles, every program, the final evaluations); then the
first ``--cli-trials`` of those trials, each as its own ``python -m jaxrl.train`` process
with the trial's options and seed and ``--run.stop_return null`` (the whole budget, as a
vmapped member trains it), timed one by one (their mean gives the CLI's trials per hour;
``--cli-only DIR`` runs this part alone for the studies ``DIR/AGENT/study.db``);
then ``python -m jaxrl.train --config best.yaml --seeds 32 --seed 100`` (seeds 100-131,
none of them the study's seed 0) and the preset's ``--steps`` equal to the study's, same
seeds. Writes ``benchmarks/data/tune-cartpole.yaml``'s rows (the run fields are the
caller's to fill: machine, load, commit).

    nice -n 19 python benchmarks/tune_cartpole.py [--agents dqn ppo] [--trials 16]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

STEPS = {"dqn": 50_000, "ppo": 100_000}


def timed(command: list[str]) -> float:
    """Runs ``command`` (output discarded unless it fails); its wall seconds."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def summary(logdir: Path) -> dict[str, Any]:
    """The ``summary.yaml`` of the one run under ``logdir``."""
    (path,) = logdir.glob("*/summary.yaml")
    return yaml.safe_load(path.read_text())


def trials(db: Path, name: str) -> list[Any]:
    import optuna

    study = optuna.load_study(study_name=name, storage=f"sqlite:///{db}")
    return sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)


def judge(tmp: Path, label: str, args: list[str]) -> dict[str, Any]:
    """32 seeds from 100 of ``args`` (a config or the preset): wall s and the summary."""
    logdir = tmp / label
    wall = timed(
        [sys.executable, "-m", "jaxrl.train", *args, "--seeds", "32", "--seed", "100"]
        + ["--log", "", "--logdir", str(logdir)]
    )
    return {"wall_s": round(wall, 1), **summary(logdir)}


def cli_row(agent: str, asked: list[Any], cli: int, steps: int, tmp: Path) -> dict[str, Any]:
    """The first ``cli`` of the ``asked`` trials, each a ``python -m jaxrl.train`` process
    with the trial's options and seed, for the whole budget (``stop_return`` off, as a
    vmapped member trains on): their wall seconds and how far their final returns end from
    the trials'."""
    cli_s, apart = [], []
    for t in asked[:cli]:
        logdir = tmp / f"cli-{agent}-{t.number}"
        options = [x for k, v in t.user_attrs["overrides"].items() for x in (f"--{k}", str(v))]
        command = [sys.executable, "-m", "jaxrl.train", "--agent", agent, "--env", "CartPole"]
        command += ["--steps", str(steps), "--seed", "0", "--log", "", "--logdir", str(logdir)]
        cli_s.append(timed([*command, "--run.stop_return", "null", *options]))
        if t.value is not None:  # a pruned trial has no final return to compare
            apart.append(abs(summary(logdir)["final_eval_return"] - t.value))
    per_cli = sum(cli_s) / len(cli_s)
    return {
        "agent": agent,
        "what": f"python -m jaxrl.train, {cli} of the same trials one by one",
        "steps": steps,
        "trials": cli,
        "wall_s": round(sum(cli_s), 1),
        "per_trial_s": round(per_cli, 1),
        "per_hour": round(3600 / per_cli),
        "detail": "final returns apart from the trials' by up to "
        + (f"{max(apart):.1f}" if apart else "n/a"),
    }


def measure(
    agent: str, count: int, batch: int, cli: int, tmp: Path, steps: int
) -> list[dict[str, Any]]:
    tune = [sys.executable, "-m", "jaxrl.tune", "--agent", agent, "--env", "CartPole"]
    tune += ["--space", "builtin-continuous", "--trials", str(count), "--batch", str(batch)]
    tune += ["--steps", str(steps), "--logdir", str(tmp), "--study-name", agent]
    tune_s = timed(tune)
    asked = trials(tmp / agent / "study.db", agent)
    pruned = sum(t.state.name == "PRUNED" for t in asked)
    best = tmp / agent / "best.yaml"
    found = judge(tmp, f"judge-{agent}-best", ["--config", str(best)])
    preset = judge(
        tmp, f"judge-{agent}-preset", ["--agent", agent, "--env", "CartPole", "--steps", str(steps)]
    )
    best_trial = int(re.search(r"trial (\d+), final", best.read_text()).group(1))
    rows = [
        {
            "agent": agent,
            "what": f"jaxrl tune, {count} trials in batches of {batch}",
            "steps": steps,
            "trials": count,
            "wall_s": round(tune_s, 1),
            "per_trial_s": round(tune_s / count, 1),
            "per_hour": round(3600 * count / tune_s),
            "detail": f"{pruned} pruned",
        },
    ]
    rows.append(cli_row(agent, asked, cli, steps, tmp))
    for label, judged in ((f"best found (trial {best_trial})", found), ("preset", preset)):
        ci = judged["final_iqm_ci"]
        rows.append(
            {
                "agent": agent,
                "what": f"{label}, 32 seeds (100-131)",
                "steps": steps,
                "wall_s": judged["wall_s"],
                "iqm": f"{judged['final_iqm']:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]",
                "at_target": f"{round(32 * judged['fraction_at_target'])}/32",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", nargs="+", default=["dqn", "ppo"])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--cli-trials", type=int, default=4)
    parser.add_argument("--steps", type=int, help="env steps per trial (STEPS)")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--cli-only", type=Path, metavar="DIR", help="only the CLI runs of DIR/AGENT/study.db"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for agent in args.agents if args.cli_only else ():
            steps = args.steps or STEPS[agent]
            asked = trials(args.cli_only / agent / "study.db", agent)
            rows.append(cli_row(agent, asked, args.cli_trials, steps, Path(tmp)))
        for agent in () if args.cli_only else args.agents:
            steps = args.steps or STEPS[agent]
            rows += measure(agent, args.trials, args.batch, args.cli_trials, Path(tmp), steps)
            print(yaml.safe_dump(rows[-4:], sort_keys=False), flush=True)
    text = yaml.safe_dump({"rows": rows}, sort_keys=False, width=200)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
