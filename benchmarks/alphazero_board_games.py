"""AlphaZero on the board games: the greedy agent's win/draw/loss rates against the
scripted and the random opponent at each evaluation of a training run, with wall-clock.

The run is the preset's own training command, one seed (a search per move per env is
expensive on the 2-core CPU), started in the background:

    nice -n 19 python -m jaxrl.train --agent alphazero --env connect_four --self-play \
        --logdir runs/alphazero
    python benchmarks/alphazero_board_games.py runs/alphazero/alphazero_connect_four_s0_*

With ``--simulations N``, it instead restores the run's newest checkpoint, rebuilds the
agent with ``N`` simulations per search (the network unchanged) and plays ``--games``
games against each opponent (``runners/games/matches.py``, the agent in each seat in half
of them), printing the rates: what more search at evaluation buys a trained network.

Without it, this reads the run directory (``metrics.jsonl``, ``config.yaml``) and prints
one YAML row per evaluation (env steps, seconds since training started, compile time
apart, and the rates over ``run.eval_episodes`` games, the agent in each seat in half of
them) for ``benchmarks/data/alphazero-board-games.yaml``; the summary's compile and run
seconds go in the run's note there. A run of ``--seeds K`` members gives one row per member
per evaluation (its ``seed`` in the row) and, with ``--members``, one row of the members'
final evaluation instead: each rate's IQM over members with its 95% stratified-bootstrap
CI (``jaxrl.stats``), and the members' win rates against the scripted opponent.
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
            **({"seed": int(m["seed"])} if "seed" in m else {}),
            "step": int(m["step"]),
            "time_s": round(float(m["time"])),
        }
        for opp in OPPONENTS:
            for out in OUTCOMES:
                row[f"{out}_{opp}"] = round(float(m[f"eval_{out}_{opp}"]), 3)
        rows.append(row)
    return rows


def members_row(rows: list[dict]) -> dict:
    """The final evaluation of each member (``evaluation_rows`` of a ``--seeds`` run) as one
    row: each rate's IQM over members and its 95% CI, and the members' scripted wins."""
    import numpy as np

    from jaxrl.stats import interval_estimate

    last = max(r["step"] for r in rows)
    final = sorted((r for r in rows if r["step"] == last), key=lambda r: r.get("seed", 0))
    row = {k: final[0][k] for k in ("run", "env", "search", "step")}
    row["members"] = len(final)
    for opp in OPPONENTS:
        for out in OUTCOMES:
            est = interval_estimate(np.array([[r[f"{out}_{opp}"]] for r in final]))
            row[f"{out}_{opp}"] = round(float(est.point), 3)
            row[f"{out}_{opp}_ci"] = [round(float(est.lower), 3), round(float(est.upper), 3)]
    row["members_win_scripted"] = [r["win_scripted"] for r in final]
    return row


def search_harder(run_dir: Path, simulations: int, games: int, seed: int) -> dict:
    """The win/draw/loss rates of the run's newest checkpoint with ``simulations`` per
    search, over ``games`` games against each opponent (see the module docstring)."""
    import jax

    from jaxrl import agents, envs
    from jaxrl.checkpoint import restore
    from jaxrl.runners.games.matches import make_match, opponents, outcome_rates

    _, state, config = restore(run_dir)
    env = envs.make(config.env.name, num_envs=games)
    options = {**config.agent.kwargs(), "eval_simulations": simulations}
    agent = agents.make("alphazero", env.spec, **options)
    rates: dict = {"simulations": simulations, "games": games}
    keys = jax.random.split(jax.random.PRNGKey(seed), 2)
    for (name, opponent), key in zip(opponents(env).items(), keys, strict=False):
        scores = jax.jit(make_match(agent, env, opponent))(state, key)
        rates.update({k: round(float(v), 3) for k, v in outcome_rates(scores, name).items()})
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--run", default="connect-four", help="the data file's run name")
    parser.add_argument("--simulations", type=int, help="play the last checkpoint with N")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--members", action="store_true", help="one row: IQM over members")
    args = parser.parse_args()
    if args.simulations:
        print(search_harder(args.run_dir, args.simulations, args.games, args.seed))
        return
    rows = evaluation_rows(args.run_dir, args.run)
    if args.members:
        rows = [members_row(rows)]
    print(yaml.safe_dump({"rows": rows}, sort_keys=False, default_flow_style=None, width=200))


if __name__ == "__main__":
    main()
