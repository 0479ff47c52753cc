"""AlphaZero on the board games: the greedy agent's win/draw/loss rates against the
scripted and the random opponent at each evaluation of a training run, with wall-clock.

The run is the preset's own training command, one seed (a search per move per env is
expensive on the 2-core CPU), started in the background:

    nice -n 19 python -m jaxrl.train --agent alphazero --env connect_four --self-play \
        --logdir runs/alphazero
    python benchmarks/alphazero_board_games.py runs/alphazero/alphazero_connect_four_s0_*

This reads the run directory (``metrics.jsonl``, ``summary.yaml``) and prints one YAML row
per evaluation (env steps, seconds since training started, compile time apart, and the
rates over ``run.eval_episodes`` games, the agent in each seat in half of them) for
``benchmarks/data/alphazero-board-games.yaml``; the summary's compile and run seconds go
in the run's note there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

OPPONENTS = ("scripted", "random")
OUTCOMES = ("win", "draw", "loss")


def evaluation_rows(run_dir: Path, run: str) -> list[dict]:
    """One row per evaluation of the run in ``run_dir``: the data file's ``run`` name, the
    env and the agent's ``search`` (from ``config.yaml``), ``step``, ``time_s`` (the run's
    wall seconds at that row, ``metrics.jsonl``'s ``time``: compile apart) and each
    opponent's win/draw/loss rates."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    rows = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if m.get("eval_win_scripted") is None:
            continue
        row = {
            "run": run,
            "env": config["env"]["name"],
            "search": config["agent"]["search"],
            "step": int(m["step"]),
            "time_s": round(float(m["time"])),
        }
        for opp in OPPONENTS:
            for out in OUTCOMES:
                row[f"{out}_{opp}"] = round(float(m[f"eval_{out}_{opp}"]), 3)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--run", default="connect-four", help="the data file's run name")
    args = parser.parse_args()
    rows = evaluation_rows(args.run_dir, args.run)
    print(yaml.safe_dump({"rows": rows}, sort_keys=False, default_flow_style=None, width=200))


if __name__ == "__main__":
    main()
