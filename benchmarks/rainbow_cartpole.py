"""Rainbow on CartPole-v1 with the `cartpole-rainbow` preset: compile time, run time, env
steps/s and wall time until the greedy evaluation (10 episodes) first reaches 475, per
seed, as `python -m jaxrl.train --agent rainbow --env CartPole --seed S` runs it; then all
seeds in one fused `jax.jit(jax.vmap(train))` program without early stop (40,960 env
steps each by default).

    python benchmarks/rainbow_cartpole.py [--seeds 5]
"""

from __future__ import annotations

import argparse

from dqn_cartpole import fused_vmap, machine_line, per_seed
from rich.console import Console


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--vmap-steps", type=int, default=40_960, help="env steps per seed")
    args = parser.parse_args()
    console = Console(width=140)
    console.print(machine_line())
    console.print(per_seed(args.seeds, agent="rainbow"))
    console.print(fused_vmap(args.seeds, agent="rainbow", steps=args.vmap_steps))


if __name__ == "__main__":
    main()
