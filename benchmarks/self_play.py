"""Self-play on the pgx board games: learning against fixed opponents, and speed.

Learning: the preset of ``python -m jaxrl.train --agent A --env GAME --self-play``
(``jaxrl/presets/connect_four-rainbow.yaml``, ``tic_tac_toe-dqn.yaml``) trained for
``--seeds`` seeds as one vmapped fused program (the seeds' members equal separate runs,
tests/runners/games/test_self_play.py), with the greedy agent's win/draw/loss rates against the
uniform random opponent and the scripted one (win if it can, block if it must, else
random) every evaluation, ``run.eval_episodes`` games each (the agent takes each seat in
half of them):

    nice -n 10 python benchmarks/self_play.py learn --game connect_four --agent rainbow
    nice -n 10 python benchmarks/self_play.py learn --game tic_tac_toe --agent dqn

Speed: env steps/s of the self-play rollout (the untrained preset agent acting for both
players, transitions stitched, no update) and of the whole training program, on pgx's game
in the fused program and on PettingZoo's (``pz:connect_four_v3``, stepped on the host
through ``io_callback``) in the same program, compile and run time apart, one table:

    nice -n 10 python benchmarks/self_play.py speed --game connect_four --agent rainbow
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import Experiment, resolve
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners.games.self_play import make_self_play_runner

OUTCOMES = ("win", "draw", "loss")


def build(game: str, agent_name: str, steps: int | None, overrides: dict):
    cfg = resolve(agent=agent_name, env=game, steps=steps, overrides=overrides)
    parts = build_setup(cfg, Launch(loggers=[]), self_play=True)  # the CLI's checks
    return cfg, parts.agent, parts.env, parts.eval_env


def learn(args) -> None:
    cfg, agent, env, eval_env = build(args.game, args.agent, args.steps, args.override)
    run = cfg.run
    runner = batch_runner(make_self_play_runner(agent, env, run, eval_env))
    keys = jnp.stack([jax.random.PRNGKey(run.seed + i) for i in range(args.seeds)])
    start = time.perf_counter()
    state = jax.jit(runner.init)(keys)
    run_chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    table = Table(title=f"self-play {args.agent} on {args.game}: {args.seeds} seeds, greedy")
    for column in (
        "env steps",
        "wall s",
        *(f"{o} vs {w}" for w in ("random", "scripted") for o in ("win", "loss")),
    ):
        table.add_column(column, justify="right")
    console = Console()
    console.print(f"compile {compile_s:.1f} s; cfg {cfg}")
    wall = 0.0
    for _ in range(runner.num_chunks):
        t0 = time.perf_counter()
        state, metrics = run_chunk(state)
        metrics = jax.device_get(metrics)
        wall += time.perf_counter() - t0
        if np.isnan(metrics["eval_return"][:, -1]).any():
            continue
        step = int(metrics["step"][0, -1])
        cells = [f"{step:,}", f"{wall:.0f}"]
        for who in ("random", "scripted"):
            for outcome in ("win", "loss"):
                rates = metrics[f"eval_{outcome}_{who}"][:, -1]
                cells.append(" ".join(f"{r:.2f}" for r in rates))
        table.add_row(*cells)
        console.print(" | ".join(cells))
    console.print(table)
    console.print(
        f"train wall {wall:.0f} s, {runner.layout.total_steps * args.seeds / wall:,.0f} "
        f"env steps/s over {args.seeds} seeds (compile {compile_s:.0f} s)"
    )


def pettingzoo_sps(game: str, steps: int) -> float:
    """Env steps/s of PettingZoo's version of ``game`` on the host, one env, uniform random
    legal moves from NumPy (no agent: the host loop's floor), resetting at each game end."""
    from importlib import import_module

    module = {"connect_four": "connect_four_v3", "tic_tac_toe": "tictactoe_v3"}[game]
    env = import_module(f"pettingzoo.classic.{module}").env()
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.reset()
            obs, *_ = env.last()
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return steps / (time.perf_counter() - start)


PETTINGZOO = {"connect_four": "pz:connect_four_v3", "tic_tac_toe": "pz:classic.tictactoe_v3"}


def time_chunk(agent, env, cfg: Experiment, steps: int) -> tuple[float, float, int]:
    """``(compile s, run s, env steps)`` of one chunk of ``steps`` env steps of the fused
    self-play program of ``agent`` on ``env``, timed after a warm-up chunk."""
    run = dataclasses.replace(cfg.run, steps=steps, log_every=steps, eval_every=0)
    runner = make_self_play_runner(agent, env, run)
    start = time.perf_counter()
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(runner.run_chunk).lower(state).compile()
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - start
    state, _ = run_chunk(state)  # warm
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    state, metrics = run_chunk(state)
    jax.block_until_ready(metrics)
    return compile_s, time.perf_counter() - t0, runner.layout.steps_per_chunk


def speed(args) -> None:
    """One table: the same self-play program (the preset agent acting for both players,
    transitions stitched; with and without its updates) on pgx's game inside the fused
    program and on PettingZoo's game stepped on the host through ``io_callback``
    (``pz:``), then PettingZoo's game alone (random legal moves from NumPy, no agent)."""
    cfg, agent, _, _ = build(args.game, args.agent, None, args.override)
    num_envs = cfg.env.num_envs
    options = cfg.agent.kwargs()
    table = Table(title=f"self-play {args.game} {args.agent}, {num_envs} envs")
    for column in ("env", "program", "envs", "compile s", "run s", "env steps", "env steps/s"):
        table.add_column(column, justify="left" if column in ("env", "program") else "right")
    for name in (args.game, PETTINGZOO[args.game]):
        env = envs.make(name, num_envs=num_envs)
        acting = agents.make(args.agent, env.spec, **(options | {"learning_starts": 10**9}))
        training = agents.make(args.agent, env.spec, **options)
        for what, ag in (("rollout (act + stitch)", acting), ("training", training)):
            compile_s, run_s, steps = time_chunk(ag, env, cfg, args.steps)
            row = (name, what, str(num_envs), f"{compile_s:.1f}", f"{run_s:.2f}")
            table.add_row(*row, f"{steps:,}", f"{steps / run_s:,.0f}")
    host_steps = 5000
    host_start = time.perf_counter()
    sps = pettingzoo_sps(args.game, host_steps)
    run_s = time.perf_counter() - host_start
    row = (PETTINGZOO[args.game], "game alone: random moves, no agent", "1", "-")
    table.add_row(*row, f"{run_s:.2f}", f"{host_steps:,}", f"{sps:,.0f}")
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("learn", "speed"))
    parser.add_argument("--game", default="connect_four")
    parser.add_argument("--agent", default="rainbow")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--set",
        dest="override",
        action="append",
        default=[],
        metavar="agent.KEY=VALUE",
        help="override a preset value",
    )
    args = parser.parse_args()
    from jaxrl.experiment.config import parse_override

    args.override = {k: parse_override(v) for k, _, v in (s.partition("=") for s in args.override)}
    if args.mode == "speed" and args.steps is None:
        args.steps = 12800
    (learn if args.mode == "learn" else speed)(args)


if __name__ == "__main__":
    main()
