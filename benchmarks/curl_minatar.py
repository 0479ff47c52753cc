"""CURL-Rainbow against Rainbow on MinAtar-Breakout (issue 18, part 3): the `minatar-rainbow`
preset with and without `--agent.curl true --agent.curl_pad 1` (CURL's crop by 1-pixel edge
padding of the 10x10 grid), K vmapped seeds each, the same seeds.

Prints, per logged step, each variant's training return (mean over the seeds of the
episodes finished in the row) and greedy evaluation (mean over the seeds), then the final
evaluation per seed and its IQM (`jaxrl.stats`), compile and run time. Reads two existing
run directories, or trains both (one after the other) into a temporary directory:

    python benchmarks/curl_minatar.py --plain RUN_DIR --curl RUN_DIR
    python benchmarks/curl_minatar.py [--steps 50000] [--seeds 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from rich.console import Console
from rich.table import Table

CURL = ["--agent.curl", "true", "--agent.curl_pad", "1"]


def train(logdir: Path, steps: int, seeds: int, extra: list[str]) -> Path:
    """Runs ``python -m jaxrl.train`` for Rainbow on MinAtar-Breakout; its run directory."""
    cmd = [sys.executable, "-m", "jaxrl.train", "--agent", "rainbow", "--env",
           "MinAtar-Breakout", "--seeds", str(seeds), "--steps", str(steps),
           "--run.log_every", "5000", "--run.eval_every", "10000", "--logdir", str(logdir),
           *extra]  # fmt: skip
    subprocess.run(cmd, check=True)
    return next(logdir.iterdir())


def curve(run_dir: Path) -> dict[int, tuple[float, float]]:
    """step -> (mean training return, mean greedy evaluation) over the seeds; NaN where a
    row has no evaluation."""
    rows: dict[int, list[dict]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows.setdefault(row["step"], []).append(row)
    out = {}
    for step, members in sorted(rows.items()):
        train_return = np.nanmean([m.get("episode_return", np.nan) for m in members])
        evals = [m["eval_return"] for m in members if m.get("eval_return") is not None]
        out[step] = (float(train_return), float(np.mean(evals)) if evals else float("nan"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", type=Path, help="run directory of Rainbow")
    parser.add_argument("--curl", type=Path, help="run directory of CURL-Rainbow")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    runs = {"rainbow": args.plain, "curl-rainbow": args.curl}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in (("rainbow", []), ("curl-rainbow", CURL)):
            if runs[name] is None:
                runs[name] = train(Path(tmp) / name, args.steps, args.seeds, extra)
        report(runs)


def report(runs: dict[str, Path]) -> None:
    curves = {name: curve(path) for name, path in runs.items()}
    table = Table(title="Rainbow vs CURL-Rainbow, MinAtar-Breakout (mean over seeds)")
    table.add_column("env steps", justify="right")
    for name in runs:
        table.add_column(f"{name} train", justify="right")
        table.add_column(f"{name} eval", justify="right")
    steps = sorted(set.intersection(*(set(c) for c in curves.values())))
    for step in steps:
        cells = [f"{v:.2f}" for name in runs for v in curves[name][step]]
        table.add_row(f"{step:,}", *cells)
    console = Console()
    console.print(table)
    for name, path in runs.items():
        s = yaml.safe_load((path / "summary.yaml").read_text())
        per_seed = ", ".join(f"{r:.1f}" for r in s["final_eval_returns"])
        console.print(
            f"{name}: final evaluation per seed [{per_seed}] IQM {s['final_iqm']:.2f} "
            f"CI {s['final_iqm_ci']}; compile {s['compile_time']:.1f} s, run "
            f"{s['run_time']:.1f} s ({s['sps']:.0f} env steps/s, all seeds)"
        )


if __name__ == "__main__":
    main()
