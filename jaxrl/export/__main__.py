"""``python -m jaxrl.export RUN_DIR --format stablehlo|onnx``: write a run's greedy policy.

Examples::

    python -m jaxrl.export runs/dqn_CartPole-v1_s0_... --format onnx
    python -m jaxrl.export runs/ppo_... --format stablehlo --step 20480 --out ppo.stablehlo

Restores the newest checkpoint (or ``--step``) and writes the greedy policy of
:mod:`jaxrl.export` to ``--out`` (default ``RUN_DIR/export/policy_<step>.<format>``); for a
run of several seeds or sweep points, member ``--member`` (default 0). ONNX graphs have a
fixed batch size (``--batch``, default 1); StableHLO's is symbolic. The file is written
whole or not at all, with the mode the user's umask gives (0644 under umask 022). A
user's mistake (unknown format, a run without checkpoints, the random agent, ONNX without
``jaxrl[onnx]``) prints one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

from jaxrl import trust
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    from jaxrl.export import FORMATS

    parser = ArgumentParser(
        prog="python -m jaxrl.export", description="Export a run's greedy policy."
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory with checkpoints")
    parser.add_argument("--format", required=True, choices=FORMATS, help="file format")
    parser.add_argument("--step", type=int, help="checkpoint to export (default: the newest)")
    parser.add_argument("--out", help="output file (default RUN_DIR/export/policy_STEP.FORMAT)")
    parser.add_argument("--member", type=int, default=0, help="member of a --seeds run (0)")
    parser.add_argument(
        "--player", type=int, default=0, help="the agent of a run of independent agents (0)"
    )
    parser.add_argument("--batch", type=int, default=1, help="ONNX batch size (default 1)")
    trust.add_import_argument(parser)
    args = parser.parse_args(argv)
    if args.batch < 1:
        raise ConfigError(f"--batch must be >= 1, got {args.batch}")
    return args


def _write_whole(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temporary file renamed into place, with the
    mode of any file the user creates (0666 less the umask); nothing is left on failure."""
    if path.is_dir():
        raise ConfigError(f"--out '{path}' is a directory")
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise ConfigError(f"--out: cannot write '{path}': {e.strerror or e}") from None


def export(args: argparse.Namespace) -> tuple[Path, int, int]:
    """Writes the file; returns ``(path, step, bytes)``."""
    from jaxrl import export
    from jaxrl.experiment.run import restore_checkpoint
    from jaxrl.types import take_member

    run_dir = Path(args.run_dir)
    setup, restored, skipped = restore_checkpoint(run_dir, args.step)
    for line in skipped:
        print(f"note: {line}; using checkpoint {restored.step}")
    step, config, launch = restored.step, setup.config, setup.launch
    policies = setup.policies(restored.state.agent_state)
    if not 0 <= args.player < len(policies):
        what = "one agent (0)" if len(policies) == 1 else f"agents 0-{len(policies) - 1}"
        raise ConfigError(f"--player {args.player}: the run has {what}")
    label, agent, state = policies[args.player]
    name = config.trained[args.player].name
    if name == "random":
        raise ConfigError("agent 'random' has no trained policy to export")
    if launch.batched:
        members = len(launch.members(config.run.seed))
        if not 0 <= args.member < members:
            raise ConfigError(f"--member must be in [0, {members - 1}], got {args.member}")
        state = take_member(state, args.member)
    elif args.member != 0:
        raise ConfigError(f"--member {args.member}: the run has one member (0)")
    spec = config.env.make(1).spec
    data = export.policy_file(agent, state, spec, args.format, args.batch)
    suffix = f"_{label}" if label else ""
    default = run_dir / "export" / f"policy_{step}{suffix}.{args.format}"
    path = Path(args.out) if args.out else default
    _write_whole(path, data)
    return path, step, len(data)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parse_args(argv)
        with trust.trusted(args.imports):
            from jaxrl.networks.spec import import_modules

            import_modules(args.imports)
            path, step, size = export(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({args.format}, checkpoint step {step}, {size:,} bytes)")
    return 0


if __name__ == "__main__":
    from jaxrl.experiment.guards import exit_with

    exit_with(main())
