"""A3C's asynchronous workers on one host (Mnih et al. 2016, Algorithm S3), on Sebulba's
machinery (``runners/distributed/sebulba.py``: its actors, parameter store and chunk layout).

``make_a3c_runner(agent, env, config, eval_env, workers)`` returns a ``Runner``
(``jittable=False``) with the layout and per-iteration metrics of the fused runner. Each of
the ``workers`` threads owns ``env.spec.num_envs`` envs of a JAX-native ``env`` and a
PRNG key, and repeats: read the newest shared agent state (version ``v``), collect a
rollout ``[rollout_len, num_envs]`` with it (``scan.make_rollout``), compute the gradient
of the loss on it (``agent.split_update.gradient``, ``agents/on_policy/a3c.py``), and apply
that gradient to the shared state *as it is then* (version ``v' >= v``: other workers may
have applied theirs meanwhile) through the shared optimizer state (its ``apply``),
publishing version ``v' + 1``. The rollouts and gradients of the workers run at once
(XLA releases the GIL); only the application is one at a time (a lock around a pure
function of the newest state, where the paper's Hogwild writes race: JAX's arrays are
immutable). The staleness ``v' - v`` (logged per iteration as ``policy_lag``) is bounded:
a worker may run at most ``max_lead`` gradients ahead of the slowest (``Leash``; the CLI's
``--queue-size``, default 2), so while one computes its gradient each other applies at
most ``max_lead + 1``: ``v' - v <= (workers - 1) * (max_lead + 1)``. With one worker
nothing is stale and a run is A2C's (``update``'s) computation; ``apply_wait_s`` logs how
long workers waited for the lock.

One iteration is one gradient applied; a chunk is ``iterations_per_chunk`` of them,
iteration ``g`` of the global order done by worker ``g mod K``. The workers start with a
chunk and are joined at its end, so a checkpoint holds the learner as Sebulba's does
(``base.LearnerCheckpoint``; a resume restarts the envs). An exception in a worker is
raised again by the driver's thread.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.core import Env
from jaxrl.runners.base import ChunkLayout, RunConfig, Runner
from jaxrl.runners.distributed.sebulba import (
    ActorState,
    ParameterStore,
    SebulbaState,
    collect_rollout,
    finish_chunk,
    make_init,
    start_threads,
    threaded_runner,
)
from jaxrl.runners.scan import make_evaluate, make_rollout
from jaxrl.types import Agent, ConfigError, SplitUpdate


def asynchronous_parts(agent: Agent) -> SplitUpdate[Any, Any] | None:
    """``(gradient, apply)`` of an agent whose update splits in two (A3C), else None."""
    return agent.split_update


class Leash:
    """Bounded staleness (the stale synchronous parallel rule of Ho et al. 2013): a worker
    may begin an iteration only while it has applied at most ``max_lead`` gradients more
    than the slowest unfinished worker (``begin`` blocks until then)."""

    def __init__(self, workers: int, max_lead: int):
        self.counts: list[float] = [0] * workers  # inf once a worker has finished
        self.max_lead = max_lead
        self._cond = threading.Condition()

    def begin(self, a: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.counts[a] - min(self.counts) <= self.max_lead)

    def applied(self, a: int, finished: bool = False) -> None:
        with self._cond:
            self.counts[a] = float("inf") if finished else self.counts[a] + 1
            self._cond.notify_all()


def make_a3c_runner(
    agent: Agent,
    env: Env,
    config: RunConfig,
    eval_env: Env | None = None,
    workers: int = 2,
    max_lead: int = 0,
) -> Runner:
    """Builds the runner of ``workers`` asynchronous workers (module docstring); a worker
    runs at most ``max_lead`` gradients ahead of the slowest (``Leash``), so a gradient
    is at most ``(workers - 1) * (max_lead + 1)`` versions stale."""
    parts = asynchronous_parts(agent)
    if parts is None:
        raise ConfigError(
            "asynchronous workers need an agent whose update splits into gradient and apply "
            "(Agent.split_update: a3c)"
        )
    if workers < 1 or max_lead < 0:
        raise ConfigError(f"A3C needs >= 1 workers and a lead >= 0, got {workers}, {max_lead}")
    if not env.state_is_portable:
        raise ConfigError("A3C's workers need a JAX-native env whose state is an array pytree")
    layout = ChunkLayout.of(config, env.spec.num_envs)
    iterations = layout.iterations_per_chunk
    collect = jax.jit(make_rollout(agent, env, config.rollout_len))
    evaluate = jax.jit(make_evaluate(agent, eval_env or env))
    gradient, apply = jax.jit(parts.gradient), jax.jit(parts.apply)
    init = make_init(agent, env, workers)
    leash = Leash(workers, max_lead)

    def work(a: int, actor: ActorState, store: ParameterStore, out: queue.Queue, first: int):
        """Worker ``a``: the iterations ``g`` of this chunk with ``g mod K == a``, each put
        on ``out`` as ``(stats, metrics, lag, wait)``."""
        try:
            for g in range(first, first + iterations):
                if g % workers != a:
                    continue
                leash.begin(a)
                version, agent_state = store.read()
                transitions, stats, key = collect_rollout(collect, actor, agent_state)
                grad = gradient(agent_state, transitions, jax.random.fold_in(key, 1))
                start = time.perf_counter()
                applied, _ = store.apply(lambda state, grad=grad: apply(state, grad))
                wait = time.perf_counter() - start
                leash.applied(a)
                out.put((stats, grad.metrics, applied - 1 - version, wait))
        except BaseException as e:  # raised again by the driver's thread
            out.put(e)
        finally:
            leash.applied(a, finished=True)

    def run_chunk(state: SebulbaState) -> tuple[SebulbaState, dict[str, Any]]:
        nonlocal leash
        out: queue.Queue = queue.Queue()
        store = ParameterStore(state.agent_state, state.version)
        leash = Leash(workers, max_lead)
        first = state.chunk * iterations
        threads = start_threads(work, state, store, out, first)
        rows, lag, waits = [], np.zeros(iterations, np.float32), np.zeros(iterations, np.float32)
        for i in range(iterations):
            item = out.get()
            if isinstance(item, BaseException):
                for thread in threads:
                    thread.join()
                raise item
            stats, metrics, lag[i], waits[i] = item
            rows.append((stats, {k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}))
        for thread in threads:
            thread.join()
        version, agent_state = store.read()
        chunk = state.chunk + 1
        metrics, key = finish_chunk(rows, layout, chunk, evaluate, agent_state, state.key)
        metrics["policy_lag"], metrics["apply_wait_s"] = lag, waits
        return SebulbaState(agent_state, state.actors, key, chunk, version), metrics

    return threaded_runner(agent, init, run_chunk, evaluate, layout)
