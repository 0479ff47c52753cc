"""Atari throughput on Pong: emulator frames/s of ale-py's XLA vector env alone and of
jaxrl's fused programs, for 8 and 64 envs, on the default JAX device.

Rows, each one compiled program (compile time reported apart, not in frames/s):

* ``vector env alone``: ale-py's ``AtariVectorEnv(...).xla()`` step in a jitted
  ``lax.scan`` with uniformly random actions: the ceiling.
* ``jaxrl env``: the same through ``jaxrl.envs.make("Pong")`` (same-step auto-reset,
  episode statistics, reward clipping, frames moved last), random actions.
* ``fused runner, random agent``: ``runners.make_runner`` with the ``random`` agent, one
  chunk of ``rollout_len`` 4 rollouts (the whole training loop but learning).
* ``fused runner, dqn`` / ``rainbow``: the ``atari-dqn`` / ``atari-rainbow`` presets' agents
  (Nature CNN; Rainbow: C51, 3-step, prioritized) with one gradient step of batch 32 per
  4 env steps (``updates_per_rollout = num_envs``), but a 100,000-transition buffer (the
  presets' 1M takes 7 GB) and learning from 4,096 steps; timed after a warm-up chunk
  that passes ``learning_starts``.

The env is the presets' (sticky actions 0.25, no no-op starts). Frames are emulator
frames: agent steps x 4. Best of ``--repeats`` runs, taken in turns, for the env and
random-agent rows.

    python benchmarks/atari_throughput.py [--envs 8 64] [--steps 16384] [--learn-steps 4096]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import load_preset
from jaxrl.runners import RunConfig, make_runner

ENV_OPTIONS = dict(repeat_action_probability=0.25, noop_max=0)
FRAMESKIP = 4


def compiled(fn, *args):
    """``(compile s, run)``: ``run()`` runs the compiled ``jax.jit(fn)(*args)`` to the end."""
    start = time.perf_counter()
    exe = jax.jit(fn).lower(*args).compile()
    return time.perf_counter() - start, lambda: jax.block_until_ready(exe(*args))


def raw_vector_env(num_envs: int, steps: int):
    """ale-py's XLA step alone in a scan, random actions."""
    from ale_py import AtariVectorEnv

    vec = AtariVectorEnv("pong", num_envs, reward_clipping=False, **ENV_OPTIONS)
    handle, reset, step = vec.xla()
    handle, _ = jax.jit(lambda h: reset(h, seed=0))(handle)
    n = vec.single_action_space.n

    def run(handle, key):
        def body(carry, key):
            handle, total = carry
            action = jax.random.randint(key, (num_envs,), 0, n, dtype=jnp.int32)
            handle, (_, reward, *_) = step(handle, action)
            return (handle, total + reward.sum()), None

        keys = jax.random.split(key, steps // num_envs)
        return jax.lax.scan(body, (handle, jnp.zeros((), jnp.int32)), keys)[0]

    compile_s, exe = compiled(run, handle, jax.random.PRNGKey(0))
    return compile_s, lambda: (vec, exe())  # `vec` owns the emulators the handle points to


def jaxrl_env(num_envs: int, steps: int):
    """``jaxrl.envs.make("Pong")`` in a scan, random actions."""
    env = envs.make("Pong", num_envs=num_envs, **ENV_OPTIONS)
    state, _ = jax.jit(env.reset)(jax.random.PRNGKey(0))
    n = env.spec.action_space.n

    def run(state, key):
        def body(carry, key):
            state, total = carry
            action = jax.random.randint(key, (num_envs,), 0, n, dtype=jnp.int32)
            state, ts = env.step(state, action, key)
            return (state, total + ts.info["episode_return"].sum()), None

        keys = jax.random.split(key, steps // num_envs)
        return jax.lax.scan(body, (state, jnp.zeros(())), keys)[0]

    compile_s, exe = compiled(run, state, jax.random.PRNGKey(1))
    return compile_s, lambda: (env, exe())  # the env must outlive its compiled programs


def fused(agent_name: str, num_envs: int, steps: int, warmup: int = 0):
    """One chunk of ``steps`` env steps of the fused runner; ``(compile s, run)``."""
    env = envs.make("Pong", num_envs=num_envs, **ENV_OPTIONS)
    options = {}
    if agent_name != "random":
        preset = load_preset(f"atari-{agent_name}")["agent"]
        options = {k: v for k, v in preset.items() if k != "name"}
        options.update(
            buffer_size=100_000,
            learning_starts=warmup,
            updates_per_rollout=num_envs,  # 4 * num_envs env steps per rollout of 4
        )
        if agent_name == "rainbow":
            options["beta_decay_steps"] = 1_000_000
    agent = agents.make(agent_name, env.spec, **options)
    config = RunConfig(steps=steps, rollout_len=4, log_every=steps, eval_every=0)
    runner = make_runner(agent, env, config)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    start = time.perf_counter()
    chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    steps_per_chunk = runner.iterations_per_chunk * runner.steps_per_iteration
    assert steps_per_chunk == steps
    while warmup > 0:  # fill the buffer past learning_starts
        state, _ = jax.block_until_ready(chunk(state))
        warmup -= steps_per_chunk
    box = [state, env]  # the env must outlive its compiled programs

    def run():
        box[0], metrics = jax.block_until_ready(chunk(box[0]))
        if agent_name != "random":
            assert bool(jnp.isfinite(metrics["loss"]).all()), "the timed chunk did not learn"

    return compile_s, run


def best_times(runs, repeats: int) -> list[float]:
    """Best wall seconds of each of ``runs``, taking turns so that load affects all alike."""
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for i, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--steps", type=int, default=16_384, help="env steps per timed run")
    parser.add_argument("--learn-steps", type=int, default=4_096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", nargs="*", default=["dqn", "rainbow"])
    args = parser.parse_args()

    device = jax.devices()[0]
    table = Table(title=f"Pong frames/s on {device.device_kind} ({platform.machine()})")
    for column in ("num_envs", "program", "compile s", "frames/s", "vs env alone"):
        table.add_column(column, justify="right")
    for num_envs in args.envs:
        steps = args.steps // (4 * num_envs) * (4 * num_envs)
        names = ["vector env alone (ale-py xla)", "jaxrl env", "fused runner, random agent"]
        built = [raw_vector_env(num_envs, steps), jaxrl_env(num_envs, steps)]
        built.append(fused("random", num_envs, steps))
        times = best_times([run for _, run in built], args.repeats)
        rows = [
            (n, c, steps * FRAMESKIP / t) for n, (c, _), t in zip(names, built, times, strict=True)
        ]
        raw_fps = rows[0][2]
        learn = args.learn_steps // (4 * num_envs) * (4 * num_envs)
        for name in args.agents:
            c, run = fused(name, num_envs, learn, warmup=learn)
            rows.append((f"fused runner, {name}", c, learn * FRAMESKIP / best_times([run], 1)[0]))
        for program, c, fps in rows:
            table.add_row(str(num_envs), program, f"{c:.1f}", f"{fps:,.0f}", f"{fps / raw_fps:.1%}")
    Console().print(table)


if __name__ == "__main__":
    main()
