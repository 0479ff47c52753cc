"""PQN side by side with the reference implementation, purejaxql (Gallici et al. 2024;
github.com/mttga/purejaxql), in one process on one machine, on CartPole-v1 or
MinAtar-Breakout: the same hyperparameters, the same env steps, K seeds each as one
``jax.jit(jax.vmap(train))`` program. Prints compile time, run time, env steps/s over all
seeds and each seed's last greedy evaluation.

* ``--env cartpole``: purejaxql's ``pqn_gymnax.py`` with ``pqn_cartpole.yaml``; jaxrl's
  ``cartpole-pqn`` preset (the same settings), on its own CartPole.
* ``--env minatar-breakout``: purejaxql's ``pqn_minatar.py`` with ``pqn_minatar.yaml``
  (128 envs x 32 steps, 2 epochs of 32 minibatches, RAdam 5e-4 decayed linearly over 10M
  env steps, lambda 0.65, epsilon 1 -> 0.05 over 1M env steps; its schedules keep their
  10M-step horizon when ``--steps`` is shorter); jaxrl's ``pqn`` with the same options,
  one dense layer of 128 after the conv as purejaxql's network, on the same game (gymnax's
  ``Breakout-MinAtar``: ``--env.backend gymnax``, no sticky actions). jaxrl runs twice:
  with LayerNorm in its CNN (``layer_norm``, the default) and without (PQN on images
  before LayerNorm reached the CNN torsos).

Both evaluate as purejaxql does, greedily every twentieth of the updates with 128 envs:
purejaxql steps them for a whole episode limit (500 or 1,000 steps) and averages the
episodes they finish; jaxrl plays 128 episodes and stops when all have ended. The
``cartpole-pqn`` preset itself evaluates 10 episodes every 20,480 env steps.

purejaxql is not a dependency and none of its code is in jaxrl: point ``--purejaxql`` at
its ``purejaxql/`` directory (a checkout of the repository); the script imports its
``make_train`` with stand-ins for the logging modules it imports at the top (hydra,
omegaconf, safetensors, wandb) and needs ``gymnax`` installed.

    nice -n 10 python benchmarks/pqn_vs_purejaxql.py --purejaxql PATH/purejaxql --env cartpole
    python benchmarks/pqn_vs_purejaxql.py --purejaxql PATH/purejaxql --env minatar-breakout \
        --seeds 5
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import types

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl.experiment.config import resolve
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.runners import make_train

# purejaxql/config/alg/pqn_cartpole.yaml (and config.yaml's logging switches).
PUREJAXQL_CARTPOLE = {
    "ALG_NAME": "pqn", "TOTAL_TIMESTEPS": 5e5, "TOTAL_TIMESTEPS_DECAY": 5e5, "NUM_ENVS": 32,
    "NUM_STEPS": 64, "EPS_START": 1.0, "EPS_FINISH": 0.2, "EPS_DECAY": 0.2,
    "NUM_MINIBATCHES": 16, "NUM_EPOCHS": 4, "NORM_INPUT": False, "HIDDEN_SIZE": 256,
    "NUM_LAYERS": 2, "NORM_TYPE": "layer_norm", "LR": 1e-4, "MAX_GRAD_NORM": 10,
    "LR_LINEAR_DECAY": True, "REW_SCALE": 0.1, "GAMMA": 0.99, "LAMBDA": 0.95,
    "ENV_NAME": "CartPole-v1", "ENV_KWARGS": {}, "TEST_DURING_TRAINING": True,
    "TEST_INTERVAL": 0.05, "TEST_NUM_ENVS": 128, "EPS_TEST": 0.0, "WANDB_MODE": "disabled",
}  # fmt: skip

# purejaxql/config/alg/pqn_minatar.yaml, on Breakout (the file's ENV_NAME is Asterix).
PUREJAXQL_MINATAR = {
    "ALG_NAME": "pqn", "TOTAL_TIMESTEPS": 1e7, "TOTAL_TIMESTEPS_DECAY": 1e7, "NUM_ENVS": 128,
    "NUM_STEPS": 32, "EPS_START": 1.0, "EPS_FINISH": 0.05, "EPS_DECAY": 0.1,
    "NUM_MINIBATCHES": 32, "NUM_EPOCHS": 2, "NORM_TYPE": "layer_norm", "LR": 5e-4,
    "MAX_GRAD_NORM": 10, "LR_LINEAR_DECAY": True, "GAMMA": 0.99, "LAMBDA": 0.65,
    "ENV_NAME": "Breakout-MinAtar", "ENV_KWARGS": {}, "TEST_DURING_TRAINING": True,
    "TEST_INTERVAL": 0.05, "TEST_NUM_ENVS": 128, "EPS_TEST": 0.0, "WANDB_MODE": "disabled",
}  # fmt: skip

# The same settings in jaxrl's names (PQNConfig; env steps where purejaxql counts updates;
# layer_norm is set per run by run_jaxrl).
JAXRL_MINATAR = {
    "env.backend": "gymnax", "env.num_envs": 128, "run.rollout_len": 32,
    "agent.hidden_sizes": [128], "agent.optimizer": "radam",
    "agent.lr": 5e-4, "agent.lr_schedule": "linear", "agent.lr_decay_steps": 10_000_000,
    "agent.lr_end_factor": 0.0, "agent.max_grad_norm": 10.0, "agent.gamma": 0.99,
    "agent.q_lambda": 0.65, "agent.reward_scale": 1.0, "agent.update_epochs": 2,
    "agent.num_minibatches": 32, "agent.epsilon_start": 1.0, "agent.epsilon_end": 0.05,
    "agent.epsilon_decay_steps": 1_000_000, "agent.eval_epsilon": 0.0,
}  # fmt: skip

#: --env -> (purejaxql script, its config, jaxrl env, jaxrl overrides, target or None)
SETUPS = {
    "cartpole": ("pqn_gymnax.py", PUREJAXQL_CARTPOLE, "CartPole", {}, 475.0),
    "minatar-breakout": ("pqn_minatar.py", PUREJAXQL_MINATAR, "MinAtar-Breakout",
                         JAXRL_MINATAR, None),
}  # fmt: skip


def load_purejaxql(path: str):
    for name in ("hydra", "omegaconf", "wandb", "safetensors", "safetensors.flax"):
        module = types.ModuleType(name)
        module.OmegaConf = module.load_file = module.save_file = None
        module.main = lambda **kw: lambda f: f
        sys.modules.setdefault(name, module)
    if not hasattr(jax, "tree_map"):  # removed from jax after purejaxql was written
        jax.tree_map = jax.tree.map
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class FiveTupleLogWrapper(module.LogWrapper):
        """gymnax >= 1.0 steps to ``(obs, state, reward, terminated, truncated, info)``;
        purejaxql was written for ``(obs, state, reward, done, info)`` with scalar infos."""

        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = super().step(
                key, state, action, params
            )
            info = {k: v for k, v in info.items() if jax.numpy.ndim(v) == 0}  # per-env scalars
            return obs, state, reward, terminated | truncated, info

    module.LogWrapper = FiveTupleLogWrapper
    return module.make_train


def timed(train, keys):
    start = time.perf_counter()
    compiled = jax.jit(jax.vmap(train)).lower(keys).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(keys))
    return out, compile_time, time.perf_counter() - start


def run_jaxrl(
    setup: str, seeds: int, steps: int, layer_norm: bool = True, evaluate: bool = True
) -> list[str]:
    _, config, env_name, overrides, target = SETUPS[setup]
    # purejaxql's evaluation schedule: 128 greedy episodes every twentieth of the updates.
    update = config["NUM_ENVS"] * config["NUM_STEPS"]
    interval = steps // update // 20 * update
    overrides = dict(overrides) | {
        "agent.layer_norm": layer_norm, "run.log_every": interval,
        "run.eval_every": interval if evaluate else 0, "run.eval_episodes": config["TEST_NUM_ENVS"],
    }  # fmt: skip
    cfg = resolve(agent="pqn", env=env_name, steps=steps, overrides=overrides)
    parts = build_setup(cfg.with_run(stop_return=None), Launch(loggers=[]))
    run, env, eval_env, agent = parts.run_config, parts.env, parts.eval_env, parts.agent
    train = make_train(agent, env, run, eval_env)
    (_, metrics), compile_time, run_time = timed(
        train, jax.random.split(jax.random.PRNGKey(0), seeds)
    )
    done = np.asarray(metrics["step"])[0, -1]
    name = f"jaxrl ({cfg.preset or 'pqn'}, layer_norm {layer_norm})"
    if not evaluate:
        return row(name, done, compile_time, run_time, seeds, [], target)
    evals = np.asarray(metrics["eval_return"])
    last = [e[~np.isnan(e)][-1] for e in evals]
    at = ~np.isnan(evals[0])
    print_curve(name, np.asarray(metrics["step"])[0, at], evals[:, at])
    return row(name, done, compile_time, run_time, seeds, last, target)


def run_purejaxql(
    path: str, setup: str, seeds: int, steps: int, evaluate: bool = True
) -> list[str]:
    script, config, _, _, target = SETUPS[setup]
    config = dict(config, TOTAL_TIMESTEPS=steps, TEST_DURING_TRAINING=evaluate)
    train = load_purejaxql(os.path.join(path, script))(config)
    out, compile_time, run_time = timed(train, jax.random.split(jax.random.PRNGKey(0), seeds))
    metrics = out["metrics"]
    done = int(np.asarray(metrics["env_step"])[0, -1])
    if not evaluate:
        return row(f"purejaxql {script}", done, compile_time, run_time, seeds, [], target)
    returns = np.asarray(metrics["test/returned_episode_returns"])
    last = list(returns[:, -1])
    # A test runs when update_steps % interval == 0; the metric repeats it until the next.
    interval = int(done // (config["NUM_ENVS"] * config["NUM_STEPS"]) * config["TEST_INTERVAL"])
    at = np.asarray(metrics["update_steps"])[0] % interval == 0
    print_curve(f"purejaxql {script}", np.asarray(metrics["env_step"])[0, at], returns[:, at])
    return row(f"purejaxql {script}", done, compile_time, run_time, seeds, last, target)


def print_curve(name: str, steps: np.ndarray, returns: np.ndarray) -> None:
    """One line: the greedy evaluations' mean over the seeds at each env step."""
    points = ", ".join(f"{s:,}: {r:.2f}" for s, r in zip(steps, returns.mean(0), strict=True))
    print(f"curve {name}: {points}", flush=True)


def row(name, done, compile_time, run_time, seeds, last, target) -> list[str]:
    reached = "-" if target is None or not last else f"{sum(r >= target for r in last)}/{seeds}"
    return [
        name,
        f"{done:,}",
        f"{compile_time:.1f}",
        f"{run_time:.1f}",
        f"{seeds * done / run_time:,.0f}",
        reached,
        ", ".join(f"{r:.1f}" for r in last),
        f"{np.mean(last):.2f}" if last else "-",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--purejaxql", required=True, help="path to purejaxql's purejaxql/")
    parser.add_argument("--env", choices=sorted(SETUPS), default="cartpole")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--no-eval", action="store_true",
        help="no evaluation on either side: the training programs' own speed",
    )  # fmt: skip
    parser.add_argument(
        "--steps", type=int, default=None,
        help="env steps per seed, 20 x a whole number of updates (jaxrl's run then ends "
        "on its last evaluation); default 491,520 (CartPole: 20 x 12 x 32 x 64) or 983,040 "
        "(MinAtar: 20 x 12 x 128 x 32)",
    )  # fmt: skip
    args = parser.parse_args()
    steps = args.steps or (491_520 if args.env == "cartpole" else 983_040)
    table = Table(title=f"PQN on {args.env}, {args.seeds} seeds each, one jit(vmap(train))")
    for column in ("implementation", "env steps each", "compile s", "run s",
                   "env steps/s (all seeds)", "last greedy eval >= 475",
                   "last greedy eval", "mean"):  # fmt: skip
        table.add_column(column, justify="right")
    console = Console(width=220)
    evaluate = not args.no_eval
    table.add_row(*run_jaxrl(args.env, args.seeds, steps, evaluate=evaluate))
    console.print(table)
    if args.env != "cartpole":
        table.add_row(*run_jaxrl(args.env, args.seeds, steps, False, evaluate))
        console.print(table)
    table.add_row(*run_purejaxql(args.purejaxql, args.env, args.seeds, steps, evaluate))
    console.print(table)


if __name__ == "__main__":
    main()
