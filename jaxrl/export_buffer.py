"""``python -m jaxrl.export_buffer RUN_DIR OUT.npz``: write a run's replay buffer to a
demonstration file, so that one run's data seeds another.

Examples::

    python -m jaxrl.export_buffer runs/sac_Pendulum-v1_s0_... demos.npz
    python -m jaxrl.export_buffer runs/sac_Pendulum-v1_s0_... demos.npz --last 5000
    python -m jaxrl.train --agent sac --env Pendulum --agent.demo_file demos.npz \\
        --agent.demo_ratio 0.25          # or --agent.amp true: AMP's reference data

Restores the newest checkpoint (or ``--step``) and writes the valid transitions of the
agent's uniform replay buffer, oldest first (``--last N``: the newest ``N`` only; a
trained policy's data), in the ``.npz`` format of ``jaxrl/buffers/demonstrations.py``
(actions in the env's units). For a run of several seeds or sweep points ``--member I``
picks one (default 0). A user's mistake (a missing run, a run whose agent keeps no
uniform replay buffer, a bad ``--last`` or ``--member``) prints one line and exits with
code 2, writing nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxrl.buffers.demonstrations import replay_transitions, save_npz
from jaxrl.types import Box, ConfigError, Transition, take_member
from jaxrl.validation import ArgumentParser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m jaxrl.export_buffer", description=__doc__.splitlines()[0]
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory with checkpoints")
    parser.add_argument("out", metavar="OUT.npz", help="the demonstration file to write")
    parser.add_argument("--step", type=int, help="checkpoint to load (default: the newest)")
    parser.add_argument("--member", type=int, default=0, help="member of a --seeds/--sweep run")
    parser.add_argument("--last", type=int, help="only the newest N transitions")
    args = parser.parse_args(argv)
    if args.last is not None and args.last < 1:
        raise ConfigError(f"--last must be >= 1, got {args.last}")
    if not args.out.endswith(".npz"):
        raise ConfigError(f"OUT must be a .npz file name, got '{args.out}'")
    return args


def buffer_transitions(agent_state: Any, spec: Any) -> Transition[np.ndarray]:
    """The valid transitions ``[M, ...]`` of ``agent_state.buffer`` (a uniform replay
    ring), actions in ``spec``'s units; ConfigError if the state has no such buffer."""
    buffer = getattr(agent_state, "buffer", None)
    data = getattr(buffer, "data", None)
    if not isinstance(data, Transition) or buffer is None or not hasattr(buffer, "position"):
        raise ConfigError(
            "the run's agent keeps no uniform replay buffer of transitions to export "
            "(off-policy agents such as sac, td3, ddpg and dqn do)"
        )
    out = replay_transitions(data, buffer.position, buffer.size)
    space = spec.action_space
    if isinstance(space, Box):  # the actor-critic skeleton stores actions in [-1, 1]
        low, high = (
            np.asarray(b, np.float32).reshape(space.shape) for b in (space.low, space.high)
        )
        out = out._replace(action=(high + low) / 2 + (high - low) / 2 * out.action)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        from jaxrl.experiment.run import restore_checkpoint

        setup, restored, _ = restore_checkpoint(args.run_dir, args.step)
        state = restored.state.agent_state
        members = len(setup.members) if setup.launch.batched else 1
        if not 0 <= args.member < members:
            raise ConfigError(f"--member must be in [0, {members}), got {args.member}")
        if setup.launch.batched:
            state = take_member(state, args.member)
        out = buffer_transitions(state, setup.env.spec)
        if args.last is not None:
            out = Transition(
                **{f: _tail(getattr(out, f), args.last) for f in Transition._fields[:-1]},
                extras={},
            )
        save_npz(args.out, out)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = len(out.reward)
    print(f"wrote {size:,} transitions of '{args.run_dir}' (step {restored.step:,}) to {args.out}")
    return 0


def _tail(tree: Any, n: int) -> Any:
    if isinstance(tree, dict):
        return {k: v[-n:] for k, v in tree.items()}
    return tree[-n:]


if __name__ == "__main__":
    from jaxrl.experiment.guards import exit_with

    exit_with(main())
