"""``python -m jaxrl.launch``: start the processes of one job on this machine.

Examples::

    python -m jaxrl.launch --processes 2 -- python my_program.py --flag
    python -m jaxrl.launch --processes 2 --timeout 60 -- python -m jaxrl.train ...

Runs ``--processes N`` copies of the command after ``--``, each with the environment
variables ``JAXRL_COORDINATOR`` (``127.0.0.1:PORT``, a free port unless ``--coordinator``
names one), ``JAXRL_NUM_PROCESSES``, ``JAXRL_PROCESS_ID`` and ``JAXRL_INIT_TIMEOUT``,
which ``jaxrl.runners.distributed.topology.Topology.from_env`` reads (and ``jaxrl.train``: see its
``--num-processes``) to join the processes into one JAX runtime (``jax.distributed``).
On several machines, start one process per machine yourself with those variables (or
``jaxrl.train``'s flags) and the coordinator's address. The launcher waits for every
process; when one fails, it stops the others and exits with that process's code.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from jaxrl.runners.distributed.topology import DEFAULT_TIMEOUT, Topology
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environments(topology: Topology) -> list[dict[str, str]]:
    """The environment variables of each of ``topology.num_processes`` processes."""
    return [
        {
            "JAXRL_COORDINATOR": topology.coordinator,
            "JAXRL_NUM_PROCESSES": str(topology.num_processes),
            "JAXRL_PROCESS_ID": str(i),
            "JAXRL_INIT_TIMEOUT": f"{topology.timeout:g}",
        }
        for i in range(topology.num_processes)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = ArgumentParser(
        prog="python -m jaxrl.launch", usage="%(prog)s --processes N -- COMMAND ..."
    )
    parser.add_argument("--processes", type=int, default=2, help="processes to start (2)")
    parser.add_argument("--coordinator", metavar="HOST:PORT", help="default 127.0.0.1:<free>")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds the processes have to join ({DEFAULT_TIMEOUT:g})",
    )
    try:
        split = argv.index("--") if "--" in argv else len(argv)
        args = parser.parse_args(argv[:split])
        command = argv[split + 1 :]
        if not command:
            raise ConfigError("give the command to run after '--'")
        coordinator = args.coordinator or f"127.0.0.1:{free_port()}"
        topology = Topology(coordinator, args.processes, 0, args.timeout)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    procs = [
        subprocess.Popen(command, env={**os.environ, **extra}) for extra in environments(topology)
    ]
    code = 0
    while procs:
        for p in list(procs):
            if p.poll() is None:
                continue
            procs.remove(p)
            if p.returncode and not code:  # a signal's -N as the shell's 128 + N
                code = p.returncode if p.returncode > 0 else 128 - p.returncode
                for other in procs:
                    other.terminate()
        time.sleep(0.05)
    return code


if __name__ == "__main__":
    sys.exit(main())
