"""Warm starts: a new run that begins from parts of another run's checkpoint.

``python -m jaxrl.train ... --init-from RUN[:STEP] [--init-parts params,optimizer]``
builds the new run as its config says, then replaces the chosen parts of its initial
agent state with the same arrays of checkpoint ``STEP`` (default: the newest readable
one) of ``RUN``. Emote's ``CheckpointLoader(load_weights=True, load_optimizers=False)``
and machin's ``load(model_dir, network_map)`` load the networks' weights alone by
default, and so does ``--init-parts`` (default ``params``). The parts, by the names of
the agent state's fields (``PARTS``):

* ``params``: every network's parameters, target networks included (``params``,
  ``target_params``, ``actor_params``, ``critic_params``, ``target_*``), and SAC's
  ``log_alpha``;
* ``optimizer``: every optimizer state (``opt_state``, ``actor_opt_state``,
  ``critic_opt_state``, SAC's ``alpha_opt_state``; learning rates are hyperparameters,
  read from the new run's ``hparams``, never from here);
* ``normalizer``: the observation and return statistics of PPO and A2C (``obs_stats``,
  ``return_stats``);
* ``buffer``: the replay buffer (sum tree included).

What is not chosen starts fresh, and so do counters (``step``, ``updates``; schedules
such as DQN's epsilon start again), hyperparameters, the env, the PRNG key and the
carry: a fine-tuning run, not a resume (``--resume`` continues a run exactly).

The source must be a run of the same agent, and every chosen array must have the new
state's tree path, shape and dtype; otherwise ``ConfigError`` names the first leaf that
does not fit (found before the new run directory is created). With ``--seeds K`` every
member starts from the source's single member, or member ``i`` from member ``i`` of a
source of ``K`` members; a source of another number of members is refused.

The new run's ``launch.yaml`` records ``init_from`` (``ABSOLUTE_RUN:STEP``) and
``init_parts``; ``init_from.yaml`` in the run directory records them with the source's
agent and the starting policy's greedy evaluation (``start_eval_returns``, one per
member, the final evaluation of ``experiment.driver.final_returns`` with the new run's
evaluation key: for the same ``run.seed``, equal to the source's final evaluation when
``params`` (and, for PPO, ``normalizer``) are taken from its last checkpoint). A resume
of the new run restores its own checkpoint and reads neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from jaxrl.types import ConfigError

PARTS = ("params", "optimizer", "normalizer", "buffer")
INIT_FILE = "init_from.yaml"


def parse_init_from(text: str) -> tuple[Path, int | None]:
    """``"RUN[:STEP]"`` -> ``(RUN, STEP or None)``; a trailing ``:DIGITS`` is the step."""
    run, colon, step = text.rpartition(":")
    if colon and step.isdigit() and run:
        return Path(run), int(step)
    return Path(text), None


def check_parts(parts: Sequence[str]) -> list[str]:
    """``parts`` as a list; ConfigError for an unknown, repeated or empty choice."""
    parts = list(parts)
    if not parts:
        raise ConfigError(f"--init-parts is empty; give some of: {', '.join(PARTS)}")
    for part in parts:
        if part not in PARTS:
            raise ConfigError(f"unknown --init-parts '{part}'; valid: {', '.join(PARTS)}")
    if len(set(parts)) != len(parts):
        raise ConfigError(f"--init-parts names a part twice: {','.join(parts)}")
    return parts


def _names(path: tuple) -> list[str]:
    out = []
    for entry in path:
        name = getattr(entry, "name", getattr(entry, "key", None))
        if isinstance(name, str):
            out.append(name)
    return out


def part_of(path: tuple) -> str | None:
    """The part (``PARTS``) an agent-state leaf at key path ``path`` belongs to: the first
    field or key on its path that names one; None for counters and hyperparameters."""
    for name in _names(path):
        if name.endswith("opt_state"):
            return "optimizer"
        if (name.endswith("params") and name != "hparams") or name == "log_alpha":
            return "params"
        if name in ("obs_stats", "return_stats"):
            return "normalizer"
        if name == "buffer":
            return "buffer"
        if name == "hparams":
            return None
    return None


@dataclasses.dataclass
class Source:
    """The source of a warm start: its run directory, checkpoint step, agent name, number
    of members and agent state."""

    run_dir: Path
    step: int
    agent: str
    members: int
    agent_state: Any

    @property
    def spec(self) -> str:
        return f"{self.run_dir}:{self.step}"


def check_agent(run_dir: Path, agent_name: str) -> None:
    """ConfigError unless ``run_dir`` is a run of ``agent_name`` (read from its config)."""
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise ConfigError(f"--init-from '{run_dir}' is not a run directory (no config.yaml)")
    source_agent = (yaml.safe_load(config.read_text()) or {}).get("agent", {}).get("name")
    if source_agent != agent_name:
        raise ConfigError(
            f"--init-from '{run_dir}' is a run of agent '{source_agent}'; this run trains "
            f"'{agent_name}' (a warm start needs a run of the same agent)"
        )


def _fit(source: Source, leaf: Any, new: Any, path: str, members: int) -> Any:
    """The source ``leaf`` for the new state's leaf ``new`` (members broadcast from a
    single-member source), on ``new``'s sharding; ConfigError when it does not fit."""
    got = np.asarray(leaf)
    if source.members == 1 and members > 1 and tuple(new.shape) == (members, *got.shape):
        got = np.broadcast_to(got, new.shape)  # a leaf shared by the members keeps its shape
    if got.shape != new.shape or got.dtype != new.dtype:
        raise ConfigError(
            f"--init-from '{source.spec}' does not fit: the first mismatching array is "
            f"agent_state{path}, {got.dtype}{list(got.shape)} there and "
            f"{new.dtype}{list(new.shape)} here (a different network, buffer or env?)"
        )
    return jax.device_put(got, getattr(new, "sharding", None))


def merge(source: Source, agent_state: Any, parts: Sequence[str], members: int) -> Any:
    """``agent_state`` with the leaves of ``parts`` taken from ``source.agent_state``.

    ``members``: the new run's members (1 for a single run); a source of one member is
    broadcast to every member, one of ``members`` members taken member for member."""
    if source.members not in (1, members):
        raise ConfigError(
            f"--init-from '{source.spec}' has {source.members} members; this run has "
            f"{members} (give --seeds {source.members}, or a source of one member)"
        )
    src = {jax.tree_util.keystr(p): (p, v) for p, v in _leaves(source.agent_state)}
    wanted = [(p, v) for p, v in _leaves(agent_state) if part_of(p) in parts]
    found = {part_of(p) for p, _ in wanted}
    for part in parts:
        if part not in found:
            named = {part_of(p) for p, _ in _leaves(agent_state)}
            have = sorted((n for n in named if n is not None), key=PARTS.index)
            raise ConfigError(
                f"--init-parts {part}: agent '{source.agent}' has no {part} state; its "
                f"parts: {', '.join(have)}"
            )
    replaced = {}
    for path, new in wanted:
        key = jax.tree_util.keystr(path)
        if key not in src:
            raise ConfigError(
                f"--init-from '{source.spec}' does not fit: it has no array "
                f"agent_state{key} (a different network?)"
            )
        replaced[key] = _fit(source, src[key][1], new, key, members)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(agent_state)
    new_leaves = [replaced.get(jax.tree_util.keystr(p), v) for p, v in leaves]
    return jax.tree_util.tree_unflatten(treedef, new_leaves)


def _leaves(tree: Any) -> list[tuple[tuple, Any]]:
    return jax.tree_util.tree_flatten_with_path(tree)[0]


def write_record(run_dir: Path, source: Source, parts: Sequence[str], returns: Any) -> None:
    """Writes ``init_from.yaml``: the source, the parts taken and the starting evaluation."""
    record = {
        "init_from": str(source.run_dir),
        "step": source.step,
        "agent": source.agent,
        "parts": list(parts),
        "start_eval_returns": [float(r) for r in np.asarray(returns).reshape(-1)],
    }
    (run_dir / INIT_FILE).write_text(yaml.safe_dump(record, sort_keys=False))
