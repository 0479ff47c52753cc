"""DQN on CartPole-v1 with the `cartpole-dqn` preset: compile time, run time, env steps/s
and wall time until the greedy evaluation (10 episodes) first reaches 475, for 5 seeds.

Each seed runs exactly what `python -m jaxrl.train --agent dqn --env CartPole --seed S`
runs (the host driver, chunked, stopping at 475). A second table runs the same preset for
all seeds at once as one fused `jax.jit(jax.vmap(train))` program, without early stop. A
third runs jaxrl's DQN with the hyperparameters of PureJaxRL's `dqn.py` (CleanRL's DQN:
10 envs, one gradient step of batch 128 every 10 env steps, 120-84 MLP, MSE, Adam 2.5e-4,
target copy every 500 steps, 500k steps) for a like-for-like throughput comparison.

    python benchmarks/dqn_cartpole.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import io
import math
import os
import platform
import tempfile
import time

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.runners import RunConfig, make_train


def per_seed(seeds: int, agent: str = "dqn") -> Table:
    title = f"{agent} CartPole-v1, host driver (python -m jaxrl.train), stop at 475"
    table = Table(title=title)
    for column in ("seed", "compile s", "run s", "env steps/s", "steps to 475", "wall s to 475",
                   "final eval"):  # fmt: skip
        table.add_column(column, justify="right")
    solved_times = []
    with tempfile.TemporaryDirectory() as logdir:
        for seed in range(seeds):
            cfg = resolve(agent=agent, env="CartPole", seed=seed)
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


def fused_vmap(seeds: int, agent: str = "dqn", steps: int | None = None) -> Table:
    cfg = resolve(agent=agent, env="CartPole", steps=steps)
    parts = build_setup(cfg.with_run(stop_return=None), Launch(loggers=[]))
    run, env, eval_env, learner = parts.run_config, parts.env, parts.eval_env, parts.agent
    train = make_train(learner, env, run, eval_env)
    train = jax.jit(jax.vmap(train))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_time = time.perf_counter() - start
    steps = np.asarray(metrics["step"])[0]
    evals = np.asarray(metrics["eval_return"])
    table = Table(
        title=f"{agent} CartPole-v1, {seeds} seeds in one jit(vmap(train)), no early stop"
    )
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


PUREJAXRL_DQN = dict(
    hidden_sizes=(120, 84),
    loss="mse",
    lr=2.5e-4,
    batch_size=128,
    buffer_size=10_000,
    learning_starts=10_000,
    updates_per_rollout=1,
    target_update_period=500,
    epsilon_end=0.05,
    epsilon_decay_steps=250_000,
    max_grad_norm=None,
)


def same_hyperparameters_as_purejaxrl(seeds: int) -> Table:
    env = envs.make("CartPole-v1", num_envs=10)
    agent = agents.make("dqn", env.spec, **PUREJAXRL_DQN)
    config = RunConfig(steps=500_000, rollout_len=1, log_every=10_000, eval_every=0)
    train = jax.jit(make_train(agent, env, config))
    table = Table(title="jaxrl DQN with PureJaxRL dqn.py's hyperparameters (500k steps, 1 seed)")
    for column in ("seed", "compile s", "run s", "env steps/s"):
        table.add_column(column, justify="right")
    for seed in range(seeds):
        key = jax.random.PRNGKey(seed)
        start = time.perf_counter()
        compiled = train.lower(key).compile()
        compile_time = time.perf_counter() - start
        start = time.perf_counter()
        jax.block_until_ready(compiled(key))
        run_time = time.perf_counter() - start
        table.add_row(str(seed), f"{compile_time:.1f}", f"{run_time:.1f}", f"{5e5 / run_time:,.0f}")
        train = jax.jit(make_train(agent, env, config))  # compile afresh for every seed
    return table


def machine_line() -> str:
    return (
        f"jax {jax.__version__} on {jax.devices()[0].platform}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    console = Console(width=140)
    console.print(machine_line())
    console.print(per_seed(args.seeds))
    console.print(fused_vmap(args.seeds))
    console.print(same_hyperparameters_as_purejaxrl(args.seeds))


if __name__ == "__main__":
    main()
