"""Aggregate env steps/s of K seeds trained as one vmapped program (``--seeds K``), acting
and learning phases apart.

For each case (an agent on an env, with the library's preset where there is one) and each
K, the chunk program that ``python -m jaxrl.train --seeds K`` runs: K = 1 is the single
run's ``runners.make_runner``, K > 1 its ``experiment.sweep.batch_runner`` (the whole
agent state batched over members, what every member shares kept unbatched). The run is
cut into chunks (``Case.chunk`` env steps per member); after one untimed warm-up chunk,
``learning_starts`` is set so that the next ``Case.acting`` chunks only act and store
(the *acting* phase) and the ``Case.learning`` after them also take the preset's
gradient steps (the *learning* phase; PPO learns from the first chunk and has no acting
phase). Compile time
(``jit(...).lower(state).compile()``) and the run time of each phase are timed apart; no
evaluation runs (``eval_every`` 0). Aggregate env steps/s = K x env steps per member /
run seconds; ``x 1 seed`` is that over the K = 1 figure of the same phase (at least 1: K
members cost no more than one seed's time each on the 2-core CPU).

    python benchmarks/sweep_scaling.py [--cases dqn-cartpole ...] [--seeds 1 3 32]

MinAtar replay buffers are cut to ``--minatar-buffer`` transitions per member (32
members x 100k would not leave memory for the other jobs of the machine); the per-step
cost does not depend on the capacity.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time

import jax
from rich.console import Console
from rich.table import Table

from jaxrl import agents
from jaxrl.experiment.config import resolve
from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import make_runner


@dataclasses.dataclass(frozen=True)
class Case:
    """An agent on an env; ``chunk`` env steps per member per chunk, ``acting`` chunks
    before ``learning_starts`` (0: an on-policy agent), ``learning`` chunks after it:
    sized so that the 1-seed phases take a second or more on the 2-core CPU, not the
    scheduler's latency."""

    agent: str
    env: str
    chunk: int
    acting: int
    learning: int


CASES = {
    "dqn-cartpole": Case("dqn", "CartPole", chunk=8192, acting=2, learning=1),
    "ppo-cartpole": Case("ppo", "CartPole", chunk=8192, acting=0, learning=4),
    "dqn-minatar": Case("dqn", "MinAtar-Breakout", chunk=512, acting=16, learning=1),
    "rainbow-minatar": Case("rainbow", "MinAtar-Breakout", chunk=256, acting=32, learning=1),
}


def build(case: Case, chunk: int, acting_chunks: int, chunks: int, minatar_buffer: int):
    """The single-run runner of ``case`` with chunks of about ``chunk`` env steps."""
    cfg = resolve(agent=case.agent, env=case.env)
    options = cfg.agent.kwargs()
    num_envs = cfg.env.num_envs
    per_iteration = cfg.run.rollout_len * num_envs
    chunk = max(per_iteration, chunk // per_iteration * per_iteration)
    if case.acting:
        options["learning_starts"] = acting_chunks * chunk
        if "MinAtar" in case.env:
            options["buffer_size"] = minatar_buffer
    run = cfg.with_run(steps=chunks * chunk, log_every=chunk, eval_every=0, stop_return=None).run
    env = cfg.env.make()
    agent = agents.make(case.agent, env.spec, **options)
    return make_runner(agent, env, run), chunk, num_envs


def measure(case: Case, seeds: int, args: argparse.Namespace) -> dict[str, float]:
    acting, learning = case.acting, case.learning
    chunks = 1 + acting + learning  # the first, a warm-up, is not timed
    runner, chunk, num_envs = build(case, case.chunk, 1 + acting, chunks, args.minatar_buffer)
    if seeds > 1:
        runner = batch_runner(runner)
        init_args = (jax.random.split(jax.random.PRNGKey(0), seeds),)
    else:
        init_args = (jax.random.PRNGKey(0),)
    start = time.perf_counter()
    state = jax.block_until_ready(jax.jit(runner.init)(*init_args))
    run_chunk = jax.jit(runner.run_chunk, donate_argnums=0).lower(state).compile()
    compile_time = time.perf_counter() - start
    times = []
    for _ in range(chunks):
        start = time.perf_counter()
        state, metrics = jax.block_until_ready(run_chunk(state))
        times.append(time.perf_counter() - start)
    # Chunk 0 (first execution: buffers touched, an off-policy agent only acting; a PPO
    # agent learning) is a warm-up; then ``acting`` chunks before ``learning_starts``.
    acting_time, learning_time = sum(times[1 : 1 + acting]), sum(times[1 + acting :])
    rate = lambda t, n: seeds * n * chunk / t if n else float("nan")
    return dict(
        compile=compile_time,
        acting=acting_time,
        learning=learning_time,
        acting_sps=rate(acting_time, acting),
        learning_sps=rate(learning_time, learning),
        chunk=chunk,
        num_envs=num_envs,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 3, 32])
    parser.add_argument("--minatar-buffer", type=int, default=20_000)
    args = parser.parse_args()
    table = Table(title="--seeds K as one vmapped program: aggregate env steps/s")
    columns = ("case", "K", "envs", "chunk", "compile s", "acting s", "acting steps/s",
               "x 1 seed", "learning s", "learning steps/s", "x 1 seed")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    console = Console()
    for name in args.cases:
        base = None
        for seeds in args.seeds:
            m = measure(CASES[name], seeds, args)
            base = base or m
            row = (
                name,
                str(seeds),
                str(m["num_envs"]),
                str(m["chunk"]),
                f"{m['compile']:.1f}",
                f"{m['acting']:.2f}",
                f"{m['acting_sps']:,.0f}",
                f"{m['acting_sps'] / base['acting_sps']:.2f}",
                f"{m['learning']:.2f}",
                f"{m['learning_sps']:,.0f}",
                f"{m['learning_sps'] / base['learning_sps']:.2f}",
            )
            table.add_row(*row)
            console.print("| " + " | ".join(row) + " |")  # a Markdown row as it comes
    load = os.getloadavg()
    table.caption = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, {jax.default_backend()}, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end"
    )
    console.print(table)


if __name__ == "__main__":
    main()
