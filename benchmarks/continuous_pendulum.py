"""SAC, TD3 and DDPG on Pendulum-v1 with their presets (jaxrl/presets/pendulum-*.yaml):
compile time, run time, env steps/s, and the env steps and wall time until the greedy
evaluation (10 episodes, every 1,000 steps) first reaches the threshold (-200 for SAC and
TD3, -300 for DDPG), within 20,000 env steps.

Each (agent, seed) runs exactly what `python -m jaxrl.train --agent A --env Pendulum --seed S`
runs (the host driver, chunked), for the preset's full 20,000 steps.

    python benchmarks/continuous_pendulum.py [--agents sac td3 ddpg] [--seeds 3]
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import platform
import tempfile

import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import run_experiment

THRESHOLDS = {"sac": -200.0, "td3": -200.0, "ddpg": -300.0}


def first_crossing(metrics_csv: str, threshold: float) -> tuple[float, float]:
    """``(env steps, wall s since start incl. compile)`` of the first evaluation
    reaching ``threshold``; NaNs if none did."""
    with open(metrics_csv) as f:
        for row in csv.DictReader(f):
            value = float(row["eval_return"]) if row["eval_return"] else math.nan
            if value >= threshold:
                return float(row["step"]), float(row["time"])
    return math.nan, math.nan


def run_agent(agent: str, seeds: list[int]) -> Table:
    threshold = THRESHOLDS[agent]
    table = Table(title=f"{agent} Pendulum-v1 (preset pendulum-{agent}), threshold {threshold:g}")
    for column in ("seed", "compile s", "run s", "env steps/s", f"steps to {threshold:g}",
                   f"wall s to {threshold:g}", "best eval", "final eval"):  # fmt: skip
        table.add_column(column, justify="right")
    reached = []
    with tempfile.TemporaryDirectory() as logdir:
        for seed in seeds:
            cfg = resolve(agent=agent, env="Pendulum", seed=seed)
            s = run_experiment(cfg, logdir, console=Console(file=io.StringIO()))
            steps, wall = first_crossing(str(s.run_dir / "metrics.csv"), threshold)
            reached.append(steps)
            table.add_row(
                str(seed),
                f"{s.compile_time:.1f}",
                f"{s.run_time:.1f}",
                f"{s.sps:,.0f}",
                f"{steps:,.0f}" if math.isfinite(steps) else "not reached",
                f"{wall:.1f}" if math.isfinite(wall) else "-",
                f"{s.best_eval_return:.1f}",
                f"{s.final_eval_return:.1f}",
            )
    r = np.array(reached)
    table.caption = f"reached {np.isfinite(r).sum()}/{len(seeds)} within 20,000 env steps"
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["sac", "td3", "ddpg"])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    console.print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    for agent in args.agents:
        console.print(run_agent(agent, list(range(args.seeds))))


if __name__ == "__main__":
    main()
