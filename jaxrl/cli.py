"""The ``jaxrl`` command: ``jaxrl COMMAND ARGS``, each command the ``python -m`` module of
the same name with the same arguments."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from jaxrl import __version__

COMMANDS = {
    "train": ("jaxrl.train", "train an agent, or resume a run"),
    "evaluate": ("jaxrl.evaluate", "evaluate a run's checkpoint (episodes, video)"),
    "export": ("jaxrl.export.__main__", "export a run's policy (ONNX, msgpack)"),
    "export-buffer": ("jaxrl.export_buffer", "export a run's replay buffer"),
    "plot": ("jaxrl.plot", "plot runs' learning curves"),
    "check-env": ("jaxrl.check_env", "check an environment against jaxrl's contract"),
    "tune": ("jaxrl.tune.__main__", "search hyperparameters with Optuna (vmapped trials)"),
}


def usage() -> str:
    lines = [f"usage: jaxrl COMMAND [ARGS ...]   (jaxrl {__version__})", "", "commands:"]
    lines += [f"  {name:14s} {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "jaxrl COMMAND --help lists a command's arguments."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``jaxrl COMMAND ARGS``: the command's ``main(ARGS)`` and its exit code; an
    unknown command is one line and exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    if args[0] == "--version":
        print(__version__)
        return 0
    if args[0] not in COMMANDS:
        valid = ", ".join(COMMANDS)
        print(f"error: unknown command '{args[0]}'; valid: {valid}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[args[0]][0])
    return int(module.main(args[1:]))


if __name__ == "__main__":
    sys.exit(main())
