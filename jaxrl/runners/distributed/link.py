"""A key-value link between the processes of one machine's job, over JAX's coordination
service (the service ``jax.distributed.initialize`` starts on process 0; here without
joining the processes' devices into one runtime, so each process keeps its own JAX
backend and ``jax.process_count()`` stays 1).

``open_link(topology)`` holds ``topology.rendezvous`` first (a missing peer is one
``ConfigError`` line, not JAX's abort), then process 0 serves the coordination service on
the coordinator's port and every process connects a client to it. Values are bytes;
pytrees of arrays travel as ``pack``/``unpack`` (msgpack through ``flax.serialization``:
no pickle).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxrl.runners.distributed.topology import Topology, rendezvous

_SHUTDOWN_S = 10  # the processes' wait for each other at the end
_POLL_MS = 200  # a blocking read's slice, between two looks at ``stop``


class Stopped(Exception):
    """The learner asked the actors to stop (``Link.stop``)."""


@dataclasses.dataclass
class Link:
    """One process's end of the link: ``process_id`` in ``[0, num_processes)``, the
    coordination ``client`` and, on process 0, the ``service``."""

    process_id: int
    num_processes: int
    client: Any
    service: Any = None

    def put(self, key: str, value: bytes) -> None:
        """Sets ``key`` to ``value`` (replacing an earlier value)."""
        self.client.key_value_set_bytes(key, value, allow_overwrite=True)

    def get(self, key: str, stoppable: bool = False) -> bytes:
        """The value of ``key``, waiting until it is set; with ``stoppable``, raises
        ``Stopped`` once the learner has called ``stop``."""
        while True:
            try:
                return self.client.blocking_key_value_get_bytes(key, _POLL_MS)
            except jax.errors.JaxRuntimeError as e:
                if "DEADLINE_EXCEEDED" not in str(e):
                    raise
            if stoppable and self.stopped():
                raise Stopped

    def stopped(self) -> bool:
        try:
            self.client.key_value_try_get_bytes("stop")
        except jax.errors.JaxRuntimeError:
            return False
        return True

    def delete(self, key: str) -> None:
        self.client.key_value_delete(key)

    def stop(self) -> None:
        """Process 0: tells the others to stop."""
        self.put("stop", b"1")

    def close(self) -> None:
        """Leaves the link: every process's ``close`` meets at the client's shutdown
        barrier, then process 0 stops the service."""
        self.client.shutdown()
        if self.service is not None:
            self.service.shutdown()


def open_link(topology: Topology) -> Link:
    """Every process of ``topology`` connected to the coordination service that process
    0 serves on ``topology.coordinator``; ``ConfigError`` for a peer that does not come."""
    from jax._src.lib import _jax

    rendezvous(topology)
    seconds = max(1, int(topology.timeout))
    _, port = topology.address
    service = None
    if topology.process_id == 0:
        service = _jax.get_distributed_runtime_service(
            f"[::]:{port}", topology.num_processes, shutdown_timeout=_SHUTDOWN_S
        )
    client = _jax.get_distributed_runtime_client(
        topology.coordinator,
        topology.process_id,
        init_timeout=seconds,
        shutdown_timeout=_SHUTDOWN_S,
    )
    client.connect()
    link = Link(topology.process_id, topology.num_processes, client, service)
    _OPEN.append(link)
    return link


def pack(tree: Any) -> bytes:
    """``tree`` (a pytree of arrays: dicts, NamedTuples, flax dataclasses) as bytes."""
    return serialization.to_bytes(jax.device_get(tree))


def unpack(template: Any, data: bytes) -> Any:
    """The pytree ``pack`` wrote, in the structure of ``template`` (leaves are NumPy
    arrays; their shapes are the sender's, not the template's)."""
    restored = serialization.msgpack_restore(data)
    return serialization.from_state_dict(template, restored)


def concat_envs(trees: list[Any]) -> Any:
    """Rollouts ``[T, n_i, ...]`` joined along their env axis: ``[T, sum n_i, ...]``."""
    return jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *trees)


_OPEN: list[Link] = []  # this process's link, once ``open_link`` has made it


def current_link() -> Link | None:
    """The link ``open_link`` opened in this process, or None."""
    return _OPEN[-1] if _OPEN else None
