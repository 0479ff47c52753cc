"""Recurrent agents against feed-forward ones on partially observed tasks (issue 58,
parts 3 and 4): recurrent PPO against PPO, R2D2 against DQN.

    nice -n 19 python benchmarks/memory_pomdp.py [--presets statelesscartpole-ppo
        memorychain-ppo] [--seeds 8] [--steps N] [--json-dir benchmarks/presets]
        [--data benchmarks/data/memory-pomdp.yaml] [--source JOURNAL] [--arms gru none]

Each preset (a recurrent preset of ``jaxrl/presets``) runs twice through
``benchmarks/presets.py``'s ``run_preset``: as it is (a memory cell, ``--agent.cell``)
and feed-forward (PPO's with ``agent.cell: null``, every other option the same; R2D2's
as the DQN preset of ``FEED_FORWARD``), or once
per cell of ``--arms`` (``none``: feed-forward), each as one
vmapped program of ``--seeds`` members for the preset's budget with no early stop. Per
arm: the IQM of the final greedy returns (at least 20 episodes per member) with its 95%
stratified-bootstrap CI (``jaxrl.stats``), the members at or above the target (the
preset's ``run.stop_return``), the IQM of the area under the evaluation curve, compile
and wall seconds and the load average before and after. The rows replace those of the
same preset and arm in ``--data`` (a ``kind: table`` data file of
``benchmarks/tables.py``), with a run entry holding the machine, date, commit, command,
load and ``--source``; per-member numbers go to ``--json-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from presets import run_preset  # noqa: E402

from jaxrl import stats  # noqa: E402
from jaxrl.experiment.config import load_config_file, presets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "memory-pomdp.yaml"
PRESETS = ("statelesscartpole-ppo", "memorychain-ppo")
# A recurrent preset's feed-forward arm where it is another agent's preset.
FEED_FORWARD = {
    "memorychain-r2d2": "memorychain-dqn",
    "statelesscartpole-r2d2": "statelesscartpole-dqn",
}
AGENT_NAMES = {"ppo": "PPO", "r2d2": "R2D2", "dqn": "DQN"}
COLUMNS = [
    {"key": "env", "title": "env"},
    {"key": "agent", "title": "agent"},
    {"key": "seeds", "title": "seeds", "format": "d"},
    {"key": "env_steps", "title": "env steps", "format": ","},
    {"key": "final", "title": "final IQM [95% CI]"},
    {"key": "at_target", "title": "at target (end)"},
    {"key": "auc_iqm", "title": "IQM of AUC", "format": ".2f"},
    {"key": "compile_s", "title": "compile s", "format": ".0f"},
    {"key": "wall_s", "title": "wall s", "format": ".0f"},
    {"key": "load", "title": "load before → after"},
]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def commit() -> str:
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=ROOT).stdout
    out, dirty = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain", "jaxrl")
    return out.strip() + (" (jaxrl/ modified)" if dirty.strip() else "")


CELL_NAMES = {"gru": "GRU", "lstm": "LSTM", "mingru": "minGRU"}


def run_arm(preset: str, cell: str | None, seeds: int, steps: int | None) -> dict:
    """One arm: the preset with the memory cell ``cell`` (its own or another), or
    feed-forward (``cell`` None)."""
    before = load()
    own = load_config_file(presets()[preset])["agent"].get("cell")
    baseline = FEED_FORWARD.get(preset) if cell is None else None
    if baseline is not None:
        r = run_preset(baseline, seeds, steps, seeds)
    else:
        r = run_preset(preset, seeds, steps, seeds, {"agent.cell": cell})
    target = load_config_file(presets()[preset])["run"].get("stop_return")
    finals = np.asarray(r["finals"], np.float64)
    ci = stats.interval_estimate(finals)
    num = ".3f" if np.all(np.abs(finals) <= 1.0) else ".1f"
    row = {
        "env": r["cfg"]["env"]["name"],
        "agent": label(preset, cell, own, baseline),
        "seeds": seeds,
        "env_steps": int(np.asarray(r["steps"])[-1]),  # whole chunks: the budget rounded up
        "final": f"{float(ci.point):{num}} [{float(ci.lower):{num}}, {float(ci.upper):{num}}]",
        "at_target": "-" if target is None else f"{int(np.sum(finals >= target))}/{seeds}",
        "auc_iqm": float(stats.iqm(np.asarray(r["aucs"]))),
        "compile_s": round(float(r["compile"]), 1),
        "wall_s": round(float(r["wall"]), 1),
        "load": f"{before} → {load()}",
    }
    members = {
        "finals": finals.tolist(),
        "aucs": list(map(float, r["aucs"])),
        "steps": np.asarray(r["steps"]).tolist(),
        "curves": np.asarray(r["curves"]).tolist(),
    }
    return {"row": row, "members": members, "preset": preset, "cell": cell}


def label(preset: str, cell: str | None, own: str | None, baseline: str | None = None) -> str:
    """The row's agent: ``PPO + GRU (`preset`)``, with ``--agent.cell`` where the cell is
    not the preset's, ``PPO, feed-forward``, or ``DQN, feed-forward (`baseline`)``."""
    if baseline is not None:
        return f"{agent_name(baseline)}, feed-forward (`{baseline}`)"
    if cell is None:
        return f"{agent_name(preset)}, feed-forward"
    flag = "" if cell == own else f", `--agent.cell {cell}`"
    return f"{agent_name(preset)} + {CELL_NAMES.get(cell, cell)} (`{preset}`{flag})"


def agent_name(preset: str) -> str:
    """``PPO``, ``R2D2``, ``DQN``: the preset's agent as the table names it."""
    name = load_config_file(presets()[preset])["agent"]["name"]
    return AGENT_NAMES.get(name, name)


def record(path: Path, results: list[dict], run: dict, label: str) -> None:
    """The rows of ``results`` into the data file at ``path`` (replacing the same env and
    agent), with ``run`` under ``label``."""
    table = yaml.safe_load(path.read_text()) if path.exists() else None
    if table is None:
        table = {
            "agents": ["ppo", "r2d2"],
            "title": "Recurrent agents against feed-forward ones on partially observed tasks",
            "kind": "table",
            "group": "Learning",
            "order": 40,
            "description": " ".join(__doc__.split("\n\n")[2].split()),
            "columns": COLUMNS,
            "runs": {},
            "rows": [],
        }
    table["runs"][label] = run
    new = [{**r["row"], "run": label} for r in results]
    keys = {(r["env"], r["agent"]) for r in new}
    table["rows"] = [r for r in table["rows"] if (r["env"], r["agent"]) not in keys] + new
    used = {r["run"] for r in table["rows"]}
    table["runs"] = {k: v for k, v in table["runs"].items() if k in used}
    path.write_text(yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, help="cut every preset's budget to this")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--json-dir", default=str(ROOT / "benchmarks" / "presets"))
    parser.add_argument("--source", default="benchmarks/journal/2026-12-02-recurrent-ppo.md")
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--arms",
        nargs="+",
        metavar="CELL",
        help="cells to run, 'none' for feed-forward (default: the preset's cell and none)",
    )
    args = parser.parse_args(argv)
    unknown = [p for p in args.presets if p not in presets()]
    if unknown or args.seeds < 1:
        what = f"unknown preset '{unknown[0]}'" if unknown else "--seeds must be >= 1"
        print(f"error: {what}", file=sys.stderr)
        return 2
    start, results = time.strftime("%Y-%m-%d, %H:%M", time.gmtime()), []
    load_start, code = load(), commit()  # the code the run imports, at its start
    label = args.label or start.split(",")[0]
    for preset in args.presets:
        cell = load_config_file(presets()[preset])["agent"].get("cell")
        arms = [None if a == "none" else a for a in (args.arms or [cell, "none"])]
        for arm in arms:
            result = run_arm(preset, arm, args.seeds, args.steps)
            results.append(result)
            print(json.dumps(result["row"]), flush=True)
            name = f"{preset}-{arm or 'feedforward'}-memory-pomdp.json"  # one per cell
            Path(args.json_dir).mkdir(parents=True, exist_ok=True)
            run = {
                "machine": machine(),
                "date": f"{start}–{time.strftime('%H:%M', time.gmtime())} UTC",
                "load": f"{load_start} at the start, {load()} at the end (1/5/15-min averages)",
                "command": command(argv),
                "commit": code,
                "source": args.source,
            }
            meta = {**run, "date": start, "load": load_start}
            Path(args.json_dir, name).write_text(json.dumps({**meta, **result["members"]}))
            record(Path(args.data), results, run, label)  # after each arm: nothing lost
    return 0


def machine() -> str:
    import jax

    return (
        f"{platform.machine()} CPU, {os.cpu_count()} cores (shared with other jobs), "
        f"Python {platform.python_version()}, jax {jax.__version__}"
    )


def command(argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["nice -n 19 python benchmarks/memory_pomdp.py", *args])


if __name__ == "__main__":
    sys.exit(main())
