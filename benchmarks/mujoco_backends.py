"""MuJoCo on MJX against Brax in the fused runner: compile time and env steps/s.

    nice -n 10 python benchmarks/mujoco_backends.py [--env HalfCheetah] [--steps 2000]
        [--num-envs 1] [--agent random] [--backends mjx brax] [--learning-starts N]

For each backend the same program is built (``make_train`` of the agent on the env, one
jitted scan over all steps, no evaluation), compiled ahead of time (``lower().compile()``,
timed apart), then run twice; the second run is timed. Prints one table row per backend.
"""

from __future__ import annotations

import argparse
import os
import time

import jax

from jaxrl import agents, envs
from jaxrl.runners import RunConfig, make_train


def measure(
    agent_name: str, env_name: str, backend: str, steps: int, num_envs: int, learning_starts: int
) -> dict:
    env = envs.make(env_name, num_envs=num_envs, backend=backend)
    overrides = dict(learning_starts=learning_starts) if agent_name != "random" else {}
    agent = agents.make(agent_name, env.spec, **overrides)
    config = RunConfig(steps=steps, rollout_len=1, log_every=steps, eval_every=0)
    train = jax.jit(make_train(agent, env, config))
    key = jax.random.PRNGKey(0)
    t0 = time.perf_counter()
    compiled = train.lower(key).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(key))
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - t0
    return dict(backend=backend, name=env.spec.name, compile_s=compile_s, run_s=run_s,
                sps=steps * num_envs / run_s)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah")
    parser.add_argument("--agent", default="random")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--num-envs", type=int, default=1)
    parser.add_argument("--backends", nargs="+", default=["mjx", "brax"])
    parser.add_argument("--learning-starts", type=int, default=None,
                        help="warm-up steps (default: half the steps, <= 1000)")  # fmt: skip
    args = parser.parse_args()
    starts = args.learning_starts
    if starts is None:
        starts = min(1000, args.steps // 2)
    print(f"load average: {os.getloadavg()}")
    print(f"{'backend':<8} {'env':<18} {'agent':<7} {'envs':>4} {'steps':>7} "
          f"{'compile s':>9} {'run s':>8} {'env steps/s':>11}")  # fmt: skip
    for backend in args.backends:
        r = measure(args.agent, args.env, backend, args.steps, args.num_envs, starts)
        print(f"{backend:<8} {r['name']:<18} {args.agent:<7} {args.num_envs:>4} "
              f"{args.steps:>7} {r['compile_s']:>9.1f} {r['run_s']:>8.2f} {r['sps']:>11.0f}",
              flush=True)  # fmt: skip
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
