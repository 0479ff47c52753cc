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
``benchmarks/data/alphazero-board-games.yaml``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

OPPONENTS = ("scripted", "random")
OUTCOMES = ("win", "draw", "loss")


def evaluation_rows(run_dir: Path, preset: str) -> list[dict]:
    """One row per evaluation of the run in ``run_dir``: ``preset``, ``step``, ``time_s``
    (training seconds at that point, from ``metrics.jsonl``'s ``time``), the compile
    seconds and each opponent's win/draw/loss rates."""
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text()) or {}
    rows = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if m.get("eval_win_scripted") is None:
            continue
        row = {
            "preset": preset,
            "step": int(m["step"]),
            "time_s": round(float(m["time"])),
            "compile_s": round(float(summary.get("compile_time") or 0)),
        }
        for opp in OPPONENTS:
            for out in OUTCOMES:
                row[f"{out}_{opp}"] = round(float(m[f"eval_{out}_{opp}"]), 3)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--preset", default="connect_four-alphazero")
    args = parser.parse_args()
    rows = evaluation_rows(args.run_dir, args.preset)
    print(yaml.safe_dump({"rows": rows}, sort_keys=False, default_flow_style=None, width=200))


if __name__ == "__main__":
    main()
