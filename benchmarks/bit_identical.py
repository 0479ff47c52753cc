"""Fixed-seed fingerprints of every agent on every env family, to show that a refactor
changes no number: ``--save DIR`` writes one ``.npz`` of metrics and final parameters per
case; ``--compare DIR`` reruns them and prints, per case, whether every array is equal bit
for bit (exit 1 if any differs).

    python benchmarks/bit_identical.py --save /tmp/before
    ... refactor ...
    python benchmarks/bit_identical.py --compare /tmp/before

Each case is tiny (a few hundred env steps, learning started early) so that the whole set
runs in a few minutes on a 2-core CPU; it still passes through acting, replay (uniform,
prioritized, compact), every loss and the evaluation loop.

The execution modes are cases too (``MODE_CASES``), run as a user runs them: the command
line in a fresh process (``python -m jaxrl.train`` or ``jaxrl.launch``), fingerprinted by
the rows of ``metrics.jsonl`` (all but the wall-clock fields) and every array of the final
checkpoint, read with Orbax alone. They cover self-play, independent agents, Sebulba's
actor threads in their synchronous mode, envs split over 2 devices, seeds and a sweep as
one vmapped program, and one run over a job of 2 processes. A3C's asynchronous workers
are left out: their order of updates is the threads' and is not repeatable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl import agents, envs
from jaxrl.envs.gymnasium import HostEnv
from jaxrl.envs.marl import team_view
from jaxrl.networks import torsos
from jaxrl.runners import RunConfig, make_train
from jaxrl.runners.host import make_host_runner

OFF = dict(learning_starts=64, batch_size=16, buffer_size=512)
# MuJoCo's case keeps the Brax backend its fingerprints were made with (MJX is the default).
BRAX = dict(max_episode_steps=20, backend="brax")
GYMNAX = dict(backend="gymnax")
# (case name, agent, env, env kwargs, agent overrides, run config)
CASES = [
    ("dqn_cartpole", "dqn", "CartPole", {}, dict(OFF, n_step=3, double=True, dueling=True), 4),
    ("rainbow_cartpole", "rainbow", "CartPole", {}, dict(OFF), 4),
    (
        "rainbow_flags_off_cartpole",
        "rainbow",
        "CartPole",
        {},
        dict(OFF, noisy=False, distributional=False, prioritized=False),
        4,
    ),
    ("ppo_cartpole", "ppo", "CartPole", {}, dict(num_minibatches=2, update_epochs=2), 16),
    ("a2c_cartpole", "a2c", "CartPole", {}, {}, 5),
    ("ppo_pendulum", "ppo", "Pendulum", {}, dict(num_minibatches=2, normalize_obs=True), 16),
    ("sac_pendulum", "sac", "Pendulum", {}, dict(OFF), 1),
    ("td3_pendulum", "td3", "Pendulum", {}, dict(OFF), 1),
    ("ddpg_pendulum", "ddpg", "Pendulum", {}, dict(OFF), 1),
    ("random_cartpole", "random", "CartPole", {}, {}, 1),
    # MinAtar pinned to the gymnax backend (no sticky actions) that /work/baseline was made on.
    ("dqn_minatar", "dqn", "MinAtar-Breakout", GYMNAX, dict(OFF), 1),
    ("rainbow_minatar", "rainbow", "MinAtar-Breakout", GYMNAX, dict(OFF), 1),
    ("ppo_minatar", "ppo", "MinAtar-Breakout", GYMNAX, dict(num_minibatches=2), 8),
    (
        "rainbow_pong",
        "rainbow",
        "Pong",
        dict(max_num_frames_per_episode=200, noop_max=0),
        dict(OFF, batch_size=4, torso="minatar"),
        1,
    ),
    ("sac_halfcheetah", "sac", "HalfCheetah", BRAX, dict(OFF), 1),
    ("dqn_gym_host", "dqn", "gym:CartPole-v1", {}, dict(OFF), 4),
    ("ppo_gym_host", "ppo", "gym:CartPole-v1", {}, dict(num_minibatches=2), 16),
    ("maddpg_mpe", "maddpg", "mpe:simple_spread", dict(shared=False), dict(OFF), 4),
    (
        "maddpg_mpe_continuous",
        "maddpg",
        "mpe:simple_spread",
        dict(shared=False, continuous=True),
        dict(OFF),
        4,
    ),
]


# The execution modes through the command line: (case name, argv, fake CPU devices,
# processes of a jaxrl.launch job). Small agents, a few chunks, checkpoint at the end.
SMALL_DQN = "--agent.hidden_sizes [16] --agent.batch_size 8 --agent.learning_starts 64"
SMALL_DQN += " --agent.buffer_size 512"
SMALL_PPO = "--agent.hidden_sizes [16] --agent.num_minibatches 2 --agent.update_epochs 2"
CHUNKS = "--run.log_every 256 --run.eval_every 512 --run.eval_episodes 4 --log="
MODE_CASES = [
    (
        "mode_self_play",
        f"--agent dqn --env tic_tac_toe --self-play --steps 1024 --num-envs 8 {SMALL_DQN}",
        1,
        1,
    ),
    (
        "mode_independent_agents",
        f"--agents dqn,dqn --env tic_tac_toe --steps 1024 --num-envs 8 {SMALL_DQN}",
        1,
        1,
    ),
    (
        "mode_actor_threads",
        f"--agent ppo --env CartPole --steps 2048 --num-envs 8 {SMALL_PPO} --run.rollout_len 16"
        " --actor-threads 2 --sync-actors",
        1,
        1,
    ),
    (
        "mode_devices",
        f"--agent ppo --env CartPole --steps 2048 --num-envs 8 {SMALL_PPO} --run.rollout_len 16"
        " --devices 2",
        2,
        1,
    ),
    (
        "mode_seeds_sweep",
        f"--agent dqn --env CartPole --steps 1024 --num-envs 4 {SMALL_DQN} --seeds 2"
        " --sweep agent.lr=1e-3,3e-4",
        1,
        1,
    ),
    (
        "mode_processes",
        f"--agent ppo --env CartPole --steps 2048 --num-envs 8 {SMALL_PPO} --run.rollout_len 16",
        2,
        2,
    ),
]
WALL_CLOCK = ("sps", "time", "elapsed", "compile_time", "run_time", "queue_wait_s", "apply_wait_s")


def run_mode_case(argv: str, devices: int, processes: int) -> dict[str, np.ndarray]:
    """Trains ``argv`` (plus ``CHUNKS``) from the command line in a fresh process (a job of
    ``processes`` when > 1) on ``devices`` fake CPU devices per process; the fingerprint
    of its ``metrics.jsonl`` rows and of its last checkpoint's arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        flags = os.environ.get("XLA_FLAGS", "")
        env = {
            **os.environ,
            "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={devices}",
        }
        command = [sys.executable, "-m", "jaxrl.train", *argv.split(), *CHUNKS.split()]
        command += ["--logdir", tmp, "--seed", "3"]
        if processes > 1:
            launch = [sys.executable, "-m", "jaxrl.launch", "--processes", str(processes)]
            command = [*launch, "--timeout", "300", "--", *command, "--devices", "all"]
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1])
        (run,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        out = {}
        for key in sorted({k for row in rows for k in row} - set(WALL_CLOCK)):
            values = [np.nan if row.get(key) is None else row[key] for row in rows]
            if all(isinstance(v, int | float) for v in values):
                out[f"metric/{key}"] = np.asarray(values, np.float64)
        last = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name))
        arrays = _read_arrays(last / "state")
        for i, leaf in enumerate(jax.tree.leaves(arrays)):
            out[f"state/{i}"] = np.asarray(leaf)
        return out


def _read_arrays(path: Path) -> Any:
    """Every array of an Orbax checkpoint item, onto this process's first device (it may
    have been saved split over several)."""
    import orbax.checkpoint as ocp

    checkpointer = ocp.StandardCheckpointer()
    meta = checkpointer.metadata(path.resolve())
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    target = jax.tree.map(
        lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=device),
        getattr(meta, "item_metadata", meta),
    )
    return checkpointer.restore(path.resolve(), target)


def run_case(agent_name, env_name, env_kwargs, overrides, rollout_len):
    num_envs = 2
    env = envs.make(env_name, num_envs=num_envs, **env_kwargs)
    eval_env = envs.make(env_name, num_envs=2, **env_kwargs)
    if env.spec.num_players > 1:  # MADDPG's players' layout, logged as the CLI logs it
        env, eval_env = team_view(env), team_view(eval_env)
    agent = agents.make(agent_name, env.spec, **overrides)
    steps = 64 * rollout_len * num_envs if agent_name in ("ppo", "a2c") else 192
    config = RunConfig(
        steps=steps,
        rollout_len=rollout_len,
        log_every=steps // 2,
        eval_every=steps // 2,
        eval_episodes=2,
    )
    if isinstance(env, HostEnv):  # the Python loop of runners/host.py
        runner = make_host_runner(agent, env, config, eval_env)
        state = runner.init(jax.random.PRNGKey(3))
        rows = []
        for _ in range(runner.num_chunks):
            state, chunk_metrics = runner.run_chunk(state)
            rows.append(chunk_metrics)
        metrics = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    else:
        train = jax.jit(make_train(agent, env, config, eval_env))
        state, metrics = train(jax.random.PRNGKey(3))
    out = {f"metric/{k}": np.asarray(v) for k, v in metrics.items()}
    params = getattr(state.agent_state, "params", None)
    if params is None and hasattr(state.agent_state, "actor"):  # MADDPG: actors and critics
        params = (state.agent_state.actor, state.agent_state.critic)
    for i, leaf in enumerate(jax.tree.leaves(params)):
        out[f"param/{i}"] = np.asarray(leaf)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument(
        "--xla-conv-backward",
        action="store_true",
        help="use XLA's own conv backward pass on CPU too (the code before issue 12's "
        "canonical-layout backward pass, which changes gradients by rounding only)",
    )
    args = parser.parse_args()
    if args.xla_conv_backward:
        torsos.canonical_backward_default = lambda backend=None: False
    failed = 0
    print(f"{'case':<28} {'arrays':>6} {'result':<40} {'s':>6}")
    cases = [(c[0], run_case, c[1:]) for c in CASES]
    cases += [(c[0], run_mode_case, c[1:]) for c in MODE_CASES]
    for name, run, case_args in cases:
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        try:
            out = run(*case_args)
        except Exception as e:  # an env family not installed here
            print(f"{name:<28} {'-':>6} {'error: ' + str(e)[:60]:<40}")
            failed += args.compare is not None
            continue
        dt = time.perf_counter() - t0
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez(args.save / f"{name}.npz", **out)
            print(f"{name:<28} {len(out):>6} {'saved':<40} {dt:6.1f}")
            continue
        before = np.load(args.compare / f"{name}.npz")
        diffs = [k for k in before.files if k not in out or not _equal(before[k], out[k])]
        extra = [k for k in out if k not in before.files]
        result = "bit-identical" if not diffs else f"DIFFER: {', '.join(diffs[:4])}"
        if extra:
            result += f" (+{len(extra)} new arrays)"
        failed += bool(diffs)
        print(f"{name:<28} {len(before.files):>6} {result:<40} {dt:6.1f}")
    return 1 if failed else 0


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


if __name__ == "__main__":
    sys.exit(main())
