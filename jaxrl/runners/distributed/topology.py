"""Process groups: joining several processes into one JAX runtime (``jax.distributed``)
with a deadline, so that a peer that never comes up is one line, not a hang or an abort.

JAX's multi-controller runtime (``jax.distributed.initialize(coordinator, num_processes,
process_id, initialization_timeout=...)``) makes the processes of a job one set of global
devices (``jax.devices()``) over which meshes and shardings span; process 0 serves the
coordinator at ``HOST:PORT`` and every process connects to it. When a peer never joins,
JAX 0.10 does not raise: after ``initialization_timeout`` its coordination client
terminates the process (``DEADLINE_EXCEEDED``, SIGABRT and a C++ stack trace). So
``join`` first holds a rendezvous of its own on the same address, over a plain TCP
socket with the same deadline: process 0 listens on ``PORT`` and waits for the other
``num_processes - 1`` to say who they are; each of them connects (retrying while
nothing listens) and waits for process 0's go-ahead. Only when every process has come
does each call ``jax.distributed.initialize``, process 0 having closed its socket so
that JAX's coordinator can take the port. A missing peer, a coordinator that does not
answer, a process id given twice or an address in use is a ``ConfigError`` (the CLI's
one line and exit code 2) raised before anything is written. A process that dies
between the rendezvous and JAX's start-up is still JAX's abort.

``Topology.from_env()`` reads the environment variables ``python -m jaxrl.launch`` sets
(``JAXRL_COORDINATOR``, ``JAXRL_NUM_PROCESSES``, ``JAXRL_PROCESS_ID``,
``JAXRL_INIT_TIMEOUT``), so a program started by the launcher joins with
``join(Topology.from_env())``.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Mapping

import jax
import numpy as np

from jaxrl.types import ConfigError

ENV_VARS = ("JAXRL_COORDINATOR", "JAXRL_NUM_PROCESSES", "JAXRL_PROCESS_ID", "JAXRL_INIT_TIMEOUT")
DEFAULT_TIMEOUT = 300.0  # seconds; JAX's own default initialization_timeout
_HELLO = b"jaxrl-join "


@dataclasses.dataclass(frozen=True)
class Topology:
    """One process's place in a job: the coordinator's ``HOST:PORT`` (served by process
    0), how many processes join, this one's id in ``[0, num_processes)``, and the seconds
    the processes have to come up (``timeout`` > 0)."""

    coordinator: str
    num_processes: int
    process_id: int
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self):
        host, port = self.address
        if not host or not 0 < port < 65536:
            raise ConfigError(f"--coordinator must be HOST:PORT, got '{self.coordinator}'")
        if self.num_processes < 1:
            raise ConfigError(f"--num-processes must be >= 1, got {self.num_processes}")
        if not 0 <= self.process_id < self.num_processes:
            raise ConfigError(
                f"--process-id must be in [0, {self.num_processes}), got {self.process_id}"
            )
        if not 0 < self.timeout < float("inf"):
            raise ConfigError(f"--init-timeout must be > 0 seconds, got {self.timeout}")

    @property
    def address(self) -> tuple[str, int]:
        host, _, port = self.coordinator.rpartition(":")
        try:
            return host.strip("[]"), int(port)
        except ValueError:
            return "", 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Topology | None:
        """The topology ``python -m jaxrl.launch`` gave this process, or None when
        ``JAXRL_NUM_PROCESSES`` is unset."""
        env: Mapping[str, str] = os.environ if environ is None else environ
        if "JAXRL_NUM_PROCESSES" not in env:
            return None
        try:
            return cls(
                env.get("JAXRL_COORDINATOR", ""),
                int(env["JAXRL_NUM_PROCESSES"]),
                int(env.get("JAXRL_PROCESS_ID", "-1")),
                float(env.get("JAXRL_INIT_TIMEOUT", DEFAULT_TIMEOUT)),
            )
        except ValueError as e:
            raise ConfigError(f"bad {'/'.join(ENV_VARS)} environment variables: {e}") from None


def rendezvous(topology: Topology) -> None:
    """Returns once all ``topology.num_processes`` processes have reached this call (the
    first with ``process_id`` 0 serving ``coordinator``), within ``timeout`` seconds;
    ``ConfigError`` otherwise."""
    if topology.num_processes == 1:
        return
    deadline = time.monotonic() + topology.timeout
    if topology.process_id == 0:
        _serve(topology, deadline)
    else:
        _ask(topology, deadline)


def _serve(topology: Topology, deadline: float) -> None:
    host, port = topology.address
    server = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("", port))
    except OSError as e:
        server.close()
        raise ConfigError(
            f"--coordinator {topology.coordinator}: cannot listen on port {port} ({e.strerror})"
        ) from None
    server.listen(topology.num_processes)
    peers: dict[int, socket.socket] = {}
    try:
        while len(peers) < topology.num_processes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(1, topology.num_processes)) - set(peers))
                raise ConfigError(
                    f"{len(peers) + 1} of {topology.num_processes} processes joined "
                    f"{topology.coordinator} within {topology.timeout:g} s (missing process ids "
                    f"{', '.join(map(str, missing))}); start them, or raise --init-timeout"
                )
            server.settimeout(left)
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                hello = conn.recv(64)
            except OSError:
                conn.close()
                continue
            peer = _peer_id(hello)
            if peer is None or peer in peers or not 0 < peer < topology.num_processes:
                conn.close()
                what = "twice" if peer in peers else "out of range"
                if peer is not None:
                    raise ConfigError(
                        f"process id {peer} joined {topology.coordinator} {what}; give each "
                        f"process its own id in [0, {topology.num_processes})"
                    )
                continue
            peers[peer] = conn
        for conn in peers.values():
            conn.sendall(b"go\n")
    finally:
        for conn in peers.values():
            conn.close()
        server.close()


def _peer_id(hello: bytes) -> int | None:
    if not hello.startswith(_HELLO):
        return None
    try:
        return int(hello[len(_HELLO) :].strip())
    except ValueError:
        return None


def _ask(topology: Topology, deadline: float) -> None:
    host, port = topology.address
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ConfigError(
                f"process {topology.process_id}: the coordinator {topology.coordinator} "
                f"(process 0) did not answer within {topology.timeout:g} s; start it, or raise "
                "--init-timeout"
            )
        try:
            conn = socket.create_connection((host, port), timeout=min(left, 1.0))
        except OSError:
            time.sleep(min(0.1, max(left, 0.0)))
            continue
        try:
            conn.settimeout(left)
            conn.sendall(_HELLO + str(topology.process_id).encode() + b"\n")
            reply = conn.recv(16)
        except OSError:
            reply = b""
        finally:
            conn.close()
        if reply.startswith(b"go"):
            return
        if time.monotonic() >= deadline:
            continue  # reported above
        raise ConfigError(
            f"process {topology.process_id}: {topology.coordinator} closed the rendezvous "
            "(another process with this id, or process 0 gave up); check --process-id"
        )


def join(topology: Topology | None) -> None:
    """Joins this process into ``topology``'s job: the rendezvous, then
    ``jax.distributed.initialize`` with the same deadline (gloo collectives on CPUs).
    Nothing for None or a job of one process."""
    if topology is None or topology.num_processes == 1:
        return
    rendezvous(topology)
    # Before any backend starts (initialize must come first); only CPU clients read it.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        topology.coordinator,
        topology.num_processes,
        topology.process_id,
        initialization_timeout=max(1, int(topology.timeout)),
    )


def is_primary() -> bool:
    """Whether this process writes a run's files: process 0 of a job (or the only one)."""
    return jax.process_index() == 0


def broadcast_text(text: str, size: int = 4096) -> str:
    """Process 0's ``text`` (at most ``size`` UTF-8 bytes) on every process of the job;
    ``text`` itself in a job of one process. Every process must call it."""
    if jax.process_count() == 1:
        return text
    from jax.experimental import multihost_utils

    data = text.encode()[:size] if is_primary() else b""
    buffer = np.zeros(size, np.uint8)
    buffer[: len(data)] = np.frombuffer(data, np.uint8)
    got = bytes(np.asarray(multihost_utils.broadcast_one_to_all(buffer)))
    return got.split(b"\0", 1)[0].decode()
