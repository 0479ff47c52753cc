"""The value-based family on CartPole-v1 (QR-DQN, IQN, M-DQN, HL-Gauss DQN, PQN): each
CartPole preset, 5 seeds (by default) in one fused `jax.jit(jax.vmap(train))` program, no
early stop. Prints, per preset, compile and run time, throughput, the env steps at which
each seed's greedy evaluation (10 episodes) first reached 475 and each seed's last one.

    nice -n 10 python benchmarks/value_family.py [--seeds 5] [--presets cartpole-qrdqn ...]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl.experiment.config import presets, resolve
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.runners import make_train

PRESETS = (
    "cartpole-qrdqn",
    "cartpole-iqn",
    "cartpole-mdqn",
    "cartpole-dqn-hlgauss",
    "cartpole-pqn",
)


def run_preset(name: str, seeds: int, steps: int | None) -> list[str]:
    cfg = resolve(config_file=str(presets()[name]), steps=steps)
    parts = build_setup(cfg.with_run(stop_return=None), Launch(loggers=[]))
    run, env, eval_env, agent = parts.run_config, parts.env, parts.eval_env, parts.agent
    train = jax.jit(jax.vmap(make_train(agent, env, run, eval_env)))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_time = time.perf_counter() - start
    step = np.asarray(metrics["step"])[0]
    evals = np.asarray(metrics["eval_return"])
    first, last = [], []
    for i in range(seeds):
        done = evals[i][~np.isnan(evals[i])]
        hit = np.flatnonzero(evals[i] >= 475)
        first.append(f"{step[hit[0]]:,}" if hit.size else "-")
        last.append(f"{done[-1]:.0f}")
    solved = sum(f != "-" for f in first)
    return [
        name,
        f"{solved}/{seeds}",
        f"{step[-1]:,}",
        f"{compile_time:.1f}",
        f"{run_time:.1f}",
        f"{seeds * step[-1] / run_time:,.0f}",
        ", ".join(first),
        ", ".join(last),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="env steps (preset's)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = parser.parse_args()
    table = Table(title=f"CartPole-v1, {args.seeds} seeds per preset in one jit(vmap(train))")
    for column in ("preset", "reached 475", "env steps each", "compile s", "run s",
                   "env steps/s (all seeds)", "steps to first eval >= 475",
                   "last eval per seed"):  # fmt: skip
        table.add_column(column, justify="right")
    console = Console(width=200)
    for name in args.presets:
        table.add_row(*run_preset(name, args.seeds, args.steps))
        console.print(table)  # after each preset, so a long run shows progress


if __name__ == "__main__":
    main()
