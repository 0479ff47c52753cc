"""DQN on MinAtar Breakout with the `minatar-dqn` preset (Young & Tian 2019's DQN).

Prints the learning curve (training episode return, greedy evaluation over 10 episodes,
wall time, env steps/s) of a run of

    python -m jaxrl.train --agent dqn --env MinAtar-Breakout

and, for scale, the return of a uniformly random policy (100 episodes, fused evaluation).
Either reads an existing run directory or trains one:

    python benchmarks/minatar_dqn.py --run-dir runs/dqn_MinAtar-Breakout_s0_...
    python benchmarks/minatar_dqn.py [--steps 1000000] [--seed 0] [--every 50000]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import tempfile
from pathlib import Path

import jax
import numpy as np
import yaml
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.runners import make_evaluate


def random_return(episodes: int = 100, seed: int = 0) -> tuple[float, float]:
    """Mean and standard error of a uniformly random policy's episode return."""
    env = envs.make("MinAtar-Breakout", num_envs=episodes)
    agent = agents.make("random", env.spec)
    state = agent.init(jax.random.PRNGKey(seed))
    returns = np.asarray(jax.jit(make_evaluate(agent, env))(state, jax.random.PRNGKey(seed)))
    return float(returns.mean()), float(returns.std() / math.sqrt(episodes))


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def curve_table(run_dir: Path, every: int) -> Table:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    table = Table(title=f"dqn MinAtar-Breakout ({run_dir.name})")
    columns = ("env steps", "train return (mean over row)", "eval return", "wall s", "steps/s")
    for column in columns:
        table.add_column(column, justify="right")
    episodes = returns = steps = seconds = 0.0
    evals: list[float] = []
    prev_step = 0
    for row in rows:
        episodes += row["episodes"]
        returns += (row["episode_return"] or 0.0) * row["episodes"]
        steps += row["step"] - prev_step
        seconds += (row["step"] - prev_step) / row["sps"]  # chunk run time, no compile
        prev_step = row["step"]
        if row["eval_return"] is not None:
            evals.append(row["eval_return"])
        if row["step"] % every and row is not rows[-1]:
            continue
        table.add_row(
            f"{row['step']:,}",
            _fmt(returns / episodes if episodes else math.nan),
            _fmt(evals[-1] if evals else None, ".1f"),
            f"{row['time']:.0f}",
            f"{steps / seconds:,.0f}",
        )
        episodes = returns = steps = seconds = 0.0
        evals = []
    summary = run_dir / "summary.yaml"
    if summary.exists():
        s = yaml.safe_load(summary.read_text())
        table.caption = (
            f"compile {s['compile_time']:.1f} s, run {s['run_time']:.0f} s "
            f"({s['sps']:,.0f} steps/s), final eval (10 episodes) {s['final_eval_return']:.1f}"
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="read this run instead of training")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=50_000, help="env steps per table row")
    args = parser.parse_args()
    console = Console()
    mean, stderr = random_return()
    console.print(f"random policy on MinAtar-Breakout: {mean:.2f} +- {stderr:.2f} (100 episodes)")
    if args.run_dir is not None:
        console.print(curve_table(args.run_dir, args.every))
        return
    with tempfile.TemporaryDirectory() as logdir:
        cfg = resolve(agent="dqn", env="MinAtar-Breakout", steps=args.steps, seed=args.seed)
        summary = run_experiment(cfg, logdir, console=Console(file=io.StringIO()))
        console.print(curve_table(summary.run_dir, args.every))


if __name__ == "__main__":
    main()
