"""The final returns of a ``python -m jaxrl.train ... --seeds K`` run over its members: each
member's greedy evaluation and training return at a logged step (the last by default) from
``metrics.jsonl``, and the driver's final evaluation from ``summary.yaml`` where the run
ended, each with its IQM and 95% stratified-bootstrap CI (``jaxrl.stats``).

    python benchmarks/run_iqm.py RUN_DIR [--step STEP]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from jaxrl import stats


def summarize(values: list[float]) -> str:
    ci = stats.interval_estimate(np.asarray(values, np.float64))
    return f"{float(ci.point):.1f} [{float(ci.lower):.1f}, {float(ci.upper):.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--step", type=int, default=None, help="a logged step (default: last)")
    args = parser.parse_args()
    rows: dict[int, dict[int, dict]] = defaultdict(dict)
    for line in (args.run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[row["step"]][row.get("seed", 0)] = row
    step = args.step if args.step is not None else max(rows)
    members = [rows[step][s] for s in sorted(rows[step])]
    for key in ("eval_return", "episode_return"):
        values = [float("nan") if m.get(key) is None else float(m[key]) for m in members]
        cells = " ".join(f"{v:.1f}" for v in values)
        known = [v for v in values if np.isfinite(v)]  # nan: no episode ended in the interval
        print(f"step {step:,} {key}: {cells}; IQM {summarize(known) if known else '-'}")
    summary = args.run_dir / "summary.yaml"
    if summary.is_file():
        data = yaml.safe_load(summary.read_text())
        final = [float(v) for v in data.get("final_eval_returns") or []]
        if final:
            episodes = data.get("final_eval_episodes")
            cells = " ".join(f"{v:.1f}" for v in final)
            print(f"final evaluation ({episodes} episodes each): {cells}; IQM {summarize(final)}")
        print(f"compile {data['compile_time']:.1f} s, run {data['run_time']:.1f} s")


if __name__ == "__main__":
    main()
