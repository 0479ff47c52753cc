"""Aggregate env steps/s of 1, 8 and 32 seeds trained as one vmapped program on CartPole-v1.

For each agent, ``jax.jit(jax.vmap(make_train(...)))`` over K seed keys (what
``python -m jaxrl.train --seeds K`` runs, without the host loop between chunks). Compile
time and run time are timed separately; aggregate steps/s is K * steps / run time, and the
parallel efficiency is the aggregate steps/s divided by K times the 1-seed steps/s (1.0:
K seeds cost as much as one; 1/K: no gain over running them one after another).

    python benchmarks/sweep_scaling.py [--seeds 1 8 32] [--steps 10240]

PPO is included when ``jaxrl.agents.make("ppo", ...)`` is registered.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import env_kwargs, resolve
from jaxrl.runners import RunConfig, make_train

# Agent -> resolve() arguments: the library's CartPole preset where there is one.
AGENTS = {
    "dqn": dict(agent="dqn", env="CartPole"),
    "ppo": dict(agent="ppo", env="CartPole"),  # used once "ppo" is registered
}


def build(name: str, steps: int):
    cfg = resolve(**AGENTS[name], steps=steps)
    run = RunConfig(**(cfg["run"] | {"stop_return": None, "eval_every": 0}))
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **env_kwargs(cfg))
    options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    return make_train(agents.make(name, env.spec, **options), env, run), cfg


def measure(name: str, seeds: int, steps: int) -> dict[str, float]:
    train, cfg = build(name, steps)
    train = jax.jit(jax.vmap(train))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = jax.block_until_ready(compiled(keys))
    run_time = time.perf_counter() - start
    done = int(np.asarray(metrics["step"])[0, -1])
    return dict(
        compile=compile_time,
        run=run_time,
        sps=seeds * done / run_time,
        steps=done,
        num_envs=cfg["env"]["num_envs"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--steps", type=int, default=10_240, help="env steps per seed")
    args = parser.parse_args()
    names = [n for n in AGENTS if n in agents.available()]
    table = Table(title=f"vmapped seeds on CartPole-v1, {args.steps:,} env steps per seed")
    for column in ("agent", "seeds", "envs/seed", "compile s", "run s", "aggregate steps/s",
                   "efficiency"):  # fmt: skip
        table.add_column(column, justify="right")
    for name in names:
        base = None
        for seeds in args.seeds:
            m = measure(name, seeds, args.steps)
            base = base or m["sps"] / seeds
            table.add_row(
                name,
                str(seeds),
                str(m["num_envs"]),
                f"{m['compile']:.1f}",
                f"{m['run']:.2f}",
                f"{m['sps']:,.0f}",
                f"{m['sps'] / (seeds * base):.2f}",
            )
    table.caption = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, {jax.default_backend()}"
    )
    Console().print(table)


if __name__ == "__main__":
    main()
