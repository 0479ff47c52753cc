"""Every agent on every built-in env it can act in, with no flags (issue 13, part 1).

For each agent x env pair whose action space fits, resolves the config the CLI would
(``python -m jaxrl.train --agent A --env E``: the pair's tuned preset, a family preset,
the agent's ``family: "*"`` preset, or its defaults), caps the run at ``--budget`` env
steps (a preset's own ``steps`` where smaller; its ``stop_return`` kept), trains it in a
temporary run directory and prints one table row: the preset used, env steps done,
compile and run seconds, the best greedy evaluation during training and the final one.

    python benchmarks/agent_env_matrix.py                      # classic control
    python benchmarks/agent_env_matrix.py --envs MinAtar-Breakout --budget 200000
    python benchmarks/agent_env_matrix.py --agents ppo a2c --envs Acrobot-v1

A pair that fails prints its one-line error in the table instead of numbers.
"""

from __future__ import annotations

import argparse
import io
import math
import tempfile
import time

from rich.console import Console

from jaxrl import agents, envs
from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import Launch, run_experiment
from jaxrl.types import ConfigError, Discrete

DISCRETE_ONLY, CONTINUOUS_ONLY = {"dqn", "rainbow"}, {"sac", "td3", "ddpg"}


def fits(agent: str, env: str) -> bool:
    discrete = isinstance(envs.make(env).spec.action_space, Discrete)
    return agent not in (CONTINUOUS_ONLY if discrete else DISCRETE_ONLY)


def run_pair(agent: str, env: str, budget: int) -> dict:
    cfg = resolve(agent=agent, env=env)
    steps = min(cfg.run.steps, budget)
    cfg = resolve(agent=agent, env=env, steps=steps)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as logdir:
        summary = run_experiment(cfg, logdir, Console(file=io.StringIO()), Launch(keep=1))
    return dict(
        preset=cfg.preset or "defaults",
        steps=summary.steps,
        compile=summary.compile_time,
        run=summary.run_time,
        wall=time.perf_counter() - start,
        best=summary.best_eval_return,
        final=summary.final_eval_return,
        stop=cfg.run.stop_return,
        solved=summary.solved,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="*", default=list(agents.available()))
    classic = [n for n in envs.available() if envs.group(n) == "classic"]
    parser.add_argument("--envs", nargs="*", default=classic)
    parser.add_argument("--budget", type=int, default=100_000, help="env steps per pair")
    args = parser.parse_args()
    fmt = lambda x: "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"
    print("| agent | env | preset | env steps | compile s | run s | best eval | final eval |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for env in args.envs:
        for agent in args.agents:
            if not fits(agent, env):
                continue
            try:
                r = run_pair(agent, env, args.budget)
            except ConfigError as e:
                print(f"| {agent} | {env} | error: {e} | | | | | |", flush=True)
                continue
            solved = f" (reached {r['stop']:g})" if r["solved"] else ""
            print(
                f"| {agent} | {env} | {r['preset']} | {r['steps']:,} | {r['compile']:.1f} | "
                f"{r['run']:.1f} | {fmt(r['best'])}{solved} | {fmt(r['final'])} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
