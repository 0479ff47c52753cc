"""One run's environments split over local devices: data parallelism by sharding.

``data_parallel(runner, mesh, num_envs)`` is the fused runner (``runners/scan.py``) with
its state laid out on a 1-D device mesh: every per-env leaf (the env state, the current
observations, the agent's carry; leading axis ``num_envs``) is split along the mesh axis
``"envs"``, and the agent state (parameters, optimizer state, replay buffer, counters) is
replicated. The program is the same program as on one device: ``jax.jit`` partitions it
(GSPMD), so each device steps its share of the envs and acts for them, and the learning
step's reductions over the batch (the gradient's mean, a minibatch's statistics) become
cross-device sums that XLA inserts. So ``D`` devices with ``N`` envs compute what one
device with ``N`` envs computes, up to the order of floating-point sums; with
``jax_threefry_partitionable`` (JAX's default since 0.5) random draws do not depend on
the layout either. This is the Anakin architecture of Hessel et al. 2021 ("Podracer
architectures for scalable reinforcement learning"), written with shardings rather than
``pmap`` (in maintenance mode in JAX 0.10) or an explicit ``shard_map``.

A sharded prioritized replay in the agent state (``buffers/sharded.py``, Ape-X's
``replay_shards``) is split over the same axis, each device holding its shards and their
sum trees (``replay_shardings``).

``num_envs`` must be a multiple of the device count; a mesh that asks for more devices
than the process has is a ``ConfigError``. In a job of several processes
(``jax.distributed``, ``runners/distributed/topology.py``) the mesh spans every device of the job
(``jax.devices()``, each process's own in turn), so each process steps the envs of its
devices and every process runs the same program; ``devices`` must then be ``"all"`` or
the job's device count.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.buffers.sharded import ShardedReplayState
from jaxrl.runners.base import Runner, RunnerState
from jaxrl.types import ConfigError

AXIS = "envs"


def env_mesh(devices: int | str, num_envs: int) -> Mesh:
    """A 1-D mesh over ``devices`` local devices (``"all"``: every one), axis ``"envs"``.

    Raises ``ConfigError`` when there are fewer devices, or ``num_envs`` is not a multiple
    of their count.
    """
    if jax.process_count() > 1:
        return _job_mesh(devices, num_envs)
    local = jax.local_devices()
    count = len(local) if devices == "all" else devices
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"--devices must be a positive integer or 'all', got {devices!r}")
    if count > len(local):
        raise ConfigError(
            f"--devices {count}: this process has {len(local)} "
            f"{local[0].platform.upper()} device(s)"
        )
    if num_envs % count:
        raise ConfigError(
            f"--devices {count} does not divide the {num_envs} envs; use a multiple of {count} envs"
        )
    return Mesh(local[:count], (AXIS,))


def _job_mesh(devices: int | str, num_envs: int) -> Mesh:
    """``env_mesh`` of a job of several processes: every device of the job."""
    every = jax.devices()
    if devices not in ("all", len(every)):
        raise ConfigError(
            f"--devices {devices}: a job of {jax.process_count()} processes splits one run over "
            f"all its {len(every)} devices; give --devices all"
        )
    if num_envs % len(every):
        raise ConfigError(
            f"the job's {len(every)} devices do not divide the {num_envs} envs; use a "
            f"multiple of {len(every)} envs"
        )
    return Mesh(np.asarray(every), (AXIS,))


def env_shardings(mesh: Mesh, state: RunnerState, num_envs: int) -> RunnerState:
    """Shardings of a runner state: per-env leaves of ``env_state``, ``obs`` and ``carry``
    (leading axis ``num_envs``) split over ``mesh``; every other leaf replicated."""
    split = NamedSharding(mesh, PartitionSpec(AXIS))
    replicated = NamedSharding(mesh, PartitionSpec())

    def per_env(leaf: Any) -> NamedSharding:
        shape: tuple[int, ...] = getattr(leaf, "shape", ())
        return split if len(shape) >= 1 and shape[0] == num_envs else replicated

    every = jax.tree.map(lambda _: replicated, state)
    return every.replace(
        agent_state=replay_shardings(mesh, state.agent_state),
        env_state=jax.tree.map(per_env, state.env_state),
        obs=jax.tree.map(per_env, state.obs),
        carry=jax.tree.map(per_env, state.carry),
    )


def replay_shardings(mesh: Mesh, agent_state: Any) -> Any:
    """Shardings of an agent state: a sharded replay's shards (``buffers/sharded.py``,
    leading axis ``[S]``) split over ``mesh``, ``S / D`` per device; the rest replicated.
    ``ConfigError`` when the device count does not divide ``S``."""
    split = NamedSharding(mesh, PartitionSpec(AXIS))
    replicated = NamedSharding(mesh, PartitionSpec())

    def place(node: Any) -> Any:
        if not isinstance(node, ShardedReplayState):
            return replicated
        shards = jax.tree.leaves(node)[0].shape[0]
        if shards % mesh.size:
            raise ConfigError(
                f"--devices {mesh.size} does not divide the replay's {shards} shards "
                f"(agent option replay_shards); use a multiple of {mesh.size} shards"
            )
        return jax.tree.map(lambda _: split, node)

    return jax.tree.map(place, agent_state, is_leaf=lambda x: isinstance(x, ShardedReplayState))


def data_parallel(runner: Runner, mesh: Mesh, num_envs: int) -> Runner:
    """``runner`` whose ``init`` and ``run_chunk`` keep the state in ``env_shardings``
    (sharding constraints inside the traced functions, so the driver's ``jax.jit`` needs
    no arguments of its own). ``evaluate`` is unchanged (its envs are its own)."""

    def constrain(state: RunnerState) -> RunnerState:
        shardings = env_shardings(mesh, state, num_envs)
        return jax.lax.with_sharding_constraint(state, shardings)

    def init(*args: Any) -> RunnerState:
        return constrain(runner.init(*args))

    def run_chunk(state: RunnerState) -> tuple[RunnerState, dict[str, jax.Array]]:
        state, metrics = runner.run_chunk(constrain(state))
        return constrain(state), metrics

    return runner._replace(init=init, run_chunk=run_chunk)
