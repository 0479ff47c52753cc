"""One run's envs over D devices (``runners/distributed/devices.py``) against one device: the same
returns at equal env steps, and the speed of each.

On a CPU the devices are fake (``--xla_force_host_platform_device_count``): they share the
machine's cores, so the figure to read is the return (the same program up to the order of
float sums), not a speed-up; on a GPU host, ``--devices`` counts real ones.

    python benchmarks/devices.py --agent ppo --env MinAtar-Breakout --steps 100000 --devices 4
    python benchmarks/devices.py ... --seeds 5     # seeds 0..4 on each layout, then the IQMs
                                                   # and the paired differences
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", default="ppo")
    parser.add_argument("--env", default="MinAtar-Breakout")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..K-1 on each layout")
    parser.add_argument(
        "--divergence",
        action="store_true",
        help="seed 0 on both layouts in lockstep: where their metrics and parameters part",
    )
    args = parser.parse_args()
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.devices}")
    import jax
    import numpy as np

    from jaxrl import agents, envs
    from jaxrl.experiment.config import resolve
    from jaxrl.runners import make_runner
    from jaxrl.runners.distributed.devices import data_parallel, env_mesh

    cfg = resolve(agent=args.agent, env=args.env, steps=args.steps, num_envs=args.num_envs)
    run = cfg.with_run(eval_every=0, stop_return=None).run
    env = envs.make(cfg.env.name, num_envs=args.num_envs)
    agent = agents.build(cfg.agent, env.spec)
    runner = make_runner(agent, env, run)
    print(
        f"{args.agent} on {cfg.env.name}, {args.num_envs} envs, {run.steps} steps, "
        f"jax {jax.__version__}, {len(jax.devices())} {jax.devices()[0].platform} devices"
    )
    if args.divergence:
        split = data_parallel(runner, env_mesh(args.devices, args.num_envs), args.num_envs)
        divergence(runner, split, runner.num_chunks)
        return
    print(
        f"{'devices':>7} {'seed':>4} {'compile s':>9} {'run s':>7} {'steps/s':>8} "
        f"{'last-10% return':>16}"
    )
    finals: dict[int, list[float]] = {}
    for count in (1, args.devices):
        r = (
            runner
            if count == 1
            else data_parallel(runner, env_mesh(count, args.num_envs), args.num_envs)
        )
        init, chunk = jax.jit(r.init), None
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            state = init(jax.random.PRNGKey(seed))
            chunk = chunk or jax.jit(r.run_chunk).lower(state).compile()
            t1 = time.perf_counter()
            returns, episodes = [], []
            for _ in range(runner.num_chunks):
                state, metrics = chunk(state)
                returns.append(float(np.sum(metrics["episode_return_sum"])))
                episodes.append(float(np.sum(metrics["episodes"])))
            t2 = time.perf_counter()
            tail = max(1, len(returns) // 10)
            final = sum(returns[-tail:]) / max(1.0, sum(episodes[-tail:]))
            finals.setdefault(count, []).append(final)
            steps = runner.num_chunks * runner.layout.steps_per_chunk
            print(
                f"{count:>7} {seed:>4} {t1 - t0:>9.1f} {t2 - t1:>7.1f} "
                f"{steps / (t2 - t1):>8.0f} {final:>16.2f}",
                flush=True,
            )
    if args.seeds > 1:
        paired(finals, args.devices)
    sys.stdout.flush()


def divergence(one, split, chunks: int) -> None:
    """Seed 0 on one device and split over devices, chunk by chunk: the iterations whose
    metrics differ (episodes finished, their returns) and the largest relative difference
    of the parameters, so that a float-order difference that grows (chaos) can be told
    from a program that differs from the start."""
    import jax
    import numpy as np

    states = [jax.jit(r.init)(jax.random.PRNGKey(0)) for r in (one, split)]
    chunk_fns = [jax.jit(r.run_chunk) for r in (one, split)]
    print(f"{'chunk':>5} {'iterations equal':>16} {'max rel param diff':>18} {'returns 1 / D':>16}")
    for c in range(chunks):
        out = [f(s) for f, s in zip(chunk_fns, states, strict=True)]
        states = [o[0] for o in out]
        m = [jax.device_get(o[1]) for o in out]
        same = (m[0]["episodes"] == m[1]["episodes"]) & np.isclose(
            m[0]["episode_return_sum"], m[1]["episode_return_sum"]
        )
        rel = max(
            float(
                np.abs(np.asarray(a) - np.asarray(b)).max() / (np.abs(np.asarray(a)).max() + 1e-12)
            )
            for a, b in zip(*(jax.tree.leaves(s.agent_state.params) for s in states), strict=True)
        )
        returns = [float(x["episode_return_sum"].sum() / max(1, x["episodes"].sum())) for x in m]
        print(
            f"{c + 1:>5} {int(same.sum()):>7} of {len(same):<6} {rel:>18.2e} "
            f"{returns[0]:>7.2f} / {returns[1]:<6.2f}",
            flush=True,
        )


def paired(finals: dict[int, list[float]], devices: int) -> None:
    """Each layout's IQM with its 95% CI, then seed by seed the difference ``devices``
    minus 1 device: its mean with a bootstrap 95% CI, and Wilcoxon's signed-rank p."""
    import numpy as np

    from jaxrl import stats

    for count, values in finals.items():
        ci = stats.interval_estimate(np.asarray(values))
        print(
            f"{count} device(s): IQM of the last-10% returns {float(ci.point):.2f} "
            f"[{float(ci.lower):.2f}, {float(ci.upper):.2f}] over {len(values)} seeds"
        )
    if devices == 1:
        return
    diff = np.asarray(finals[devices]) - np.asarray(finals[1])
    print("per-seed difference (devices - 1): " + " ".join(f"{d:+.2f}" for d in diff))
    mean = stats.interval_estimate(diff, statistic=lambda x: x.mean(axis=(1, 2)))
    w, p = stats.wilcoxon_signed_rank(diff) if len(diff) <= 20 else (np.nan, np.nan)
    print(
        f"mean difference {float(mean.point):+.3f} [{float(mean.lower):+.3f}, "
        f"{float(mean.upper):+.3f}] (paired bootstrap 95%); {int((diff < 0).sum())} of "
        f"{len(diff)} seeds lower on {devices} devices; Wilcoxon signed-rank W+ = {w:g}, "
        f"two-sided p = {p:.3f}"
    )


if __name__ == "__main__":
    main()
