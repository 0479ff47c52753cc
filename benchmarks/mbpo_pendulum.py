"""MBPO against SAC on Pendulum-v1: env steps to a greedy return of -200, K vmapped seeds
each, the same evaluation schedule for both (issue 18, part 5).

    python benchmarks/mbpo_pendulum.py [--seeds 3] [--sac-steps 10000] [--mbpo-steps 4000]
        [--eval-every 250] [--logdir DIR] [--agents mbpo sac]
        [--mbpo-args="--agent.learning_starts 250 ..."] [--sac-args="..."]

Runs ``python -m jaxrl.train --agent sac --env Pendulum --seeds K`` (preset
``pendulum-sac``) and ``--agent mbpo`` (preset ``pendulum-mbpo``), each one vmapped program,
with ``run.eval_every`` and ``run.log_every`` set to ``--eval-every`` for both and
``run.stop_return -200`` (a seed run records each member's first evaluation, 10 greedy
episodes, at or above it) and ``benchmarks/all_reached.py``'s callback, which ends the run
once every seed has reached -200. ``--mbpo-args``/``--sac-args`` add overrides to one arm
(one change at a time against the preset). Prints a table: per-seed steps to -200, their
median, the final return of each seed (20 greedy episodes) and its IQM, compile and run
times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

from benchmarks.all_reached import AT_MINUS_200
from jaxrl.train import main as train

TARGET = -200.0


def run(
    agent: str, seeds: int, steps: int, every: int, logdir: Path, extra: list[str] = ()
) -> dict:
    argv = [
        "--agent", agent, "--env", "Pendulum", "--seeds", str(seeds), "--steps", str(steps),
        "--run.eval_every", str(every), "--run.log_every", str(every),
        "--run.stop_return", str(TARGET), "--logdir", str(logdir / agent),
        "--callback", "benchmarks.all_reached:AT_MINUS_200", *extra,
    ]  # fmt: skip
    print("$ python -m jaxrl.train", " ".join(argv), flush=True)
    AT_MINUS_200.reset()  # a second arm in this process must not inherit the first's state
    if train(argv) != 0:
        raise SystemExit(f"{agent} run failed")
    (run_dir,) = (logdir / agent).iterdir()
    return yaml.safe_load((run_dir / "summary.yaml").read_text())


def row(agent: str, s: dict) -> str:
    solves = s["first_solve_steps"]
    reached = [x for x in solves if x is not None]
    median = f"{statistics.median(reached):,.0f}" if len(reached) == len(solves) else "n/a"
    per_seed = " / ".join("never" if x is None else f"{x:,}" for x in solves)
    finals = " / ".join(f"{v:.1f}" for v in s["final_eval_returns"])
    return (
        f"| {agent} | {len(solves)} | {s['steps']:,} | {per_seed} | {median} | {finals} | "
        f"{s['final_iqm']:.1f} | {s['compile_time']:.1f} | {s['run_time']:.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sac-steps", type=int, default=10_000)
    parser.add_argument("--mbpo-steps", type=int, default=4_000)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--logdir", type=Path, default=None)
    parser.add_argument("--agents", nargs="+", default=["mbpo", "sac"], choices=["mbpo", "sac"])
    parser.add_argument("--mbpo-args", default="", help="overrides for the MBPO run")
    parser.add_argument("--sac-args", default="", help="overrides for the SAC run")
    args = parser.parse_args(argv)
    logdir = args.logdir or Path(tempfile.mkdtemp(prefix="mbpo-pendulum-"))
    steps = {"mbpo": args.mbpo_steps, "sac": args.sac_steps}
    extra = {"mbpo": args.mbpo_args.split(), "sac": args.sac_args.split()}
    results = {
        a: run(a, args.seeds, steps[a], args.eval_every, logdir, extra[a]) for a in args.agents
    }
    print(
        "| agent | seeds | env steps | steps to -200 per seed | median | final return per seed "
        "(20 ep.) | final IQM | compile s | run s |"
    )
    print("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |")
    for agent, summary in results.items():
        print(row(agent, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
