"""Replay-buffer speed and memory: jaxrl uniform and prioritized against flashbax.

One iteration = add 8 transitions (one step of 8 envs) + sample a batch of 256 + (for the
prioritized buffers) write back 256 new priorities computed from the sample, for a buffer
of capacity 100,000 that starts full. 1,000 iterations run inside one jitted ``lax.scan``;
the table gives the compile time and the time per iteration (the best of ``--repeats``
runs of the compiled program, and their median), in microseconds.

Transitions have CartPole's shapes: obs float32 [4], action int32, reward float32 and
two bool flags. jaxrl's buffers store a ``Transition`` (obs, action, reward, next_obs,
terminated, truncated: 42 bytes) as DQN does and sample single steps (``window=1``);
flashbax's flat buffers store the step without next_obs (26 bytes) and sample pairs of
consecutive steps, the idiomatic use of each library. flashbax is a benchmark-only
dependency: ``pip install -e ".[bench]"``.

A second table gives the bytes per stored Atari transition (84x84 uint8 frames, a stack
of 4), computed from array shapes with ``jax.eval_shape`` (nothing is allocated).

    python benchmarks/replay.py [--iterations 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from jaxrl.buffers import PriorityParams, sum_tree
from jaxrl.buffers.prioritized import make_prioritized_replay
from jaxrl.buffers.replay import make_uniform_replay
from jaxrl.types import Transition

CAPACITY = 100_000
BATCH = 256
NUM_ENVS = 8  # transitions added per iteration: one step of 8 envs
PRIORITY = PriorityParams(jnp.float32(0.6), jnp.float32(1e-6))  # an agent's hparams


def _step(i: jax.Array) -> dict[str, jax.Array]:
    """One step of NUM_ENVS CartPole-shaped transitions, cheap and deterministic in i."""
    i = jnp.asarray(i, jnp.int32)
    f = i.astype(jnp.float32) + jnp.arange(NUM_ENVS, dtype=jnp.float32)
    obs = f[:, None] * jnp.array([1e-3, 2e-3, 3e-3, 4e-3], jnp.float32)
    return {
        "obs": obs,
        "action": (i + jnp.arange(NUM_ENVS, dtype=jnp.int32)) % 2,
        "reward": jnp.ones((NUM_ENVS,), jnp.float32),
        "next_obs": obs + 1e-3,
        "terminated": (i + jnp.arange(NUM_ENVS)) % 97 == 0,
        "truncated": jnp.zeros((NUM_ENVS,), bool),
    }


def _transition(step: dict[str, jax.Array]) -> Transition:
    return Transition(extras={}, **step)


def _flat_step(step: dict[str, jax.Array]) -> dict[str, jax.Array]:
    return {k: v for k, v in step.items() if k != "next_obs"}


def _checksum(tree: Any) -> jax.Array:
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree.leaves(tree))


# Each case: (name, make() -> (init_state, iteration(state, i, key) -> (state, checksum))).


def jaxrl_uniform() -> tuple[Any, Callable]:
    buffer = make_uniform_replay(CAPACITY, NUM_ENVS, BATCH)
    full = jax.vmap(lambda i: _transition(_step(i)))(jnp.arange(CAPACITY // NUM_ENVS))
    state = jax.jit(buffer.add)(buffer.init(_transition(_step(jnp.int32(0)))), full)

    def iteration(state, i, key):
        state = buffer.add(state, jax.tree.map(lambda x: x[None], _transition(_step(i))))
        sample = buffer.sample(state, key)
        return state, _checksum(sample.experience)

    return state, iteration


def jaxrl_prioritized() -> tuple[Any, Callable]:
    buffer = make_prioritized_replay(CAPACITY, NUM_ENVS, BATCH)
    full = jax.vmap(lambda i: _transition(_step(i)))(jnp.arange(CAPACITY // NUM_ENVS))
    state = jax.jit(buffer.add)(buffer.init(_transition(_step(jnp.int32(0)))), full, PRIORITY)

    def iteration(state, i, key):
        step = jax.tree.map(lambda x: x[None], _transition(_step(i)))
        state = buffer.add(state, step, PRIORITY)
        sample = buffer.sample(state, key)
        td = sample.experience.obs[:, 0, 0] - sample.experience.next_obs[:, 0, 1]
        state = buffer.update_priorities(state, sample.indices, td, PRIORITY)
        return state, _checksum(sample.experience) + jnp.sum(sample.probabilities)

    return state, iteration


def _flashbax_fill(buffer, state):
    def body(state, i):
        return buffer.add(state, _flat_step(_step(i))), None

    return jax.jit(lambda s: jax.lax.scan(body, s, jnp.arange(CAPACITY // NUM_ENVS))[0])(state)


def flashbax_uniform() -> tuple[Any, Callable]:
    import flashbax

    buffer = flashbax.make_flat_buffer(
        max_length=CAPACITY, min_length=BATCH, sample_batch_size=BATCH, add_batch_size=NUM_ENVS
    )
    state = _flashbax_fill(buffer, buffer.init(jax.tree.map(lambda x: x[0], _flat_step(_step(0)))))

    def iteration(state, i, key):
        state = buffer.add(state, _flat_step(_step(i)))
        sample = buffer.sample(state, key)
        return state, _checksum(sample.experience)

    return state, iteration


def flashbax_prioritized() -> tuple[Any, Callable]:
    import flashbax

    buffer = flashbax.make_prioritised_flat_buffer(
        max_length=CAPACITY,
        min_length=BATCH,
        sample_batch_size=BATCH,
        add_batch_size=NUM_ENVS,
        priority_exponent=0.6,
        device="cpu",
    )
    state = _flashbax_fill(buffer, buffer.init(jax.tree.map(lambda x: x[0], _flat_step(_step(0)))))

    def iteration(state, i, key):
        state = buffer.add(state, _flat_step(_step(i)))
        sample = buffer.sample(state, key)
        exp = sample.experience
        td = exp.first["obs"][:, 0] - exp.second["obs"][:, 1]
        state = buffer.set_priorities(state, sample.indices, jnp.abs(td) + 1e-6)
        return state, _checksum(exp) + jnp.sum(sample.probabilities)

    return state, iteration


CASES = {
    "jaxrl uniform": jaxrl_uniform,
    "jaxrl prioritized": jaxrl_prioritized,
    "flashbax uniform flat": flashbax_uniform,
    "flashbax prioritised flat": flashbax_prioritized,
}


def time_case(make: Callable, iterations: int, repeats: int) -> tuple[float, list[float]]:
    """Compile time (s) and the per-iteration times (s) of each repeat."""
    state, iteration = make()

    def run(state, key):
        def body(carry, xs):
            state, acc = carry
            i, key = xs
            state, check = iteration(state, i, key)
            return (state, acc + check), None

        xs = (jnp.arange(iterations, dtype=jnp.int32), jax.random.split(key, iterations))
        return jax.lax.scan(body, (state, jnp.zeros((), jnp.float32)), xs)[0]

    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = jax.jit(run).lower(state, key).compile()
    compile_time = time.perf_counter() - start
    jax.block_until_ready(compiled(state, key))  # warm-up
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(state, jax.random.key(r + 1)))
        times.append((time.perf_counter() - start) / iterations)
    return compile_time, times


def speed_table(iterations: int, repeats: int, cases: list[str]) -> Table:
    table = Table(
        title=f"add {NUM_ENVS} + sample {BATCH} (+ priority update), capacity {CAPACITY:,}, "
        f"CartPole-shaped transitions, {iterations:,} iterations in one jitted scan"
    )
    for column in ("buffer", "compile s", "µs / iteration (best)", "µs / iteration (median)"):
        table.add_column(column, justify="right")
    best = {}
    for name in cases:
        compile_time, times = time_case(CASES[name], iterations, repeats)
        best[name] = min(times) * 1e6
        table.add_row(
            name,
            f"{compile_time:.2f}",
            f"{best[name]:.1f}",
            f"{statistics.median(times) * 1e6:.1f}",
        )
    notes = []
    if {"jaxrl prioritized", "flashbax prioritised flat"} <= best.keys():
        ratio = best["flashbax prioritised flat"] / best["jaxrl prioritized"]
        notes.append(f"jaxrl prioritized is {ratio:.1f}x faster than flashbax prioritised")
    if {"jaxrl prioritized", "jaxrl uniform"} <= best.keys():
        ratio = best["jaxrl prioritized"] / best["jaxrl uniform"]
        notes.append(f"jaxrl prioritized / jaxrl uniform = {ratio:.2f}")
    table.caption = "; ".join(notes)
    return table


def _nbytes(tree: Any) -> int:
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def memory_table() -> Table:
    """Bytes per stored Atari transition, from shapes only (jax.eval_shape)."""
    capacity, frame, stack = 1_000_000, (84, 84), 4
    table = Table(
        title=f"bytes per stored Atari transition: capacity {capacity:,}, 84x84 uint8 frames, "
        f"stack of {stack}, 1 env"
    )
    for column in ("layout", "bytes / transition", "of which sum tree", "GB in all", "how"):
        table.add_column(column, justify="right")
    rows = []  # (name, state shapes, how)

    example = Transition(
        obs=jax.ShapeDtypeStruct((1, *frame, stack), jnp.uint8),
        action=jax.ShapeDtypeStruct((1,), jnp.int32),
        reward=jax.ShapeDtypeStruct((1,), jnp.float32),
        next_obs=jax.ShapeDtypeStruct((1, *frame, stack), jnp.uint8),
        terminated=jax.ShapeDtypeStruct((1,), bool),
        truncated=jax.ShapeDtypeStruct((1,), bool),
        extras={},
    )
    for name, make in (("uniform", make_uniform_replay), ("prioritized", make_prioritized_replay)):
        state = jax.eval_shape(make(capacity, 1, 32).init, example)
        rows.append((f"naive: stacked obs + next_obs, {name}", state, f"eval_shape({name}.init)"))
    try:
        from jaxrl.buffers.compact import make_compact_replay
    except ImportError:
        make_compact_replay = None
    if make_compact_replay is not None:
        for mode in ("uniform", "prioritized"):
            buffer = make_compact_replay(capacity, 1, 32, (*frame, stack), mode=mode)
            state = jax.eval_shape(buffer.init)
            rows.append((f"compact: one frame per step, {mode}", state, "eval_shape(compact.init)"))
    for name, state, how in rows:
        total = _nbytes(state)
        tree = _nbytes(getattr(state, "tree", ()))
        table.add_row(
            name,
            f"{total / capacity:,.1f}",
            f"{tree / capacity:.2f}",
            f"{total / 1e9:.2f}",
            how,
        )
    if make_compact_replay is None:
        # Not written yet: the layout it is meant to have, one 84x84 frame, action int32,
        # reward float32, two bool flags, and a sum tree (leaves and internal nodes).
        tree = 4 * sum(sum_tree.level_sizes(capacity)) / capacity
        per = frame[0] * frame[1] + 4 + 4 + 2
        table.add_row("compact (from the layout), prioritized", f"{per + tree:,.1f}",
                      f"{tree:.2f}", f"{(per + tree) * capacity / 1e9:.2f}", "by hand")  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=list(CASES), default=list(CASES))
    args = parser.parse_args()
    console = Console(width=140)
    console.print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    console.print(speed_table(args.iterations, args.repeats, args.only))
    console.print(memory_table())


if __name__ == "__main__":
    main()
