"""AlphaZero on the board games: the greedy agent's win/draw/loss rates against the
scripted and the random opponent at each evaluation of a training run, with wall-clock.

The run is the preset's own training command, one seed (a search per move per env is
expensive on the 2-core CPU), started in the background:

    nice -n 19 python -m jaxrl.train --agent alphazero --env connect_four --self-play \
        --logdir runs/alphazero
    python benchmarks/alphazero_board_games.py runs/alphazero/alphazero_connect_four_s0_*

With ``--simulations N``, it instead restores the run's checkpoint ``--step`` (default:
the newest), rebuilds the agent with ``N`` simulations per search (the network unchanged)
and plays ``--games`` games against each opponent of ``--against``
(``runners/games/matches.py``, the agent in each seat in half of them), printing the rates
per member (the members of a ``--seeds`` run play at once; with ``--members``, one row of
their IQM): what more search at evaluation buys a trained network. This is how a long
run's costly evaluation is done apart from its training.

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
    rows = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if m.get("eval_win_scripted") is None:
            continue
        row = {
            **run_fields(run_dir, run),
            **({"seed": int(m["seed"])} if "seed" in m else {}),
            "step": int(m["step"]),
            "time_s": round(float(m["time"])),
        }
        for opp in OPPONENTS:
            for out in OUTCOMES:
                row[f"{out}_{opp}"] = round(float(m[f"eval_{out}_{opp}"]), 3)
        rows.append(row)
    return rows


def run_fields(run_dir: Path, run: str) -> dict:
    """The data file's ``run`` name, the env and the agent's ``search`` (``config.yaml``)."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    return {"run": run, "env": config["env"]["name"], "search": config["agent"]["search"]}


def members_row(rows: list[dict]) -> dict:
    """The final evaluation of each member (``evaluation_rows`` of a ``--seeds`` run) as one
    row: each rate's IQM over members and its 95% CI, and the members' scripted wins."""
    import numpy as np

    from jaxrl.stats import interval_estimate

    last = max(r["step"] for r in rows)
    final = sorted((r for r in rows if r["step"] == last), key=lambda r: r.get("seed", 0))
    row = {k: final[0][k] for k in ("run", "env", "search", "step", "simulations") if k in final[0]}
    row["members"] = len(final)
    for opp in (o for o in OPPONENTS if f"win_{o}" in final[0]):
        row |= {f"games_{opp}": final[0][f"games_{opp}"]} if f"games_{opp}" in final[0] else {}
        for out in OUTCOMES:
            est = interval_estimate(np.array([[r[f"{out}_{opp}"]] for r in final]))
            row[f"{out}_{opp}"] = round(float(est.point), 3)
            row[f"{out}_{opp}_ci"] = [round(float(est.lower), 3), round(float(est.upper), 3)]
    row["members_win_scripted"] = [r.get("win_scripted") for r in final]
    return row


def search_harder(
    run_dir: Path,
    simulations: int,
    games: int,
    seed: int,
    step: int | None = None,
    against: tuple[str, ...] = OPPONENTS,
) -> list[dict]:
    """The win/draw/loss rates of the run's checkpoint ``step`` (default: the newest) with
    ``simulations`` per search, over ``games`` games against each opponent of ``against``:
    one row per member (``seed`` in it) for a ``--seeds`` run, whose members play at once
    (``vmap``), else one row (see the module docstring)."""
    import jax
    import numpy as np

    from jaxrl import agents, envs
    from jaxrl.experiment.run import restore_checkpoint
    from jaxrl.runners.games.matches import make_match, opponents, outcome_rates
    from jaxrl.types import member_axes

    setup, restored, _ = restore_checkpoint(run_dir, step)
    state, batched = restored.state.agent_state, setup.launch.batched
    env = envs.make(setup.config.env.name, num_envs=games)
    options = {**setup.config.agent.kwargs(), "eval_simulations": simulations}
    agent = agents.make("alphazero", env.spec, **options)
    found = opponents(env)
    members = setup.launch.members(setup.config.run.seed)
    rows: list[dict] = [
        {"step": restored.step, **({"seed": m["seed"]} if batched else {})} for m in members
    ]
    keys = dict(zip(found, jax.random.split(jax.random.PRNGKey(seed), len(found)), strict=True))
    for name in against:
        key = keys[name]
        match = make_match(agent, env, found[name])
        if batched:
            match = jax.vmap(match, in_axes=(member_axes(state), None))
        scores = np.asarray(jax.jit(match)(state, key)).reshape(len(rows), games)
        for row, member_scores in zip(rows, scores, strict=True):
            rates = outcome_rates(member_scores, name)
            row.update({k.removeprefix("eval_"): round(float(v), 3) for k, v in rates.items()})
            row |= {"simulations": simulations, f"games_{name}": games}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--run", default="connect-four", help="the data file's run name")
    parser.add_argument("--simulations", type=int, help="play a checkpoint with N")
    parser.add_argument("--step", type=int, help="that checkpoint (default: the newest)")
    parser.add_argument("--against", nargs="+", choices=OPPONENTS, default=list(OPPONENTS))
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--members", action="store_true", help="one row: IQM over members")
    args = parser.parse_args()
    if args.simulations:
        rows = search_harder(
            args.run_dir, args.simulations, args.games, args.seed, args.step, tuple(args.against)
        )
        if args.members:
            rows = [members_row([{**r, **run_fields(args.run_dir, args.run)} for r in rows])]
        print(yaml.safe_dump({"rows": rows}, sort_keys=False, default_flow_style=None, width=200))
        return
    rows = evaluation_rows(args.run_dir, args.run)
    if args.members:
        rows = [members_row(rows)]
    print(yaml.safe_dump({"rows": rows}, sort_keys=False, default_flow_style=None, width=200))


if __name__ == "__main__":
    main()
