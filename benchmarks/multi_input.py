"""The ``multi`` torso against one input (issue 57, part 2): DQN and PPO on
``MultiInputCartPole-v1``, whose image shows the positions and whose ``velocity`` entry
holds the velocities.

    nice -n 19 python benchmarks/multi_input.py [--arms dqn-multi dqn-image ppo-multi
        ppo-image] [--seeds 3] [--data benchmarks/data/multi-input.yaml]
        [--json-dir benchmarks/presets] [--source JOURNAL]

Each arm is one agent with one torso (``ARMS``): ``multi`` (the image, 8x8 here, through
the MinAtar CNN and the velocities through an MLP, joined) or ``auto`` (the image alone,
through the same CNN), every other option the same, trained as one vmapped program of ``--seeds``
members for the arm's budget with no early stop (``benchmarks/presets.py``'s
``run_group``). Per arm: the IQM of the final greedy returns (at least 20 episodes per
member) with its 95% stratified-bootstrap CI (``jaxrl.stats``), the members at 475 or
above, the IQM of the area under the evaluation curve, compile and wall seconds and the
load average before and after. The rows replace those of the same agent and inputs in
``--data`` (a ``kind: table`` data file of ``benchmarks/tables.py``), with a run entry
holding the machine, date, commit, command, load and ``--source``; per-member numbers go
to ``--json-dir``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml  # noqa: E402
from memory_pomdp import commit, load, machine, record  # noqa: E402
from presets import run_group  # noqa: E402

from jaxrl import stats  # noqa: E402
from jaxrl.experiment.config import resolve  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "multi-input.yaml"
ENV = "MultiInputCartPole-v1"
TARGET = 475.0
SIZE = 8  # the frame's side: 8x8 keeps the CNN small on the shared 2-core CPU
# cartpole-dqn's options (jaxrl/presets/cartpole-dqn.yaml) at a smaller budget, with a
# quarter of its gradient steps (32 per rollout of 256 env steps) for the shared CPU.
DQN = {
    "agent.hidden_sizes": [64, 64], "agent.lr": 5e-4, "agent.n_step": 5,
    "agent.buffer_size": 100_000, "agent.batch_size": 64, "agent.learning_starts": 1000,
    "agent.updates_per_rollout": 32, "agent.target_update_period": 256, "agent.tau": 1.0,
    "agent.epsilon_end": 0.04, "agent.epsilon_decay_steps": 8000, "agent.loss": "mse",
    "agent.max_grad_norm": None, "env.num_envs": 8, "run.rollout_len": 32,
}  # fmt: skip
# cartpole-ppo's options (jaxrl/presets/cartpole-ppo.yaml) with 8 envs.
PPO = {
    "agent.hidden_sizes": [64, 64], "agent.lr": 2.5e-4, "agent.update_epochs": 4,
    "agent.num_minibatches": 4, "env.num_envs": 8, "run.rollout_len": 128,
}  # fmt: skip
# arm -> (agent, torso, env steps, options)
ARMS = {
    "dqn-multi": ("dqn", "multi", 20_480, DQN),
    "dqn-image": ("dqn", "auto", 20_480, DQN),
    "ppo-multi": ("ppo", "multi", 20_480, PPO),
    "ppo-image": ("ppo", "auto", 20_480, PPO),
}
INPUTS = {"multi": "image + velocity (`--agent.torso multi`)", "auto": "image alone"}
COLUMNS = [
    {"key": "env", "title": "env"},
    {"key": "agent", "title": "agent"},
    {"key": "inputs", "title": "inputs"},
    {"key": "seeds", "title": "seeds", "format": "d"},
    {"key": "env_steps", "title": "env steps", "format": ","},
    {"key": "final", "title": "final IQM [95% CI]"},
    {"key": "at_target", "title": ">= 475 (end)"},
    {"key": "auc_iqm", "title": "IQM of AUC", "format": ".1f"},
    {"key": "compile_s", "title": "compile s", "format": ".0f"},
    {"key": "wall_s", "title": "wall s", "format": ".0f"},
    {"key": "load", "title": "load before → after"},
]
TABLE = {
    "agents": ["dqn", "ppo"],
    "title": "Observations of several inputs: the multi torso against the image alone",
    "kind": "table",
    "group": "Learning",
    "order": 41,
    "columns": COLUMNS,
}


def run_arm(arm: str, seeds: int, steps: int | None) -> dict:
    """One arm of ``ARMS``: its agent and torso on ``ENV``, ``seeds`` members vmapped."""
    agent, torso, budget, options = ARMS[arm]
    before = load()
    overrides = {
        **options,
        "agent.torso": torso,
        "run.stop_return": None,
        "run.eval_every": 2_048,
        "run.log_every": 2_048,
        "env.size": SIZE,
        "run.eval_episodes": 10,
    }
    config = resolve(agent=agent, env=ENV, steps=steps or budget, overrides=overrides)
    r = run_group(config, seeds, TARGET)
    finals = np.asarray(r["finals"], np.float64)
    ci = stats.interval_estimate(finals)
    row = {
        "env": ENV,
        "agent": f"{agent.upper()} (`--agent.torso {torso}`)",
        "inputs": INPUTS[torso],
        "seeds": seeds,
        "env_steps": int(r["steps"][-1]),
        "final": f"{float(ci.point):.1f} [{float(ci.lower):.1f}, {float(ci.upper):.1f}]",
        "at_target": f"{int(np.sum(finals >= TARGET))}/{seeds}",
        "auc_iqm": float(stats.iqm(np.asarray(r["aucs"]))),
        "compile_s": round(float(r["compile"]), 1),
        "wall_s": round(float(r["wall"]), 1),
        "load": f"{before} → {load()}",
    }
    members = {
        "finals": finals.tolist(),
        "aucs": list(map(float, r["aucs"])),
        "steps": list(r["steps"]),
        "curves": np.asarray(r["curves"]).tolist(),
    }
    return {"row": row, "members": members}


def command(argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["nice -n 19 python benchmarks/multi_input.py", *args])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, help="cut every arm's budget to this")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--json-dir", default=str(ROOT / "benchmarks" / "presets"))
    parser.add_argument("--source", default="benchmarks/journal/2026-12-02-multi-input.md")
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        print("error: --seeds must be >= 1", file=sys.stderr)
        return 2
    start, results = time.strftime("%Y-%m-%d, %H:%M", time.gmtime()), []
    load_start, code = load(), commit()
    label = args.label or f"multi-input {start.split(',')[0]}"
    for arm in args.arms:
        result = run_arm(arm, args.seeds, args.steps)
        results.append(result)
        print(json.dumps(result["row"]), flush=True)
        run = {
            "machine": machine(),
            "date": f"{start}–{time.strftime('%H:%M', time.gmtime())} UTC",
            "load": f"{load_start} at the start, {load()} at the end (1/5/15-min averages)",
            "command": command(argv),
            "commit": code,
            "source": args.source,
        }
        Path(args.json_dir).mkdir(parents=True, exist_ok=True)
        meta = {**run, "date": start, "load": load_start}
        path = Path(args.json_dir, f"{arm}-multi-input.json")
        path.write_text(json.dumps({**meta, **result["members"]}))
        data = Path(args.data)
        if not data.exists():  # the table's header; memory_pomdp.record adds the rows
            description = " ".join(__doc__.split("\n\n")[2].split())
            header = {**TABLE, "description": description, "runs": {}, "rows": []}
            data.write_text(yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100))
        record(data, results, run, label)  # after each arm: nothing lost
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
