"""Atari throughput on Pong: emulator frames/s of ale-py's XLA vector env alone and of
jaxrl's fused programs, for 8 and 64 envs, on the default JAX device; and the learning
phase held to the bound of its gradient steps (Pong, and MinAtar-Breakout with
``--minatar``).

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

The learning-phase table (one row per agent and env count) holds the fused program
while it learns to the bound its gradient steps set (issue 12, part 2):

* ``env steps/s learning``: a chunk of ``--learn-steps`` env steps of the fused runner
  (``make_runner``'s ``run_chunk``, acting, replay and ``updates_per_rollout`` gradient
  steps per rollout inside one ``lax.scan``), after a warm-up chunk that passes
  ``learning_starts``; best of ``--learn-repeats``.
* ``grad step ms``: one gradient step of the same network (the agent's own
  ``make_network``, so the same convolution code) on a batch of the same size, as its
  own ``jax.jit`` call: the online network's forward and backward pass on ``obs``, the
  target network's forward pass on the bootstrap observations, the loss (C51 cross-entropy
  for Rainbow, Huber TD for DQN) and Adam; best of 10 calls before and 10 after the
  fused chunk. No replay sampling.
* ``bound`` = env steps per iteration / (gradient steps per iteration x step time), the
  env steps/s if the gradient steps were all the work and ran at their standalone speed;
  ``ratio`` = learning / bound (the goal on the 2-core CPU: at least 0.5).

``--minatar`` adds MinAtar-Breakout rows: DQN with the ``minatar-dqn`` preset (4 envs,
one gradient step of batch 32 per env step, learning from the warm-up chunk's end) with
its bound, and PPO with CleanRL's Atari settings (8 envs x 128 steps, 4 epochs of 4
minibatches of 256; the MinAtar CNN), whose row has no bound. ``os.getloadavg()`` is
printed with every learning row: the CPU of this project is shared.

    python benchmarks/atari_throughput.py [--envs 8 64] [--steps 16384] [--learn-steps 4096]
    python benchmarks/atari_throughput.py --envs 8 --no-env-rows --learn-steps 2048 --minatar
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.agents.q_learning.rainbow import RainbowConfig, make_network
from jaxrl.experiment.config import load_preset
from jaxrl.runners import RunConfig, make_runner

# The Rainbow flags that leave DQN's network and loss: an expected-value head, no noise.
DQN_FLAGS = dict(noisy=False, distributional=False, prioritized=False)

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


def agent_options(agent_name: str, num_envs: int, warmup: int) -> dict:
    """The ``atari-<agent>`` preset's agent options, with a 100k buffer, learning from
    ``warmup`` steps and one gradient step per 4 env steps (``updates_per_rollout =
    num_envs`` with rollouts of 4); ``{}`` for the random agent."""
    if agent_name == "random":
        return {}
    preset = load_preset(f"atari-{agent_name}")["agent"]
    options = {k: v for k, v in preset.items() if k != "name"}
    options.update(buffer_size=100_000, learning_starts=warmup, updates_per_rollout=num_envs)
    if agent_name == "rainbow":
        options["beta_decay_steps"] = 1_000_000
    return options


def fused(
    agent_name: str,
    num_envs: int,
    steps: int,
    warmup: int = 0,
    env_name: str = "Pong",
    options: dict | None = None,
    rollout_len: int = 4,
):
    """One chunk of ``steps`` env steps of the fused runner; ``(compile s, run)``. The
    ``run`` of a learning agent asserts that its chunk took gradient steps."""
    env = envs.make(env_name, num_envs=num_envs, **(ENV_OPTIONS if env_name == "Pong" else {}))
    if options is None:
        options = agent_options(agent_name, num_envs, warmup)
    agent = agents.make(agent_name, env.spec, **options)
    config = RunConfig(steps=steps, rollout_len=rollout_len, log_every=steps, eval_every=0)
    runner = make_runner(agent, env, config)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    start = time.perf_counter()
    chunk = jax.jit(runner.run_chunk).lower(state).compile()
    compile_s = time.perf_counter() - start
    steps_per_chunk = runner.iterations_per_chunk * runner.steps_per_iteration
    assert steps_per_chunk == steps, (steps_per_chunk, steps)
    while warmup > 0:  # fill the buffer past learning_starts
        state, _ = jax.block_until_ready(chunk(state))
        warmup -= steps_per_chunk
    box = [state, env]  # the env must outlive its compiled programs

    def run():
        box[0], metrics = jax.block_until_ready(chunk(box[0]))
        if agent_name != "random":
            loss = next(v for k, v in metrics.items() if "loss" in k)
            assert bool(jnp.isfinite(loss).all()), "the timed chunk did not learn"

    return compile_s, run


def gradient_step_seconds(spec, agent_name: str, options: dict, repeats: int = 10) -> float:
    """Best wall seconds of one jitted gradient step of the agent's network on a batch of
    ``batch_size``: online forward + backward on ``obs``, target forward on ``next_obs``,
    the loss (C51 cross-entropy against the target network's distribution at its greedy
    action, without projection, when distributional; else a Huber TD error against the
    max target Q) and Adam."""
    fields = {f for f in RainbowConfig.__dataclass_fields__}
    cfg_options = {k: v for k, v in options.items() if k in fields}
    if "hidden_sizes" in cfg_options:
        cfg_options["hidden_sizes"] = tuple(cfg_options["hidden_sizes"])
    if agent_name == "dqn":
        cfg_options.update(DQN_FLAGS)
    cfg = RainbowConfig(**cfg_options)
    network = make_network(spec, cfg)
    b = cfg.batch_size
    rng = np.random.default_rng(0)
    if np.dtype(spec.obs_dtype) == np.uint8:
        obs = rng.integers(0, 256, size=(2, b, *spec.obs_shape), dtype=np.uint8)
    else:
        obs = rng.integers(0, 2, size=(2, b, *spec.obs_shape)).astype(spec.obs_dtype)
    action = jnp.asarray(rng.integers(0, spec.action_space.n, size=b), jnp.int32)
    reward = jnp.asarray(rng.normal(size=b), jnp.float32)
    key = jax.random.PRNGKey(0)
    params = network.init({"params": key, "noise": key}, obs[0, :1])
    optimizer = optax.adam(cfg.lr, eps=cfg.adam_eps)
    rows = jnp.arange(b)

    def loss_fn(params, target_params, obs, next_obs):
        online = network.apply(params, obs, deterministic=True)[rows, action]
        nxt = jax.lax.stop_gradient(network.apply(target_params, next_obs, deterministic=True))
        if cfg.distributional:
            probs = jax.nn.softmax(nxt, axis=-1)  # [B, A, K]
            target = probs[rows, jnp.argmax(probs.sum(-1), axis=-1)]
            return -(target * jax.nn.log_softmax(online, axis=-1)).sum(-1).mean()
        return optax.huber_loss(online, reward + cfg.gamma * nxt.max(-1)).mean()

    def step(params, target_params, opt_state, obs, next_obs):
        loss, grads = jax.value_and_grad(loss_fn)(params, target_params, obs, next_obs)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    args = (params, params, optimizer.init(params), jnp.asarray(obs[0]), jnp.asarray(obs[1]))
    exe = jax.jit(step).lower(*args).compile()
    jax.block_until_ready(exe(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(exe(*args))
        best = min(best, time.perf_counter() - start)
    return best


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def learning_row(
    label, agent_name, env_name, num_envs, steps, repeats, options=None, rollout_len=4, bound=True
):
    """``(label, compile s, env steps/s learning, grad step ms, bound, ratio, load)``."""
    warmup = steps
    if options is None:
        options = agent_options(agent_name, num_envs, warmup)
    load_before = load()
    compile_s, run = fused(agent_name, num_envs, steps, warmup, env_name, options, rollout_len)
    step_ms = bound_rate = ratio = None
    if bound:  # timed before and after the fused chunk, the best kept: load varies
        spec = (
            envs.make(env_name, num_envs=num_envs).spec
            if env_name != "Pong"
            else (envs.make("Pong", num_envs=num_envs, **ENV_OPTIONS).spec)
        )
        step_s = gradient_step_seconds(spec, agent_name, options)
    rate = steps / min(best_times([run], repeats))
    if bound:
        step_s = min(step_s, gradient_step_seconds(spec, agent_name, options))
        env_steps_per_iteration = num_envs * rollout_len
        bound_rate = env_steps_per_iteration / (options["updates_per_rollout"] * step_s)
        step_ms, ratio = step_s * 1e3, rate / bound_rate
    return label, compile_s, rate, step_ms, bound_rate, ratio, f"{load_before} -> {load()}"


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
    parser.add_argument("--envs", type=int, nargs="*", default=[8, 64])
    parser.add_argument("--steps", type=int, default=16_384, help="env steps per timed run")
    parser.add_argument("--learn-steps", type=int, default=4_096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", nargs="*", default=["dqn", "rainbow"])
    parser.add_argument("--learn-repeats", type=int, default=1)
    parser.add_argument("--no-env-rows", action="store_true", help="only the learning-phase table")
    parser.add_argument("--minatar", action="store_true", help="MinAtar-Breakout DQN, PPO rows")
    parser.add_argument("--minatar-steps", type=int, default=8_192)
    args = parser.parse_args()

    device = jax.devices()[0]
    console = Console(width=180)
    console.print(
        f"{device.device_kind} ({platform.machine()}), {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, load average {load()} at start"
    )
    table = Table(title=f"Pong frames/s on {device.device_kind} ({platform.machine()})")
    for column in ("num_envs", "program", "compile s", "frames/s", "vs env alone"):
        table.add_column(column, justify="right")
    learning = Table(title="learning phase: fused env steps/s against the gradient steps' bound")
    for column in (
        "env",
        "num_envs",
        "program",
        "compile s",
        "env steps/s learning",
        "grad step ms",
        "bound",
        "ratio",
        "load 1/5/15 min before -> after",
    ):
        learning.add_column(column, justify="right")

    def add_learning(env, num_envs, row):
        label, c, rate, step_ms, bound, ratio, loads = row
        learning.add_row(
            env,
            str(num_envs),
            label,
            f"{c:.1f}",
            f"{rate:,.1f}",
            "-" if step_ms is None else f"{step_ms:.1f}",
            "-" if bound is None else f"{bound:,.1f}",
            "-" if ratio is None else f"{ratio:.2f}",
            loads,
        )
        console.print(f"  {env} x {num_envs}, {label}: {rate:,.1f} env steps/s ({loads})")

    for num_envs in args.envs:
        if not args.no_env_rows:
            steps = args.steps // (4 * num_envs) * (4 * num_envs)
            names = ["vector env alone (ale-py xla)", "jaxrl env", "fused runner, random agent"]
            built = [raw_vector_env(num_envs, steps), jaxrl_env(num_envs, steps)]
            built.append(fused("random", num_envs, steps))
            times = best_times([run for _, run in built], args.repeats)
            rows = [
                (n, c, steps * FRAMESKIP / t)
                for n, (c, _), t in zip(names, built, times, strict=True)
            ]
            raw_fps = rows[0][2]
            for program, c, fps in rows:
                table.add_row(
                    str(num_envs), program, f"{c:.1f}", f"{fps:,.0f}", f"{fps / raw_fps:.1%}"
                )
        learn = args.learn_steps // (4 * num_envs) * (4 * num_envs)
        for name in args.agents:
            row = learning_row(
                f"fused runner, {name}", name, "Pong", num_envs, learn, args.learn_repeats
            )
            add_learning("Pong", num_envs, row)
    if args.minatar:
        steps = args.minatar_steps
        dqn = {k: v for k, v in load_preset("minatar-dqn")["agent"].items() if k != "name"}
        dqn["learning_starts"] = steps
        row = learning_row(
            "fused runner, dqn (minatar-dqn)",
            "dqn",
            "MinAtar-Breakout",
            4,
            steps // 4 * 4,
            args.learn_repeats,
            dqn,
            rollout_len=1,
        )
        add_learning("MinAtar-Breakout", 4, row)
        ppo = dict(hidden_sizes=(128,), update_epochs=4, num_minibatches=4, total_steps=10**7)
        ppo_steps = max(steps // 1024, 1) * 1024
        row = learning_row(
            "fused runner, ppo (8 x 128, 4 x 4 minibatches)",
            "ppo",
            "MinAtar-Breakout",
            8,
            ppo_steps,
            args.learn_repeats,
            ppo,
            rollout_len=128,
            bound=False,
        )
        add_learning("MinAtar-Breakout", 8, row)
    if not args.no_env_rows:
        console.print(table)
    console.print(learning)
    console.print(f"load average {load()} at the end")


if __name__ == "__main__":
    main()
