"""PQN on CartPole-v1 side by side with the reference implementation, purejaxql
(Gallici et al. 2024; github.com/mttga/purejaxql), in one process on one machine: the same
hyperparameters (purejaxql's ``pqn_cartpole.yaml``; jaxrl's ``cartpole-pqn`` preset), the
same env steps, 5 seeds each as one ``jax.jit(jax.vmap(train))`` program. Prints compile
time, run time, env steps/s over all seeds and each seed's last greedy evaluation
(jaxrl: 10 episodes of its own CartPole; purejaxql: 128 episodes of gymnax's CartPole).

purejaxql is not a dependency and none of its code is in jaxrl: point ``--purejaxql`` at
its ``purejaxql/pqn_gymnax.py`` (a checkout of the repository); the script imports its
``make_train`` with stand-ins for the logging modules it imports at the top (hydra,
omegaconf, safetensors, wandb) and needs ``gymnax`` installed.

    nice -n 10 python benchmarks/pqn_vs_purejaxql.py --purejaxql PATH/pqn_gymnax.py
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import types

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.experiment.config import env_kwargs, resolve
from jaxrl.runners import RunConfig, make_train

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


def load_purejaxql(path: str):
    for name in ("hydra", "omegaconf", "wandb", "safetensors", "safetensors.flax"):
        module = types.ModuleType(name)
        module.OmegaConf = module.load_file = module.save_file = None
        module.main = lambda **kw: lambda f: f
        sys.modules.setdefault(name, module)
    if not hasattr(jax, "tree_map"):  # removed from jax after purejaxql was written
        jax.tree_map = jax.tree.map
    spec = importlib.util.spec_from_file_location("pqn_gymnax", path)
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


def run_jaxrl(seeds: int, steps: int) -> list[str]:
    cfg = resolve(agent="pqn", env="CartPole", steps=steps)
    run = RunConfig(**(cfg["run"] | {"stop_return": None}))
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **env_kwargs(cfg))
    eval_env = envs.make(cfg["env"]["name"], num_envs=run.eval_episodes, **env_kwargs(cfg))
    options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    train = make_train(agents.make("pqn", env.spec, **options), env, run, eval_env)
    (_, metrics), compile_time, run_time = timed(
        train, jax.random.split(jax.random.PRNGKey(0), seeds)
    )
    done = np.asarray(metrics["step"])[0, -1]
    evals = np.asarray(metrics["eval_return"])
    last = [e[~np.isnan(e)][-1] for e in evals]
    return row("jaxrl pqn (cartpole-pqn)", done, compile_time, run_time, seeds, last)


def run_purejaxql(path: str, seeds: int, steps: int) -> list[str]:
    config = dict(PUREJAXQL_CARTPOLE, TOTAL_TIMESTEPS=steps)
    train = load_purejaxql(path)(config)
    out, compile_time, run_time = timed(train, jax.random.split(jax.random.PRNGKey(0), seeds))
    metrics = out["metrics"]
    done = int(np.asarray(metrics["env_step"])[0, -1])
    last = list(np.asarray(metrics["test/returned_episode_returns"])[:, -1])
    return row("purejaxql pqn_gymnax", done, compile_time, run_time, seeds, last)


def row(name, done, compile_time, run_time, seeds, last) -> list[str]:
    return [
        name,
        f"{done:,}",
        f"{compile_time:.1f}",
        f"{run_time:.1f}",
        f"{seeds * done / run_time:,.0f}",
        f"{sum(r >= 475 for r in last)}/{seeds}",
        ", ".join(f"{r:.0f}" for r in last),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--purejaxql", required=True, help="path to purejaxql/pqn_gymnax.py")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=491_520, help="a multiple of 20,480")
    args = parser.parse_args()
    table = Table(title=f"PQN on CartPole-v1, {args.seeds} seeds each, one jit(vmap(train))")
    for column in ("implementation", "env steps each", "compile s", "run s",
                   "env steps/s (all seeds)", "last greedy eval >= 475",
                   "last greedy eval"):  # fmt: skip
        table.add_column(column, justify="right")
    console = Console(width=200)
    table.add_row(*run_jaxrl(args.seeds, args.steps))
    console.print(table)
    table.add_row(*run_purejaxql(args.purejaxql, args.seeds, args.steps))
    console.print(table)


if __name__ == "__main__":
    main()
