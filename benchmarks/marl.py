"""Learning on MPE simple_spread (JaxMARL's port, ``jaxrl/envs/marl.py``): the table of a
run of ``python -m jaxrl.train ... --seeds K`` (K seeds as one vmapped program), read from
its ``metrics.jsonl`` and ``summary.yaml``: per logged step, the training return
(stochastic policy, episodes finished in the interval) and the greedy evaluation of each
seed, with their IQM (``jaxrl.stats``); compile and run time from the summary.

    nice -n 10 python -m jaxrl.train --agent ppo --env mpe:simple_spread --seeds 3
    nice -n 10 python -m jaxrl.train --agent maddpg --env mpe:simple_spread --seeds 3
    python benchmarks/marl.py RUN_DIR [--every 5]

Returns are an agent's return over a 25-step episode (IPPO: each agent's own; MADDPG: the
mean of the three agents'). The runner counts agent steps in the parameter-sharing layout
(3 per game step, IPPO) and game steps in the players' layout (MADDPG); the table gives
game steps for both.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from jaxrl.stats import iqm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--every", type=int, default=5, help="show every K-th logged row")
    args = parser.parse_args()
    cfg = yaml.safe_load((args.run_dir / "config.yaml").read_text())
    shared = cfg["env"].get("shared", True)
    per_game = 3 if shared else 1
    rows: dict[int, dict[int, dict]] = defaultdict(dict)
    for line in (args.run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[row["step"]][row.get("seed", 0)] = row
    table = Table(title=f"{cfg['agent']['name']} on {cfg['env']['name']} ({args.run_dir.name})")
    for column in ("game steps", "wall s", "train return", "train IQM", "eval", "eval IQM"):
        table.add_column(column, justify="right")
    steps = sorted(rows)
    for i, step in enumerate(steps):
        if i % args.every and i != len(steps) - 1:
            continue
        seeds = [rows[step][s] for s in sorted(rows[step])]
        train = [r["episode_return"] for r in seeds]
        evals = [r.get("eval_return", float("nan")) for r in seeds]
        cells = [f"{step // per_game:,}", f"{seeds[0]['time']:.0f}"]
        cells += [" ".join(f"{x:.1f}" for x in train), f"{iqm(train):.1f}"]
        cells += [" ".join(f"{x:.1f}" for x in evals), f"{iqm(evals):.1f}"]
        table.add_row(*cells)
    console = Console()
    console.print(table)
    summary = args.run_dir / "summary.yaml"
    if summary.is_file():
        data = yaml.safe_load(summary.read_text())
        keep = ("compile_time", "run_time", "sps", "final_eval_returns", "final_iqm")
        console.print({k: v for k, v in data.items() if k in keep} or data)


if __name__ == "__main__":
    main()
