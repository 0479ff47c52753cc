"""Learning on MPE simple_spread (JaxMARL's port, ``jaxrl/envs/marl.py``): a preset
trained for K seeds as one vmapped program, with the training return (stochastic policy,
episodes finished in each logged chunk) and the greedy evaluation per seed and their IQM
(``jaxrl.stats``), compile time and run time apart.

    nice -n 10 python benchmarks/marl.py --agent ppo        # preset simple_spread-ippo
    nice -n 10 python benchmarks/marl.py --agent maddpg     # preset simple_spread-maddpg

Returns are an agent's return over a 25-step episode (IPPO: each agent's own; MADDPG: the
mean of the three agents'). Steps are those the runner counts: agent steps for the
parameter-sharing IPPO layout (3 per game step), game steps for MADDPG; the table gives
game steps for both.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs, runners
from jaxrl.experiment.config import env_kwargs, resolve
from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import RunConfig
from jaxrl.stats import iqm

ENV = "mpe:simple_spread"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", default="ppo")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()
    cfg = resolve(agent=args.agent, env=ENV, steps=args.steps)
    kwargs = env_kwargs(cfg)
    env = envs.make(ENV, num_envs=cfg["env"]["num_envs"], **kwargs)
    eval_env = envs.make(ENV, num_envs=cfg["run"]["eval_episodes"], **kwargs)
    options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    agent = agents.make(args.agent, env.spec, **options)
    run = RunConfig(**cfg["run"])
    runner = batch_runner(runners.make(agent, env, run, eval_env))
    per_game = 1 if env.spec.num_players > 1 else 3  # shared layout: 3 agent steps a game step
    keys = jnp.stack([jax.random.PRNGKey(run.seed + i) for i in range(args.seeds)])
    start = time.perf_counter()
    state = jax.jit(runner.init)(keys)
    run_chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    console = Console()
    console.print(f"preset {cfg['preset']}; compile {compile_s:.1f} s")
    table = Table(title=f"{args.agent} on {ENV}: {args.seeds} seeds")
    for column in ("game steps", "wall s", "train return", "train IQM", "eval", "eval IQM"):
        table.add_column(column, justify="right")
    wall = 0.0
    for _ in range(runner.layout.num_chunks):
        t0 = time.perf_counter()
        state, m = run_chunk(state)
        m = jax.device_get(m)
        wall += time.perf_counter() - t0
        train = m["episode_return_sum"].sum(1) / np.maximum(m["episodes"].sum(1), 1)
        evals = m["eval_return"][:, -1]
        if np.isnan(evals).any():
            continue
        step = int(m["step"][0, -1]) // per_game
        cells = [f"{step:,}", f"{wall:.0f}", " ".join(f"{r:.1f}" for r in train)]
        cells += [f"{iqm(train):.1f}", " ".join(f"{r:.1f}" for r in evals), f"{iqm(evals):.1f}"]
        table.add_row(*cells)
        console.print(" | ".join(cells))
    console.print(table)
    steps = runner.layout.total_steps * args.seeds
    console.print(
        f"run {wall:.0f} s ({steps / wall:,.0f} runner steps/s over {args.seeds} seeds), "
        f"compile {compile_s:.0f} s"
    )


if __name__ == "__main__":
    main()
