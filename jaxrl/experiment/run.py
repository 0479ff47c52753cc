"""The host driver: runs the fused training program in chunks, logging between them.

``run_experiment(cfg, logdir)`` builds the env, evaluation env, agent and runner from a
resolved config (``experiment.config.resolve``), creates a fresh run directory (never
reusing an existing one), writes ``config.yaml``, compiles the chunk program once
(timed separately), then runs chunk after chunk with a rich progress bar, writing one
metrics row per chunk, and stops early when an evaluation reaches ``run.stop_return``.
A final greedy evaluation of ``run.eval_episodes`` episodes closes the run.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from jaxrl import agents, envs
from jaxrl.envs.gymnasium import HostEnv
from jaxrl.experiment.config import dump, env_kwargs
from jaxrl.experiment.logging import MetricsWriter, aggregate
from jaxrl.runners import RunConfig, make_runner
from jaxrl.runners.host import make_host_runner


@dataclasses.dataclass
class Summary:
    run_dir: Path
    steps: int
    compile_time: float
    run_time: float
    sps: float
    final_eval_return: float
    best_eval_return: float  # NaN when no evaluation ran during training
    first_solved_time: float | None  # wall seconds (compile included) to reach stop_return
    solved: bool


def new_run_dir(logdir: str | Path, cfg: dict[str, Any]) -> Path:
    """A directory under ``logdir`` that did not exist before; never overwrites a run."""
    stem = f"{cfg['agent']['name']}_{cfg['env']['name']}_s{cfg['run']['seed']}"
    stem = stem.replace("/", "-").replace(":", "-") + time.strftime("_%Y%m%d-%H%M%S")
    Path(logdir).mkdir(parents=True, exist_ok=True)
    for i in range(1000):
        path = Path(logdir) / (stem if i == 0 else f"{stem}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a new run directory under {logdir}")


def _fmt(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.1f}"


def run_experiment(
    cfg: dict[str, Any], logdir: str | Path = "runs", console: Console | None = None
) -> Summary:
    """Trains as ``cfg`` says, logging into a new run directory under ``logdir``."""
    console = console or Console()
    start = time.perf_counter()
    run_cfg = RunConfig(**cfg["run"])
    kwargs = env_kwargs(cfg)
    env = envs.make(cfg["env"]["name"], num_envs=cfg["env"]["num_envs"], **kwargs)
    eval_env = envs.make(cfg["env"]["name"], num_envs=run_cfg.eval_episodes, **kwargs)
    agent_options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    agent = agents.make(cfg["agent"]["name"], env.spec, **agent_options)
    host = isinstance(env, HostEnv)  # a Python-stepped env: runners/host.py, no jit of chunks
    runner = (make_host_runner if host else make_runner)(agent, env, run_cfg, eval_env)

    run_dir = new_run_dir(logdir, cfg)
    (run_dir / "config.yaml").write_text(dump(cfg))
    writer = MetricsWriter(run_dir)
    console.print(
        f"[bold]jaxrl[/] {cfg['agent']['name']} on {cfg['env']['name']} "
        f"({cfg['env']['num_envs']} envs, preset: {cfg.get('preset')}) -> {run_dir}"
    )

    key = jax.random.PRNGKey(run_cfg.seed)
    key, eval_key = jax.random.split(key)
    compile_start = time.perf_counter()
    state = runner.init(key) if host else jax.jit(runner.init)(key)
    if host:  # its init compiled act and update; run_chunk is a Python loop
        run_chunk = runner.run_chunk
    else:
        run_chunk = jax.jit(runner.run_chunk, donate_argnums=0).lower(state).compile()
    compile_time = time.perf_counter() - compile_start

    total_steps = runner.num_chunks * runner.iterations_per_chunk * runner.steps_per_iteration
    best, first_solved, steps, run_time = math.nan, None, 0, 0.0
    progress = Progress(
        BarColumn(bar_width=12),
        MofNCompleteColumn(),
        TextColumn("{task.fields[sps]} sps  return {task.fields[ret]}  eval {task.fields[eval]}"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
    )
    with progress:
        task = progress.add_task("training", total=total_steps, sps="-", ret="-", eval="-")
        for _ in range(runner.num_chunks):
            chunk_start = time.perf_counter()
            state, metrics = run_chunk(state)
            metrics = jax.device_get(metrics)
            chunk_time = time.perf_counter() - chunk_start
            run_time += chunk_time
            row = aggregate(metrics)
            steps = row["step"]
            row["time"] = time.perf_counter() - start
            row["sps"] = runner.iterations_per_chunk * runner.steps_per_iteration / chunk_time
            writer.write(row)
            if not math.isnan(row["eval_return"]):
                best = row["eval_return"] if math.isnan(best) else max(best, row["eval_return"])
            progress.update(
                task,
                completed=steps,
                sps=f"{row['sps']:,.0f}",
                ret=_fmt(row["episode_return"]),
                eval=_fmt(row["eval_return"]),
            )
            stop = run_cfg.stop_return
            if (
                stop is not None
                and not math.isnan(row["eval_return"])
                and row["eval_return"] >= stop
            ):
                first_solved = row["time"]
                break
    writer.close()

    compile_start = time.perf_counter()
    if host:
        evaluate = runner.evaluate
    else:
        evaluate = jax.jit(runner.evaluate).lower(state.agent_state, eval_key).compile()
    compile_time += time.perf_counter() - compile_start
    final = float(np.mean(jax.device_get(evaluate(state.agent_state, eval_key))))
    summary = Summary(
        run_dir=run_dir,
        steps=steps,
        compile_time=compile_time,
        run_time=run_time,
        sps=steps / run_time if run_time else math.nan,
        final_eval_return=final,
        best_eval_return=best,
        first_solved_time=first_solved,
        solved=first_solved is not None,
    )
    (run_dir / "summary.yaml").write_text(
        yaml.safe_dump(
            {
                k: str(v) if isinstance(v, Path) else v
                for k, v in dataclasses.asdict(summary).items()
            },
            sort_keys=False,
        )
    )
    table = Table(title="summary", show_header=False)
    table.add_row("env steps", f"{steps:,}")
    table.add_row("compile time", f"{compile_time:.1f} s")
    table.add_row("run time", f"{run_time:.1f} s ({summary.sps:,.0f} steps/s)")
    table.add_row("best evaluation", _fmt(best))
    table.add_row(f"final evaluation ({run_cfg.eval_episodes} episodes)", _fmt(final))
    if run_cfg.stop_return is not None:
        solved = f"yes, after {first_solved:.1f} s" if first_solved else "no"
        table.add_row(f"reached {run_cfg.stop_return:g}", solved)
    table.add_row("run directory", str(run_dir))
    console.print(table)
    return summary
