"""Seed and hyperparameter sweeps as one vmapped program, sharded over local devices.

A run of ``--seeds K`` and ``--sweep agent.NAME=v1,v2,...`` (repeatable) has
``P * K`` *members*: every point ``p`` of the grid of swept values (the Cartesian product,
in the order the flags were given) times the seeds ``seed, seed + 1, ..., seed + K - 1``.
Member ``b = p * K + i`` trains with ``PRNGKey(seed + i)`` exactly as a single run of
``--seed seed+i`` does, with the agent state's ``hparams`` set to point ``p``.

Only continuous hyperparameters can be swept in one program: they live in
``agent_state.hparams`` (see DESIGN.md), so ``jax.vmap`` maps over them. Anything else
(layer sizes, batch size, n-step, buffer size) changes shapes or the program itself and
must be run as separate jobs; asking for it is a one-line ``ConfigError``.

``batch_runner`` vmaps a ``Runner`` over the member axis. The chunk counter stays
unbatched, so the runner's evaluation ``lax.cond`` stays a real branch. When there are
several local devices, ``shard`` places the member axis across them
(``NamedSharding`` over a 1-D mesh) and XLA partitions the program.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.runners import Runner, RunnerState
from jaxrl.types import ConfigError

AXIS = "members"
STATE_AXES = RunnerState(agent_state=0, env_state=0, obs=0, carry=0, key=0, chunk=None)


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
    valid = hparam_names(hparams)
    for name in sweep:
        if name not in valid:
            raise ConfigError(
                f"--sweep agent.{name}: '{name}' is not a continuous hyperparameter of agent "
                f"'{agent_name}' (sweepable in one program: {', '.join(valid) or 'none'}); "
                "a structural option must be run as separate jobs"
            )


def grid(sweep: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """The points of the sweep: the Cartesian product of the values, first name slowest."""
    names = list(sweep)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*sweep.values())]


def member_hparams(hparams: Any, points: Sequence[Mapping[str, float]], seeds: int) -> Any:
    """``hparams`` stacked to ``[P * K]``: point ``p`` repeated for each of the ``K`` seeds."""

    def stack(name: str, value: jax.Array) -> jax.Array:
        column = [point.get(name, None) for point in points for _ in range(seeds)]
        return jnp.stack([value if v is None else jnp.asarray(v, value.dtype) for v in column])

    if dataclasses.is_dataclass(hparams):
        return hparams.replace(
            **{f.name: stack(f.name, getattr(hparams, f.name)) for f in dataclasses.fields(hparams)}
        )
    return {name: stack(name, value) for name, value in hparams.items()}


def batch_runner(runner: Runner) -> Runner:
    """``runner`` vmapped over a leading member axis.

    ``init(keys [M, 2], hparams [M] or None)``, ``run_chunk(state)`` with every state leaf
    but ``chunk`` batched, metrics ``{name: [M, iterations]}``, and
    ``evaluate(agent_states, keys [M, 2]) -> [M, episodes]``.
    """
    init = jax.vmap(runner.init, in_axes=(0, 0), out_axes=STATE_AXES)
    init_default = jax.vmap(lambda key: runner.init(key), out_axes=STATE_AXES)
    run_chunk = jax.vmap(runner.run_chunk, in_axes=(STATE_AXES,), out_axes=(STATE_AXES, 0))
    return runner._replace(
        init=lambda keys, hparams=None: (
            init_default(keys) if hparams is None else init(keys, hparams)
        ),
        run_chunk=run_chunk,
        evaluate=jax.vmap(runner.evaluate),
    )


def mesh_for(members: int) -> Mesh | None:
    """A 1-D mesh over as many local devices as divide ``members`` (None for one device)."""
    devices = jax.local_devices()
    count = max(d for d in range(1, len(devices) + 1) if members % d == 0)
    return None if count == 1 else Mesh(devices[:count], (AXIS,))


def state_shardings(mesh: Mesh, state: Any) -> Any:
    """Shardings of a batched runner state: the member axis split over ``mesh``, the
    unbatched chunk counter replicated."""
    split, replicated = (
        NamedSharding(mesh, PartitionSpec(AXIS)),
        NamedSharding(mesh, PartitionSpec()),
    )
    shardings = jax.tree.map(lambda _: split, state)
    return shardings.replace(chunk=replicated)


def shard(tree: Any, mesh: Mesh | None) -> Any:
    """``tree``'s leaves placed with their leading (member) axis split over ``mesh``."""
    if mesh is None:
        return tree
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(AXIS)))
