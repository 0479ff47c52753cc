"""Tabular Q-learning on the slippery 4x4 FrozenLake-v1 (preset frozenlake-tabular_q):
the K seeds of `python -m jaxrl.train --agent tabular_q --env FrozenLake --seeds K`, one
vmapped program; each seed's final greedy evaluation (100 episodes) against Gymnasium's
reward_threshold 0.70 and against the optimal policy's success probability within the
100-step limit; and the exact success probability of each seed's final greedy policy (from
its checkpointed Q-table), both by finite-horizon dynamic programming on the known model.

    python benchmarks/frozenlake_tabular.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl.envs.gridworld import MAPS, TIME_LIMITS, move_table
from jaxrl.experiment.config import resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.experiment.setup import Launch

THRESHOLD = 0.70  # gymnasium.spec("FrozenLake-v1").reward_threshold


def success(policy: np.ndarray | None = None, map_name: str = "4x4") -> float:
    """The probability of reaching the goal from the start within the time limit, by
    backward induction over the slippery model (each of a-1, a, a+1 with 1/3): of the
    stationary ``policy`` ``[S, 4]`` (action probabilities), or of the optimal
    (non-stationary) policy when None."""
    desc = MAPS[map_name]
    tiles = np.array(list("".join(desc)))
    moves = move_table(desc)
    v = np.zeros(tiles.size)  # success probability with 0 steps left
    for _ in range(TIME_LIMITS[map_name]):
        value_of = np.where(tiles == "G", 1.0, np.where(tiles == "H", 0.0, v))
        q = np.stack(
            [np.mean([value_of[moves[:, (a + k) % 4]] for k in (-1, 0, 1)], 0) for a in range(4)],
            axis=1,
        )
        best = q.max(1) if policy is None else (policy * q).sum(1)
        v = np.where(np.isin(tiles, ["G", "H"]), 0.0, best)
    return float(v[int(np.flatnonzero(tiles == "S")[0])])


def greedy_policy(q: np.ndarray) -> np.ndarray:
    """``[S, A]``: uniform over each state's greedy actions (the agent's tie-breaking)."""
    best = (q == q.max(-1, keepdims=True)).astype(float)
    return best / best.sum(-1, keepdims=True)


def final_tables(run_dir: Path) -> np.ndarray:
    """The members' final Q-tables ``[K, S, A]`` from the run's last checkpoint."""
    import orbax.checkpoint as ocp

    from jaxrl.experiment.checkpoint import CHECKPOINT_DIR

    manager = ocp.CheckpointManager(run_dir.resolve() / CHECKPOINT_DIR)
    step = manager.latest_step()
    meta = manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
    index = meta["paths"].index(".agent_state.q")
    state = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
    manager.close()
    return np.asarray(state["state"][f"{index:05d}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    console = Console()
    console.print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    best = success()
    cfg = resolve(agent="tabular_q", env="FrozenLake")
    with tempfile.TemporaryDirectory() as logdir:
        s = run_experiment(cfg, logdir, Console(file=io.StringIO()), Launch(seeds=args.seeds))
        exact = [success(greedy_policy(q)) for q in final_tables(Path(s.run_dir))]
    finals = np.asarray(s.final_eval_returns, float)
    table = Table(title="tabular_q on FrozenLake-v1 4x4 slippery (preset frozenlake-tabular_q)")
    columns = ("seed", "final greedy success (100 ep.)", "exact success of the greedy policy")
    for column in (*columns, f"exact >= {THRESHOLD}"):
        table.add_column(column, justify="right")
    for seed, (value, p) in enumerate(zip(finals, exact, strict=True)):
        table.add_row(str(seed), f"{value:.2f}", f"{p:.3f}", "yes" if p >= THRESHOLD else "no")
    table.caption = (
        f"{args.seeds} seeds x {s.steps:,} env steps, compile {s.compile_time:.1f} s, run "
        f"{s.run_time:.1f} s; final IQM {s.final_iqm:.3f}; optimal policy {best:.3f} "
        f"(binomial s.d. of 100 episodes {np.sqrt(best * (1 - best) / 100):.3f})"
    )
    console.print(table)


if __name__ == "__main__":
    main()
