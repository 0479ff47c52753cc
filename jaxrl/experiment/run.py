"""The experiment entry points: start a run, resume one, restore a trained agent.

``run_experiment(cfg, logdir, launch=Launch(...))`` builds the env, evaluation env, agent
and runner from a resolved config (``experiment.config.resolve``; ``experiment.setup``),
creates a fresh run directory (never reusing an existing one), writes ``config.yaml`` and
``launch.yaml`` (seeds, sweep, checkpointing) and trains chunk by chunk
(``experiment.driver``), ending with a summary (``experiment.report``).

``resume_experiment(run_dir)`` rebuilds the same program from the saved files, restores
the newest complete checkpoint, cuts the metrics files back to the rows that checkpoint
had written, and goes on. For a JAX-native env the runner state holds everything (agent
state with replay buffer, env state, observations, carry, key, chunk counter), so a
resumed run is bit-identical to one that never stopped; where the env's state cannot be
saved (``Runner.save``), the learner is restored exactly and the envs restart.

``restore(run_dir, step=None) -> (agent, agent_state, config)`` gives back a trained agent
for a notebook or script (``jaxrl.checkpoint.restore``).

Runs of several members (``--seeds``, ``--sweep``) vmap the runner over the member axis
(``experiment.sweep``) and shard it over local devices; metrics rows then carry the
member's ``seed`` and swept values (``agent.lr``) as columns.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rich.console import Console

from jaxrl.experiment import checkpoint
from jaxrl.experiment.driver import drive
from jaxrl.experiment.report import Summary
from jaxrl.experiment.setup import (
    Launch,
    Setup,
    build,
    build_setup,
    new_run_dir,
    read_launch,
    write_run_files,
)
from jaxrl.runners import RunConfig
from jaxrl.types import Agent
from jaxrl.validation import build_config, config_to_dict

__all__ = [
    "Launch",
    "Setup",
    "Summary",
    "build",
    "build_setup",
    "new_run_dir",
    "read_launch",
    "restore",
    "resume_experiment",
    "run_experiment",
]


def run_experiment(
    cfg: dict[str, Any],
    logdir: str | Path = "runs",
    console: Console | None = None,
    launch: Launch | None = None,
) -> Summary:
    """Trains as ``cfg`` and ``launch`` say, logging into a new run directory under ``logdir``."""
    launch = launch or Launch()
    setup = build_setup(cfg, launch)  # every mistake is found before anything is written
    run_dir = new_run_dir(logdir, cfg, launch)
    write_run_files(run_dir, cfg, launch)
    return drive(setup, run_dir, console or Console())


def resume_experiment(
    run_dir: str | Path,
    steps: int | None = None,
    console: Console | None = None,
    checkpoint_every: int | None = None,
    keep: int | None = None,
) -> Summary:
    """Continues ``run_dir`` from its newest complete checkpoint, appending to its metrics.

    ``steps`` raises the run's total env steps (the one config value a resume may change);
    ``checkpoint_every`` and ``keep`` replace those of ``launch.yaml``.
    """
    run_dir = Path(run_dir)
    checkpoint.pick_step(run_dir, None)  # a missing run or checkpoint: one line, no change
    setup = build(run_dir)
    changes = {"checkpoint_every": checkpoint_every, "keep": keep}
    changes = {k: v for k, v in changes.items() if v is not None}
    if changes:
        setup.launch = dataclasses.replace(setup.launch, **changes)
    if steps is not None and steps != setup.cfg["run"]["steps"]:
        run = config_to_dict(build_config(RunConfig, {**setup.cfg["run"], "steps": steps}, "run"))
        setup = build_setup({**setup.cfg, "run": run}, setup.launch)
    restored = checkpoint.load(run_dir, setup.saved_shape(), None, setup.shardings())
    write_run_files(run_dir, setup.cfg, setup.launch)
    return drive(setup, run_dir, console or Console(), restored)


def restore(run_dir: str | Path, step: int | None = None) -> tuple[Agent, Any, dict[str, Any]]:
    """Loads a trained agent: ``agent, agent_state, config = restore("runs/...")``.

    ``agent`` is rebuilt from the run's ``config.yaml``; ``agent_state`` is the agent's
    state at checkpoint ``step`` (default: the newest), ready for
    ``agent.act(agent_state, obs, agent.init_carry(num_envs), key, False)``. For a run of
    several seeds or sweep points every leaf of ``agent_state`` has a leading member axis
    (``launch.yaml`` lists them).
    Raises ``ConfigError`` (one line) for a missing or corrupt run or checkpoint.
    """
    run_dir = Path(run_dir)
    checkpoint.pick_step(run_dir, step)  # a missing checkpoint is reported before the config
    setup = build(run_dir)
    restored = checkpoint.load(run_dir, setup.saved_shape(), step, setup.shardings())
    return setup.agent, restored.state.agent_state, setup.cfg
