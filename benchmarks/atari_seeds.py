"""Aggregate env steps/s of K seeds of Atari Pong trained as one program (``--seeds K``):
one ale-py vector env of K x ``num_envs`` emulators, split per member (issue 12, part 5).

For K in ``--seeds`` and each agent in ``--agents`` (``random``; ``dqn``: the
``atari-dqn`` preset's agent, Nature CNN, one gradient step of batch 32 per 4 env steps
of each member, a ``--buffer``-transition buffer per member instead of the preset's 1M,
which K members could not hold in this machine's memory), the chunk program that
``python -m jaxrl.train --env Pong --seeds K`` runs: K = 1 is the single run's
``runners.make_runner``, K > 1 its ``experiment.sweep.batch_runner``. Compile time
(``jit(run_chunk).lower(state).compile()``) is timed apart; DQN's timed chunk comes
after an untimed one that passes ``learning_starts``, so it learns throughout. No
evaluation (``eval_every`` 0). Aggregate env steps/s = K x env steps per member / run
seconds (best of ``--repeats``); ``x 1 seed`` is that over K = 1's. The env is the
presets' (sticky actions 0.25, no no-op starts). ``os.getloadavg()`` is printed per row:
the CPU of this project is shared.

    python benchmarks/atari_seeds.py [--seeds 1 2 4] [--agents random dqn] [--envs 8]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import load_preset
from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import RunConfig, make_runner

ENV_OPTIONS = dict(repeat_action_probability=0.25, noop_max=0)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def options(agent_name: str, num_envs: int, buffer: int, warmup: int) -> dict:
    """The ``atari-<agent>`` preset's agent options with a ``buffer`` capacity, learning
    from ``warmup`` steps, one gradient step per 4 env steps; ``{}`` for ``random``."""
    if agent_name == "random":
        return {}
    preset = load_preset(f"atari-{agent_name}")["agent"]
    out = {k: v for k, v in preset.items() if k != "name"}
    out.update(buffer_size=buffer, learning_starts=warmup, updates_per_rollout=num_envs)
    return out


def row(agent_name: str, seeds: int, num_envs: int, steps: int, buffer: int, repeats: int):
    """``(compile s, aggregate env steps/s, load before -> after)`` of one case."""
    before = load()
    env = envs.make("Pong", num_envs=num_envs, **ENV_OPTIONS)
    warmup = steps if agent_name != "random" else 0
    agent = agents.make(agent_name, env.spec, **options(agent_name, num_envs, buffer, warmup))
    config = RunConfig(steps=steps, rollout_len=4, log_every=steps, eval_every=0)
    runner = make_runner(agent, env, config)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    if seeds > 1:
        runner = batch_runner(runner)
        state = jax.jit(runner.init)(keys)
    else:
        state = jax.jit(runner.init)(keys[0])
    start = time.perf_counter()
    chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    if warmup:  # an untimed chunk that passes learning_starts
        state, _ = jax.block_until_ready(chunk(state))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        state, metrics = jax.block_until_ready(chunk(state))
        best = min(best, time.perf_counter() - start)
        if agent_name != "random":
            assert bool(jnp.isfinite(metrics["loss"]).all()), "the timed chunk did not learn"
    del env  # kept alive until here: its emulators back the compiled program
    return compile_s, seeds * steps / best, f"{before} -> {load()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--agents", nargs="*", default=["random", "dqn"])
    parser.add_argument("--envs", type=int, default=8, help="envs per member")
    parser.add_argument("--steps", type=int, default=4096, help="env steps per member, random")
    parser.add_argument("--learn-steps", type=int, default=512, help="env steps per member, dqn")
    parser.add_argument("--buffer", type=int, default=10_000, help="dqn buffer per member")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    device = jax.devices()[0]
    console = Console(width=160)
    console.print(
        f"{device.device_kind} ({platform.machine()}), {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, load average {load()} at start"
    )
    table = Table(title=f"Pong, --seeds K, {args.envs} envs per seed, on {device.device_kind}")
    for column in ("agent", "K", "compile s", "env steps/s (all seeds)", "x 1 seed", "load"):
        table.add_column(column, justify="right")
    for agent_name in args.agents:
        steps = args.steps if agent_name == "random" else args.learn_steps
        steps = steps // (4 * args.envs) * (4 * args.envs)
        one = None
        for k in args.seeds:
            compile_s, rate, loads = row(agent_name, k, args.envs, steps, args.buffer, args.repeats)
            one = rate if k == 1 else one
            scale = "-" if one is None else f"{rate / one:.2f}"
            table.add_row(agent_name, str(k), f"{compile_s:.1f}", f"{rate:,.1f}", scale, loads)
            console.print(f"  {agent_name} K={k}: {rate:,.1f} env steps/s ({loads})")
    console.print(table)


if __name__ == "__main__":
    main()
