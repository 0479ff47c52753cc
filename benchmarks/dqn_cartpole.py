"""DQN on CartPole-v1 with the `cartpole-dqn` preset: compile time, run time, env steps/s
and wall time until the greedy evaluation (10 episodes) first reaches 475, for 5 seeds.

Each seed runs exactly what `python -m jaxrl.train --agent dqn --env CartPole --seed S`
runs (the host driver, chunked, stopping at 475). A second table runs the same preset for
all seeds at once as one fused `jax.jit(jax.vmap(train))` program, without early stop.

    python benchmarks/dqn_cartpole.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import io
import math
import platform
import tempfile
import time

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import env_kwargs, resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.runners import RunConfig, make_train


def per_seed(seeds: int) -> Table:
    table = Table(title="DQN CartPole-v1, host driver (python -m jaxrl.train), stop at 475")
    for column in ("seed", "compile s", "run s", "env steps/s", "steps to 475", "wall s to 475",
                   "final eval"):  # fmt: skip
        table.add_column(column, justify="right")
    solved_times = []
    with tempfile.TemporaryDirectory() as logdir:
        for seed in range(seeds):
            cfg = resolve(agent="dqn", env="CartPole", seed=seed)
            s = run_experiment(cfg, logdir, console=Console(file=io.StringIO()))
            solved = s.first_solved_time
            solved_times.append(solved if solved is not None else math.nan)
            table.add_row(
                str(seed),
                f"{s.compile_time:.1f}",
                f"{s.run_time:.1f}",
                f"{s.sps:,.0f}",
                f"{s.steps:,}" if s.solved else "not solved",
                f"{solved:.1f}" if solved is not None else "-",
                f"{s.final_eval_return:.1f}",
            )
    t = np.array(solved_times)
    table.caption = (
        f"solved {np.isfinite(t).sum()}/{seeds}; wall s to 475 (compile included): "
        f"median {np.nanmedian(t):.1f}, max {np.nanmax(t):.1f}"
    )
    return table


def fused_vmap(seeds: int) -> Table:
    cfg = resolve(agent="dqn", env="CartPole")
    run = RunConfig(**(cfg["run"] | {"stop_return": None}))
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **env_kwargs(cfg))
    eval_env = envs.make(cfg["env"]["name"], num_envs=run.eval_episodes, **env_kwargs(cfg))
    options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    agent = agents.make("dqn", env.spec, **options)
    train = jax.jit(jax.vmap(make_train(agent, env, run, eval_env)))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_time = time.perf_counter() - start
    steps = np.asarray(metrics["step"])[0]
    evals = np.asarray(metrics["eval_return"])
    table = Table(title=f"DQN CartPole-v1, {seeds} seeds in one jit(vmap(train)), no early stop")
    for column in ("seeds", "env steps each", "compile s", "run s", "env steps/s (all seeds)",
                   "steps to first eval >= 475 per seed"):  # fmt: skip
        table.add_column(column, justify="right")
    first = []
    for i in range(seeds):
        hit = np.flatnonzero(evals[i] >= 475)
        first.append(f"{steps[hit[0]]:,}" if hit.size else "-")
    table.add_row(
        str(seeds),
        f"{steps[-1]:,}",
        f"{compile_time:.1f}",
        f"{run_time:.1f}",
        f"{seeds * steps[-1] / run_time:,.0f}",
        ", ".join(first),
    )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    console = Console(width=140)
    console.print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}, "
        f"{platform.processor() or platform.machine()}, "
        f"{__import__('os').cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    console.print(per_seed(args.seeds))
    console.print(fused_vmap(args.seeds))


if __name__ == "__main__":
    main()
