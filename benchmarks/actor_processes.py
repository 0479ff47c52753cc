"""Ape-X with actor processes against actor threads and the fused program, at the same
budget (``--preset``: ``cartpole-apex_dqn`` by default, or ``pendulum-apex_ddpg``;
``--steps`` env steps, no early stop).

    python benchmarks/actor_processes.py --steps 60000 --seeds 0 1 2 --out /tmp/ap.json

Each (mode, seed) is one ``python -m jaxrl.train`` run (``nice -n 19``): ``fused`` (the
preset's 4 actors as env groups of one program), ``threads`` (``--actor-threads 2``:
Sebulba, each thread 8 envs), ``processes`` (``python -m jaxrl.launch --processes 3 --
... --actor-processes 2``: two actor processes of 4 envs, a learner process). Printed and
written per run: env steps/s over the chunks after the first (compiles excluded), the
learner's utilisation (the fraction of that wall time in updates: ``update_s`` of the
actor processes' learner; ``1 - queue_wait_s`` share for the threads, whose learner only
waits or updates; the fused program alternates, so none), the final greedy return (20
episodes) and the load average. The table's IQM and 95% CI over seeds: ``jaxrl.stats``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

TRAIN = [sys.executable, "-m", "jaxrl.train"]
# A persistent compile cache: the seeds after the first reuse the first's programs (the
# same executables), so that the loaded machine's minutes of compiling are paid once.
CACHE = {
    "JAX_COMPILATION_CACHE_DIR": os.path.join(tempfile.gettempdir(), "jaxrl-actor-processes-xla"),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
}
MODES = {
    "fused": (TRAIN, []),
    "threads": (TRAIN, ["--actor-threads", "2"]),
    "processes": (
        [sys.executable, "-m", "jaxrl.launch", "--processes", "3", "--", *TRAIN],
        ["--actor-processes", "2"],
    ),
}


def run(mode: str, seed: int, steps: int, logdir: Path, preset: str = "cartpole-apex_dqn") -> dict:
    head, extra = MODES[mode]
    flags = ["--steps", str(steps), "--seed", str(seed), "--run.stop_return", "null"]
    flags += ["--log", "", "--logdir", str(logdir)]
    load = os.getloadavg()[0]
    env = {**os.environ, **CACHE}
    command = ["nice", "-n", "19", *head, "--preset", preset, *flags, *extra]
    subprocess.run(command, check=True, env=env)
    (run_dir,) = [p for p in logdir.iterdir() if (p / "summary.yaml").is_file()]
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps_per_chunk = rows[1]["step"] - rows[0]["step"]
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    iterations = steps_per_chunk // (config["run"]["rollout_len"] * config["env"]["num_envs"])
    later = rows[1:]  # the first chunk holds the actors' compiles
    wall = sum(steps_per_chunk / r["sps"] for r in later)
    busy = None
    if mode == "processes":
        busy = sum(r["update_s"] * iterations for r in later) / wall
    elif mode == "threads":
        busy = 1.0 - sum(r["queue_wait_s"] * iterations for r in later) / wall
    return {
        "mode": mode,
        "seed": seed,
        "steps": summary["steps"],
        "steps_per_s": steps_per_chunk * len(later) / wall,
        "learner_busy": busy,
        "final_return": summary["final_eval_return"],
        "compile_s": summary["compile_time"],
        "run_s": summary["run_time"],
        "load_start": load,
        "load_end": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="cartpole-apex_dqn")
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one per run")
    args = parser.parse_args()
    for seed in args.seeds:
        for mode in args.modes:
            with tempfile.TemporaryDirectory() as logdir:
                result = run(mode, seed, args.steps, Path(logdir), args.preset)
            print(json.dumps(result), flush=True)
            with args.out.open("a") as f:
                f.write(json.dumps(result) + "\n")
    from jaxrl.stats import interval_estimate

    results = [json.loads(line) for line in args.out.read_text().splitlines()]
    for mode in args.modes:
        mine = [r for r in results if r["mode"] == mode]
        est = interval_estimate(np.array([[r["final_return"]] for r in mine]))
        sps = np.mean([r["steps_per_s"] for r in mine])
        print(f"{mode}: {len(mine)} seeds, {sps:,.0f} env steps/s, final IQM {est}")


if __name__ == "__main__":
    main()
