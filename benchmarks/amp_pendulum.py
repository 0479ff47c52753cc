"""SAC + AMP against SAC alone on Pendulum-v1, with reference data from a trained SAC policy.

1. ``python -m jaxrl.train --agent sac --env Pendulum`` (preset ``pendulum-sac``) trains
   the reference policy for ``--reference-steps`` env steps (seed ``--reference-seed``);
2. ``python -m jaxrl.export_buffer RUN ref.npz --last N`` writes its newest ``N``
   transitions (the trained, stochastic policy's data) as AMP's reference data;
3. one vmapped run, ``--seeds K --sweep agent.style_reward_weight=0,W``, trains SAC with
   AMP attached: members with weight 0 are plain SAC (bit for bit, see
   tests/agents/auxiliary/test_amp.py), members with weight ``W`` are SAC + AMP, same program.

Prints a table per member (the first evaluation step at or above ``--threshold``, the
final and best evaluation) and per weight (mean first step, IQM of final returns). Run
with ``nice -n 10``; every command it runs is printed.

    nice -n 10 python benchmarks/amp_pendulum.py --steps 4500 --seeds 3 --eval-every 250 \
        --stop-all --reference REF.npz      # weights 0, 4, 16; each episode's first 50 rows
    nice -n 10 python benchmarks/amp_pendulum.py --steps 6000 --seeds 3 --weight 1 3 \
        --eval-every 250 --stop-all --reference REF.npz --reference-first 0   # 2026-11-24

(``--weight W1 W2 ...``: one arm per weight besides 0; ``--stop-all``: ends the run once
every member's evaluation reached -200, ``benchmarks/all_reached.py``;
``--reference-first N``: AMP's reference data are the first ``N`` transitions of each
episode of the reference file (``episode_heads``; default 50: the swing-up and the start
of the balance, where the whole file is 86% balancing; 0 keeps the whole file); the
defaults (weights 4 and 16, the first 50 rows) are the arms that reached -200 sooner than
SAC, benchmarks/journal/2026-11-24-mbpo-amp-goals-met.md; run it from the
repository root.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from jaxrl import stats


def run(cmd: list[str]) -> float:
    print("$", " ".join(cmd), flush=True)
    start = time.time()
    subprocess.run(cmd, check=True)
    return time.time() - start


def newest_run(logdir: Path) -> Path:
    return max((p for p in logdir.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)


def make_reference(work: Path, steps: int, seed: int, last: int) -> str:
    """Steps 1-2 of the module docstring: trains SAC on Pendulum for ``steps`` env steps
    (seed ``seed``) and exports its newest ``last`` transitions; returns the ``.npz`` path
    (also used by ``benchmarks/vae_prior_pendulum.py``)."""
    py = [sys.executable, "-m"]
    ref_logdir = work / "reference"
    run([*py, "jaxrl.train", "--agent", "sac", "--env", "Pendulum", "--steps", str(steps),
         "--seed", str(seed), "--logdir", str(ref_logdir), "--log", ""])  # fmt: skip
    reference = str(work / "reference.npz")
    run([*py, "jaxrl.export_buffer", str(newest_run(ref_logdir)), reference, "--last",
         str(last)])  # fmt: skip
    return reference


def episode_heads(arrays: dict[str, np.ndarray], first: int) -> dict[str, np.ndarray]:
    """The first ``first`` transitions of every episode in ``arrays`` (a reference file's
    fields, ``[M, ...]`` each, in time order; an episode ends at a row whose
    ``terminated`` or ``truncated`` is true, and rows after the last end form an episode
    too), the same keys and dtypes, rows in their original order."""
    ends = np.asarray(arrays["terminated"], bool) | np.asarray(arrays["truncated"], bool)
    episode = np.concatenate([[0], np.cumsum(ends)[:-1]])  # the episode of each row
    starts = np.concatenate([[0], np.flatnonzero(ends) + 1])  # its first row
    keep = np.arange(len(ends)) - starts[episode] < first
    return {k: np.asarray(v)[keep] for k, v in arrays.items()}


def add_reference_args(parser: argparse.ArgumentParser) -> None:
    """The options of ``make_reference`` (and ``--reference FILE`` to skip it)."""
    parser.add_argument("--reference", help="an existing reference .npz (skips making one)")
    parser.add_argument("--reference-steps", type=int, default=12_000)
    parser.add_argument("--reference-seed", type=int, default=100)
    parser.add_argument("--reference-last", type=int, default=5_000)


def reference_of(args: argparse.Namespace, work: Path) -> str:
    """``--reference``, else the file ``make_reference`` writes with the parsed options."""
    return args.reference or make_reference(
        work, args.reference_steps, args.reference_seed, args.reference_last
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/amp_pendulum")
    add_reference_args(parser)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--weight", type=float, nargs="+", default=[4.0, 16.0], help="AMP arms")
    parser.add_argument(
        "--reference-first", type=int, default=50, help="each episode's first N rows (0: all)"
    )
    parser.add_argument("--threshold", type=float, default=-200.0)
    parser.add_argument("--eval-every", type=int, default=None, help="run.eval_every")
    parser.add_argument(
        "--stop-all", action="store_true", help="end once every member reached -200"
    )
    parser.add_argument("extra", nargs="*", help="further overrides for the compared run")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    py = [sys.executable, "-m"]
    reference = reference_of(args, work)
    if args.reference_first:
        with np.load(reference, allow_pickle=False) as f:
            heads = episode_heads({k: f[k] for k in f.files}, args.reference_first)
        reference = str(work / f"reference_first{args.reference_first}.npz")
        np.savez(reference, **heads)
        print(f"reference: {len(heads['reward'])} rows, each episode's first "
              f"{args.reference_first}, in {reference}")  # fmt: skip
    logdir = work / "compare"
    weights = ",".join(f"{w:g}" for w in [0.0, *args.weight])
    more = [*args.extra]
    if args.eval_every:
        more += ["--run.eval_every", str(args.eval_every), "--run.log_every", str(args.eval_every)]
    if args.stop_all:
        more += ["--callback", "benchmarks.all_reached:AT_MINUS_200"]
    wall = run([*py, "jaxrl.train", "--agent", "sac", "--env", "Pendulum", "--steps",
                str(args.steps), "--seeds", str(args.seeds), "--sweep",
                f"agent.style_reward_weight={weights}", "--agent.amp", "true",
                "--agent.demo_file", reference, "--logdir", str(logdir), "--log", "",
                *more])  # fmt: skip
    rows = [json.loads(line) for line in (newest_run(logdir) / "metrics.jsonl").open()]
    table(rows, args.threshold, wall)


def table(
    rows: list[dict], threshold: float, wall: float, key: str = "agent.style_reward_weight"
) -> None:
    """Per member and per value of the swept ``key``: first step >= threshold, finals."""
    members: dict[tuple, list[dict]] = {}
    name = key.split(".")[-1]
    for row in rows:
        members.setdefault((row[key], row["seed"]), []).append(row)
    print(f"\nrun wall time {wall:.0f} s (compile included)\n")
    print(f"| {name} | seed | first eval >= {threshold:g} | final eval | best eval |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    by_weight: dict[float, list[tuple[float, float]]] = {}
    for (weight, seed), rs in sorted(members.items()):
        evals = [(r["step"], r["eval_return"]) for r in rs if r["eval_return"] is not None]
        first = next((s for s, e in evals if e >= threshold), None)
        final, best = evals[-1][1], max(e for _, e in evals)
        by_weight.setdefault(weight, []).append((np.inf if first is None else first, final))
        shown = "never" if first is None else f"{first:,}"
        print(f"| {weight:g} | {seed} | {shown} | {final:.1f} | {best:.1f} |")
    print(f"\n| {name} | mean first step >= {threshold:g} | reached | IQM final |")
    print("| ---: | ---: | ---: | ---: |")
    for weight, pairs in sorted(by_weight.items()):
        firsts = np.array([f for f, _ in pairs])
        reached = np.isfinite(firsts)
        mean_first = f"{firsts[reached].mean():,.0f}" if reached.any() else "-"
        iqm = stats.interval_estimate(np.array([f for _, f in pairs])).point
        print(f"| {weight:g} | {mean_first} | {reached.sum()}/{len(pairs)} | {iqm:.1f} |")


if __name__ == "__main__":
    main()
