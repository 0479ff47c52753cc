"""PPO on CartPole-v1 with the `cartpole-ppo` preset, against rejax's PPO configured the
same way, in the same run: compile time, run time (best of 3 runs of the compiled
program), env steps/s and the final greedy return (mean over 128 episodes), for 1 seed
and for 8 seeds vmapped in one program.

Both run 976 iterations of 4 envs x 128 steps (499,712 env steps), 4 epochs x 4
minibatches, Adam 2.5e-4, clip 0.2, entropy 0.01, value 0.5, GAE 0.95, gamma 0.99,
separate 64x64 tanh actor and critic (PureJaxRL's `ppo.py` CartPole config). jaxrl
runs its fused runner as the host driver does (one compiled chunk program of 244
iterations, called 4 times), evaluation off during training; the greedy evaluation runs
after the timed part. Differences rejax cannot configure away:
no learning-rate annealing, an element-wise gradient clip (`optax.clip`) where jaxrl
clips the global norm, no value-loss clipping; its greedy evaluation (argmax of the
logits, 128 episodes) also runs inside its timed program, once, at the end.

rejax (with the gymnax it needs: rejax 0.1.3 fails with gymnax 1.x) lives in its own
virtual environment and runs in a subprocess of this script::

    python3 -m venv /tmp/rejax-venv && /tmp/rejax-venv/bin/pip install rejax "gymnax==0.0.9"
    python benchmarks/ppo_cartpole.py [--rejax-python /tmp/rejax-venv/bin/python]

``--rejax-python ''`` (or ``REJAX_PYTHON=''``) skips rejax.

Unless ``XLA_FLAGS`` is set, both libraries run with ``--xla_cpu_multi_thread_eigen=false``:
with XLA:CPU's multi-threaded Eigen pool, jaxlib 0.10.2 on this 2-core machine wedged
(every thread asleep in ``block_until_ready``, no CPU used) in three of five runs of this
benchmark, at 1 seed and at 8; see the table "PPO against rejax on CartPole-v1"
in benchmarks/RESULTS.md (data: benchmarks/data/ppo-vs-rejax.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

ITERATIONS, CHUNKS = 976, 4
NUM_ENVS, ROLLOUT = 4, 128
STEPS = ITERATIONS * NUM_ENVS * ROLLOUT
EVAL_EPISODES = 128
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")  # before jax loads


REPEATS = 3  # run times are the best of this many runs of the compiled program


def timed(fn, *args, repeats: int = REPEATS):
    """(compile s, best run s, output) of ``jax.jit(fn)(*args)``."""
    import jax

    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_time = time.perf_counter() - start
    run_times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        run_times.append(time.perf_counter() - start)
    return compile_time, min(run_times), out


def jaxrl_ppo(seeds: int) -> dict:
    import jax

    from jaxrl import agents, envs
    from jaxrl.experiment.config import resolve
    from jaxrl.runners import RunConfig, make_runner
    from jaxrl.runners.scan import make_evaluate

    cfg = resolve(agent="ppo", env="CartPole", steps=STEPS)
    env = envs.make("CartPole-v1", num_envs=cfg.env.num_envs)
    agent = agents.build(cfg.agent, env.spec)
    run = RunConfig(steps=STEPS, rollout_len=cfg.run.rollout_len,
                    log_every=STEPS // CHUNKS, eval_every=0)  # fmt: skip
    runner = make_runner(agent, env, run)
    evaluate = make_evaluate(agent, envs.make("CartPole-v1", num_envs=EVAL_EPISODES))
    key = jax.random.PRNGKey(0)
    keys = key if seeds == 1 else jax.random.split(key, seeds)
    init, run_chunk = runner.init, runner.run_chunk
    if seeds > 1:
        init, run_chunk, evaluate = jax.vmap(init), jax.vmap(run_chunk), jax.vmap(evaluate)
    state = jax.jit(init)(keys)
    # The host driver's layout: one compiled chunk program, called CHUNKS times.
    start = time.perf_counter()
    compiled = jax.jit(run_chunk).lower(state).compile()
    compile_time = time.perf_counter() - start
    run_times = []
    for _ in range(REPEATS):
        state = jax.jit(init)(keys)
        start = time.perf_counter()
        for _ in range(runner.num_chunks):  # one program in flight at a time, as the driver
            state, _ = jax.block_until_ready(compiled(state))
        run_times.append(time.perf_counter() - start)
    run_time = min(run_times)
    returns = jax.jit(evaluate)(state.agent_state, keys)
    return dict(compile=compile_time, run=run_time, final=float(returns.mean()))


def rejax_ppo(seeds: int) -> dict:
    """Runs inside the rejax virtual environment (``--rejax-worker``)."""
    import jax
    from rejax import PPO
    from rejax.evaluate import evaluate

    algo = PPO.create(
        env="CartPole-v1",
        num_envs=NUM_ENVS,
        num_steps=ROLLOUT,
        num_epochs=4,
        num_minibatches=4,
        learning_rate=2.5e-4,
        max_grad_norm=0.5,
        clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
        gae_lambda=0.95,
        gamma=0.99,
        total_timesteps=STEPS,
        eval_freq=STEPS,
        skip_initial_evaluation=True,
        agent_kwargs={"activation": "tanh", "hidden_layer_sizes": (64, 64)},
    )

    def greedy_eval(algo, ts, rng):
        def act(obs, rng):
            dist = algo.actor.apply(ts.actor_ts.params, obs[None], method="_action_dist")
            return dist.mode()[0]

        max_steps = algo.env_params.max_steps_in_episode
        return evaluate(act, rng, algo.env, algo.env_params, EVAL_EPISODES, max_steps)[1]

    algo = algo.replace(eval_callback=greedy_eval)
    key = jax.random.PRNGKey(0)
    if seeds == 1:
        compile_time, run_time, (_, returns) = timed(algo.train, key)
    else:
        keys = jax.random.split(key, seeds)
        compile_time, run_time, (_, returns) = timed(jax.vmap(algo.train), keys)
    return dict(compile=compile_time, run=run_time, final=float(returns.mean()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8])
    parser.add_argument(
        "--rejax-python",
        default=os.environ.get("REJAX_PYTHON", "/tmp/rejax-venv/bin/python"),
        help="python of a virtual env with rejax installed ('' skips rejax)",
    )
    parser.add_argument("--rejax-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rejax_worker:
        print(json.dumps({s: rejax_ppo(s) for s in args.seeds}))
        return

    from rich.console import Console
    from rich.table import Table

    rows = []
    for seeds in args.seeds:
        rows.append(("jaxrl", seeds, jaxrl_ppo(seeds)))
    if args.rejax_python and args.seeds:
        cmd = [args.rejax_python, __file__, "--rejax-worker", "--seeds", *map(str, args.seeds)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(f"rejax failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        else:
            result = json.loads(done.stdout.strip().splitlines()[-1])
            rows += [("rejax", int(s), r) for s, r in result.items()]

    title = (
        f"PPO CartPole-v1, {STEPS:,} env steps per seed (cartpole-ppo preset), best of {REPEATS}"
    )
    table = Table(title=title)
    for column in ("library", "seeds", "compile s", "run s", "env steps/s (all seeds)",
                   "x 1-seed", "final greedy return"):  # fmt: skip
        table.add_column(column, justify="right")
    single = {lib: STEPS / r["run"] for lib, s, r in rows if s == 1}
    for lib, seeds, r in rows:
        sps = seeds * STEPS / r["run"]
        ratio = f"{sps / single[lib]:.2f}" if lib in single else "-"
        table.add_row(lib, str(seeds), f"{r['compile']:.1f}", f"{r['run']:.2f}", f"{sps:,.0f}",
                      ratio, f"{r['final']:.1f}")  # fmt: skip
    import jax

    table.caption = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"jax {jax.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
