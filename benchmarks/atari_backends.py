"""Pong frames/s of the two Atari backends side by side, in the same run (issue 12,
part 6): ale-py's XLA vector env (the default) and envpool (``--env.backend envpool``).

Rows per backend and env count, each one compiled program (compile time apart):

* ``raw``: the backend's own vector env stepped with uniformly random actions in a jitted
  ``lax.scan``, its native semantics (a finished game reset on the next step): ale-py's
  ``AtariVectorEnv(...).xla()`` step, and envpool's ``env.xla()`` step (which runs inside
  ``lax.scan`` with jax 0.10.2);
* ``fused runner, random agent``: ``runners.make_runner`` with the ``random`` agent on
  ``envs.make("Pong", backend=...)`` (same-step auto-reset; envpool's through host
  callbacks, see ``jaxrl/envs/atari_envpool.py``), one chunk of rollouts of 4.

Same settings for both: sticky actions 0.25, 84x84 grayscale, frameskip 4, stack 4, no
no-op starts. Frames are emulator frames (agent steps x 4). Best of ``--repeats`` runs
taken in turns, so that the shared machine's load affects all rows alike; the load
average is printed.

    python benchmarks/atari_backends.py [--envs 8 64] [--steps 8192] [--repeats 3]
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
from jaxrl.runners import RunConfig, make_runner

ENV_OPTIONS = dict(repeat_action_probability=0.25, noop_max=0)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def scan_steps(handle, step, num_envs: int, steps: int, num_actions: int):
    """``(compile s, run)`` of ``steps // num_envs`` random steps of ``step`` in a scan."""

    def run(handle, key):
        def body(carry, key):
            handle, total = carry
            action = jax.random.randint(key, (num_envs,), 0, num_actions, dtype=jnp.int32)
            handle, (_, reward, *_) = step(handle, action)
            return (handle, total + reward.sum()), None

        keys = jax.random.split(key, steps // num_envs)
        return jax.lax.scan(body, (handle, jnp.zeros(())), keys)[0]

    args = (handle, jax.random.PRNGKey(0))
    start = time.perf_counter()
    exe = jax.jit(run).lower(*args).compile()
    return time.perf_counter() - start, lambda: jax.block_until_ready(exe(*args))


def raw_ale(num_envs: int, steps: int):
    from ale_py import AtariVectorEnv

    vec = AtariVectorEnv("pong", num_envs, reward_clipping=False, **ENV_OPTIONS)
    handle, reset, step = vec.xla()
    handle, _ = jax.jit(lambda h: reset(h, seed=0))(handle)
    compile_s, run = scan_steps(handle, step, num_envs, steps, vec.single_action_space.n)
    return compile_s, lambda: (vec, run())  # `vec` owns the emulators


def raw_envpool(num_envs: int, steps: int):
    import envpool

    pool = envpool.make(
        "Pong-v5", env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, seed=0,
        repeat_action_probability=0.25, noop_max=1, use_fire_reset=False, reward_clip=False,
    )  # fmt: skip
    pool.reset()
    handle, _, _, step = pool.xla()
    compile_s, run = scan_steps(handle, step, num_envs, steps, pool.action_space.n)
    return compile_s, lambda: (pool, run())


def fused(backend: str, num_envs: int, steps: int):
    env = envs.make("Pong", num_envs=num_envs, backend=backend, **ENV_OPTIONS)
    agent = agents.make("random", env.spec)
    runner = make_runner(
        agent, env, RunConfig(steps=steps, rollout_len=4, log_every=steps, eval_every=0)
    )
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    start = time.perf_counter()
    chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    box = [state, env]  # the env must outlive its compiled programs

    def run():
        box[0], _ = jax.block_until_ready(chunk(box[0]))

    return compile_s, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="*", default=[8, 64])
    parser.add_argument("--steps", type=int, default=8192, help="agent steps per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device = jax.devices()[0]
    console = Console(width=160)
    console.print(
        f"{device.device_kind} ({platform.machine()}), {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, load average {load()} at start"
    )
    table = Table(title=f"Pong frames/s by backend on {device.device_kind}")
    for column in ("num_envs", "backend", "program", "compile s", "frames/s", "load"):
        table.add_column(column, justify="right")
    for num_envs in args.envs:
        steps = args.steps // (4 * num_envs) * (4 * num_envs)
        cases = [
            ("ale_py", "raw (xla step in scan)", raw_ale),
            ("envpool", "raw (xla step in scan)", raw_envpool),
            ("ale_py", "fused runner, random agent", lambda n, s: fused("ale_py", n, s)),
            ("envpool", "fused runner, random agent", lambda n, s: fused("envpool", n, s)),
        ]
        before = load()
        built = [make(num_envs, steps) for _, _, make in cases]
        best = [float("inf")] * len(built)
        for _ in range(args.repeats):
            for i, (_, run) in enumerate(built):
                start = time.perf_counter()
                run()
                best[i] = min(best[i], time.perf_counter() - start)
        loads = f"{before} -> {load()}"
        for (backend, program, _), (compile_s, _), seconds in zip(cases, built, best, strict=True):
            fps = steps * 4 / seconds
            table.add_row(str(num_envs), backend, program, f"{compile_s:.1f}", f"{fps:,.0f}", loads)
            console.print(f"  {num_envs} envs, {backend}, {program}: {fps:,.0f} frames/s")
    console.print(table)


if __name__ == "__main__":
    main()
