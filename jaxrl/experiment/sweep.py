"""Seed and hyperparameter sweeps as one vmapped program, sharded over local devices.

A run of ``--seeds K`` and ``--sweep agent.NAME=v1,v2,...`` (repeatable) has
``P * K`` *members*: every point ``p`` of the grid of swept values (the Cartesian product,
in the order the flags were given) times the seeds ``seed, seed + 1, ..., seed + K - 1``.
Member ``b = p * K + i`` trains with ``PRNGKey(seed + i)`` exactly as a single run of
``--seed seed+i`` does, with the agent state's ``hparams`` set to point ``p``.

Only continuous hyperparameters can be swept in one program: they live in
``agent_state.hparams`` (``docs/concepts/members.md``), so ``jax.vmap`` maps over them.
Anything else (layer sizes, batch size, n-step, buffer size) changes shapes or the program
itself and must be run as separate jobs; asking for it is a one-line ``ConfigError``.

``batch_runner`` vmaps a ``Runner`` over the member axis. What every member shares stays
unbatched (``types.member_axes``: the chunk counter, and each ``types.shared_field`` of
the agent state, such as its env-step counter and its replay buffer's row counters), so
the schedule decisions made on them are real branches in the batched program: the
runner's evaluation ``lax.cond`` and an agent's learning ``lax.cond`` (``learning_starts``)
run one side, where a batched predicate would make ``vmap`` run both sides every
iteration. When there are several local devices, ``shard`` places the member axis across
them (``NamedSharding`` over a 1-D mesh, shared leaves replicated) and XLA partitions the
program.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.runners import Runner, RunnerState
from jaxrl.types import ConfigError, member_axes
from jaxrl.validation import check_names

AXIS = "members"


def parse_sweep(specs: Sequence[str]) -> dict[str, list[float]]:
    """``["agent.lr=1e-3,3e-4", "agent.gamma=0.99"]`` -> ``{"lr": [1e-3, 3e-4], ...}``."""
    sweep: dict[str, list[float]] = {}
    for spec in specs:
        name, eq, values = spec.partition("=")
        section, _, key = name.partition(".")
        if not eq or section != "agent" or not key or not values:
            raise ConfigError(f"--sweep '{spec}' must look like agent.NAME=v1,v2,...")
        try:
            parsed = [float(v) for v in values.split(",")]
        except ValueError:
            raise ConfigError(f"--sweep '{spec}': values must be numbers") from None
        if key in sweep:
            raise ConfigError(f"--sweep names agent.{key} twice")
        sweep[key] = parsed
    return sweep


def hparam_names(hparams: Any) -> list[str]:
    """The sweepable names: fields of a dataclass ``hparams`` or keys of a dict."""
    if dataclasses.is_dataclass(hparams):
        return [f.name for f in dataclasses.fields(hparams)]
    if isinstance(hparams, Mapping):
        return list(hparams)
    return []


def check_sweep(agent_name: str, hparams: Any, sweep: Mapping[str, Sequence[float]]) -> None:
    """ConfigError unless every swept name is a continuous hyperparameter in ``hparams``."""
    check_names(
        sweep,
        hparam_names(hparams),
        lambda name, listing: (
            f"--sweep agent.{name}: '{name}' is not a continuous "
            f"hyperparameter of agent '{agent_name}' (sweepable in one program: {listing}); "
            "a structural option must be run as separate jobs"
        ),
    )


def grid(sweep: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """The points of the sweep: the Cartesian product of the values, first name slowest."""
    names = list(sweep)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*sweep.values())]


def zipped(sweep: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """The points of a zipped sweep: point ``i`` takes the ``i``-th value of every name."""
    names = list(sweep)
    return [dict(zip(names, values, strict=True)) for values in zip(*sweep.values(), strict=True)]


def member_hparams(hparams: Any, points: Sequence[Mapping[str, float]], seeds: int) -> Any:
    """``hparams`` stacked to ``[P * K]``: point ``p`` repeated for each of the ``K`` seeds."""

    def stack(name: str, value: jax.Array) -> jax.Array:
        column = [point.get(name, None) for point in points for _ in range(seeds)]
        return jnp.stack([value if v is None else jnp.asarray(v, value.dtype) for v in column])

    if dataclasses.is_dataclass(hparams) and not isinstance(hparams, type):
        return dataclasses.replace(
            hparams,
            **{
                f.name: stack(f.name, getattr(hparams, f.name)) for f in dataclasses.fields(hparams)
            },
        )
    return {name: stack(name, value) for name, value in hparams.items()}


def batch_runner(runner: Runner) -> Runner:
    """``runner`` vmapped over a leading member axis.

    ``init(keys [M, 2], hparams [M] or None)``, ``run_chunk(state)`` with every state leaf
    batched but the shared ones (``types.member_axes``: ``chunk`` and the agent state's
    ``shared_field`` counters, scalars), metrics ``{name: [M, iterations]}``, and
    ``evaluate(agent_states, keys [M, 2]) -> [M, episodes]``.
    """
    axes = member_axes(jax.eval_shape(runner.init, jax.random.PRNGKey(0)))
    init = jax.vmap(runner.init, in_axes=(0, 0), out_axes=axes)
    init_default = jax.vmap(lambda key: runner.init(key), out_axes=axes)
    run_chunk = jax.vmap(runner.run_chunk, in_axes=(axes,), out_axes=(axes, 0))
    evaluate = jax.vmap(runner.evaluate, in_axes=(axes.agent_state, 0))

    def batched_init(keys: jax.Array, hparams: Any = None) -> RunnerState:
        return init_default(keys) if hparams is None else init(keys, hparams)

    return runner._replace(
        init=batched_init,
        run_chunk=run_chunk,
        evaluate=evaluate,
        # ``save`` and ``restore`` pick fields, whatever the member axis; the shapes of a
        # saved state are those of the batched init's.
        saved_shape=lambda *args: jax.eval_shape(lambda *a: runner.save(batched_init(*a)), *args),
    )


def available_memory() -> int | None:
    """Bytes the run's devices can hold: the accelerators' limits, or on CPU the host's
    available memory (``MemAvailable`` of ``/proc/meminfo``); None where unknown."""
    devices = jax.local_devices()
    limits = [(d.memory_stats() or {}).get("bytes_limit") for d in devices]
    if devices[0].platform != "cpu" and all(limits):
        return int(sum(cast(list[int], limits)))
    return _host_memory()


def check_host_envs(envs: Sequence[Any], members: int, seeds: int) -> int:
    """ConfigError unless the host-side emulators of ``members`` members fit the host's
    available memory; returns their bytes.

    An env whose ``reset`` has ``host_bytes_per_env`` (ale-py's: its emulators live in
    this process, ``members * num_envs`` of them in one vector env) needs that many bytes
    per env and member, counted here before any of them is made."""
    need = members * sum(
        getattr(env.reset, "host_bytes_per_env", 0) * env.spec.num_envs for env in envs
    )
    have = _host_memory()
    if not need or have is None or need <= have:
        return need
    per_seed = need // seeds
    raise ConfigError(
        f"--seeds {seeds}: {members} members x {sum(e.spec.num_envs for e in envs)} "
        f"emulators (training and evaluation envs) need about {need / 2**30:.1f} GiB of host "
        f"memory but {have / 2**30:.1f} GiB is available; at most {have // per_seed} seeds "
        "fit (or lower env.num_envs)"
    )


def _host_memory() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes; None where unknown."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(runner: Runner, members: int, seeds: int, host_bytes: int = 0) -> None:
    """ConfigError unless the batched ``runner``'s state for ``members`` members, twice
    over (the state and one copy: XLA's temporaries, a checkpoint), plus ``host_bytes``
    (emulators: ``check_host_envs``) fits the available memory; the message names the
    most seeds that fit."""
    key = jax.ShapeDtypeStruct((members, 2), jnp.uint32)
    state = jax.eval_shape(runner.init, key)
    need = 2 * sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state)) + host_bytes
    have = available_memory()
    if have is None or need <= have:
        return
    fit = max(0, int(seeds * have / need))
    raise ConfigError(
        f"--seeds {seeds}: {members} members' training state needs about {need / 2**30:.1f} "
        f"GiB but {have / 2**30:.1f} GiB is available; at most {fit} seeds fit (or shrink "
        "agent.buffer_size)"
    )


def mesh_for(members: int) -> Mesh | None:
    """A 1-D mesh over as many local devices as divide ``members`` (None for one device)."""
    devices = jax.local_devices()
    count = max(d for d in range(1, len(devices) + 1) if members % d == 0)
    return None if count == 1 else Mesh(devices[:count], (AXIS,))


def state_shardings(mesh: Mesh, state: Any) -> Any:
    """Shardings of a batched runner state (or of what a checkpoint saves of it): the
    member axis split over ``mesh``, the shared leaves (``types.member_axes``) replicated."""
    split, replicated = (
        NamedSharding(mesh, PartitionSpec(AXIS)),
        NamedSharding(mesh, PartitionSpec()),
    )
    return jax.tree.map(
        lambda axis, x: None if x is None else replicated if axis is None else split,
        member_axes(state),
        state,
        is_leaf=lambda axis: axis is None,
    )


def shard(tree: Any, mesh: Mesh | None) -> Any:
    """``tree``'s leaves placed with their leading (member) axis split over ``mesh``."""
    if mesh is None:
        return tree
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(AXIS)))
