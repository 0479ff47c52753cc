"""SAC through a VAE action prior against SAC alone on Pendulum-v1, with demonstrations
from a trained SAC policy (``agents/auxiliary/latent_prior.py``).

1. The demonstrations: ``--reference FILE.npz``, or made as ``benchmarks/amp_pendulum.py``
   makes its reference data (``make_reference``: SAC trained, its newest transitions
   exported);
2. one vmapped run, ``--seeds K --sweep agent.prior_weight=0,1 --agent.latent_prior true
   --agent.demo_file FILE``: every member pre-trains its VAE in ``init``; members with
   weight 0 act with the latent as the action (plain SAC, bit for bit: see
   tests/agents/auxiliary/test_latent_prior.py), members with weight 1 through the decoder; same
   program, seeds and machine.

Prints, per member and per weight, the first evaluation at or above ``--threshold``, the
final and best evaluation (``amp_pendulum.table``). Run with ``nice -n 10``:

    nice -n 10 python benchmarks/vae_prior_pendulum.py --steps 5000 --seeds 3 \\
        --reference notebooks/data/pendulum_sac_reference.npz
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from amp_pendulum import add_reference_args, newest_run, reference_of, run, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/vae_prior_pendulum")
    add_reference_args(parser)
    parser.add_argument("--steps", type=int, default=5_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--threshold", type=float, default=-200.0)
    parser.add_argument("extra", nargs="*", help="further overrides for the compared run")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    reference = reference_of(args, work)
    logdir = work / "compare"
    wall = run([sys.executable, "-m", "jaxrl.train", "--agent", "sac", "--env", "Pendulum",
                "--steps", str(args.steps), "--seeds", str(args.seeds), "--sweep",
                "agent.prior_weight=0,1", "--agent.latent_prior", "true", "--agent.demo_file",
                reference, "--run.eval_every", str(args.eval_every), "--logdir", str(logdir),
                "--log", "", *args.extra])  # fmt: skip
    rows = [json.loads(line) for line in (newest_run(logdir) / "metrics.jsonl").open()]
    table(rows, args.threshold, wall, key="agent.prior_weight")


if __name__ == "__main__":
    main()
