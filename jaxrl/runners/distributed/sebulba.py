"""Sebulba: actor threads that step their own envs with the newest published parameters,
and a learner that consumes their rollouts from bounded queues (Hessel et al. 2021,
"Podracer architectures for scalable Reinforcement Learning", section 3; IMPALA's
actor-learner split, Espeholt et al. 2018, on one host).

``make_sebulba_runner(agent, env, config, eval_env, actor_threads, queue_size,
synchronous)`` returns a ``Runner`` (``jittable=False``) with the layout and per-iteration
metrics of ``runners.scan.make_runner``. Each of the ``actor_threads`` actors owns a batch
of ``env.spec.num_envs`` envs of a JAX-native ``env`` and a PRNG key; one iteration is one
rollout ``[rollout_len, num_envs]`` of one actor (``scan.make_rollout``, jitted once and
shared by the threads: XLA releases the GIL while it runs) and one ``agent.update`` of
the learner on it. After each update the learner publishes the new agent state with its
version (the number of updates so far); an actor reads the newest one before each
rollout, so its rollout may lag behind the learner by ``policy_lag`` versions, which
IMPALA's V-trace corrects (``agents/on_policy/impala.py``).

* Asynchronous mode (default): actors put rollouts into one queue of ``queue_size``
  (they block when it is full); the learner takes them in arrival order. Metrics add
  ``policy_lag`` (learner version minus the rollout's) and ``queue_wait_s`` (the
  learner's wait for a rollout).
* Synchronous mode (``synchronous=True``): rollout ``g`` of the chunk-free global order is
  collected by actor ``g mod K`` with exactly version ``g`` of the parameters, and the
  learner takes rollouts in that order, so a run is repeatable bit for bit and has no
  lag (the fused runner's computation with ``K`` env batches in turn, each rollout's end
  a stream end: below).

With ``K > 1`` the learner's consecutive rollouts come from different envs, so each
rollout's last step is marked truncated where no episode ended (``end_streams``): a
replay's n-step windows and frame stacks stop at it, bootstrapping from its true next
observation, as they do at a time limit.

The actors are started at the beginning of each chunk and joined at its end, so the
state between chunks is consistent: a checkpoint holds the learner (agent state, key,
chunk counter; ``base.LearnerCheckpoint``) and a resumed run restarts its envs. An
exception in an actor thread is raised again by the learner.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.core import Env
from jaxrl.runners.base import (
    ChunkLayout,
    LearnerCheckpoint,
    RunConfig,
    Runner,
    learner_runner,
    restore_learner,
)
from jaxrl.runners.scan import make_evaluate, make_rollout
from jaxrl.types import Agent, ConfigError, Transition


@dataclasses.dataclass
class ActorState:
    """One actor's envs: ``env_state``, ``obs`` and ``carry`` for ``num_envs`` envs, and
    the actor's PRNG key."""

    env_state: Any
    obs: Any
    carry: Any
    key: jax.Array


@dataclasses.dataclass
class SebulbaState:
    """``agent_state``: the learner's; ``actors``: one ``ActorState`` each; ``key``: the
    learner's PRNG key; ``chunk``: chunks done; ``version``: updates done (the version of
    ``agent_state``'s parameters)."""

    agent_state: Any
    actors: list[ActorState]
    key: jax.Array
    chunk: int
    version: int


class ParameterStore:
    """The newest agent state and its version, published by the learner, read by actors."""

    def __init__(self, agent_state: Any, version: int):
        self._state, self._version = agent_state, version
        self._cond = threading.Condition()

    def apply(self, fn: Any) -> tuple[int, Any]:
        """Replaces the state by ``fn(state)`` as one step (A3C's workers: a gradient
        applied to the newest parameters) and publishes it as the next version; returns
        ``(version, state)`` after it."""
        with self._cond:
            self._state, self._version = fn(self._state), self._version + 1
            self._cond.notify_all()
            return self._version, self._state

    def publish(self, agent_state: Any, version: int) -> None:
        with self._cond:
            self._state, self._version = agent_state, version
            self._cond.notify_all()

    def read(self, at_least: int = 0) -> tuple[int, Any]:
        """``(version, agent_state)``, waiting until ``version >= at_least``."""
        with self._cond:
            self._cond.wait_for(lambda: self._version >= at_least)
            return self._version, self._state


def make_init(agent: Agent, env: Env, actor_threads: int):
    """``init(key, hparams=None) -> SebulbaState``: the agent state and ``actor_threads``
    actors, each with its envs reset and its own key (Sebulba's and A3C's workers)."""
    initial_carry = agent.init_carry(env.spec.num_envs)

    def init(key: jax.Array, hparams: Any = None) -> SebulbaState:
        key, agent_key, *actor_keys = jax.random.split(key, 2 + actor_threads)
        agent_state = jax.jit(agent.init)(agent_key)
        if hparams is not None:
            agent_state = agent_state.replace(hparams=hparams)
        actors = []
        for actor_key in actor_keys:
            actor_key, env_key = jax.random.split(actor_key)
            env_state, timestep = jax.jit(env.reset)(env_key)
            actors.append(ActorState(env_state, timestep.obs, initial_carry, actor_key))
        return SebulbaState(agent_state, actors, key, 0, 0)

    return init


def end_streams(transitions: Transition) -> Transition:
    """``transitions`` ``[T, N]`` with ``truncated[T - 1]`` set where no episode ended at the
    last step: the stream of each env column stops there. A truncated step bootstraps from
    its ``next_obs``, the real next state, so n-step windows and frame stacks of a replay
    (``buffers/``) end at the rollout instead of running into the next rows, which hold
    another actor's envs."""
    last = transitions.truncated[-1] | ~transitions.terminated[-1]
    return transitions._replace(truncated=transitions.truncated.at[-1].set(last))


def learner_update(agent: Agent, ends_streams: bool = False) -> Any:
    """``update(agent_state, transitions, key) -> (agent_state, metrics, key)``, jitted:
    ``agent.update`` with a key split from ``key``, its metrics as float32 (Sebulba's and
    the actor processes' learner); with ``ends_streams``, on ``end_streams(transitions)``
    (rollouts of several actors' envs in turn)."""

    def update_fn(agent_state, transitions, key):
        transitions = end_streams(transitions) if ends_streams else transitions
        key, update_key = jax.random.split(key)
        agent_state, metrics = agent.update(agent_state, transitions, update_key)
        return agent_state, {k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}, key

    return jax.jit(update_fn)


def collect_rollout(collect: Any, actor: ActorState, agent_state: Any) -> tuple[Any, Any, Any]:
    """``(transitions, stats, key)``: one rollout of ``actor``'s envs with ``agent_state``
    (``collect``: the jitted ``scan.make_rollout``), which advances ``actor`` (its envs,
    carry and key); ``key`` is the rollout's."""
    actor.key, key = jax.random.split(actor.key)
    (actor.env_state, actor.obs, actor.carry), transitions, stats = collect(
        agent_state, actor.env_state, actor.obs, actor.carry, key
    )
    return transitions, stats, key


def start_threads(target: Any, state: SebulbaState, store: ParameterStore, out: Any, first: int):
    """Starts one daemon thread per actor of ``state``, running ``target(a, actor, store,
    out, first)``; returns them."""
    threads = [
        threading.Thread(target=target, args=(a, actor, store, out, first), daemon=True)
        for a, actor in enumerate(state.actors)
    ]
    for thread in threads:
        thread.start()
    return threads


def finish_chunk(
    rows: list, layout: ChunkLayout, chunk: int, evaluate: Any, agent_state: Any, key: Any
) -> tuple[dict[str, Any], Any]:
    """``(metrics, key)``: chunk ``chunk``'s per-iteration metrics from its ``(stats,
    agent_metrics)`` rows, with the fused runner's ``step`` and ``eval_return`` (the mean
    return of ``evaluate(agent_state, eval_key)`` on the last row of an evaluating chunk,
    NaN elsewhere), and the learner's ``key`` after drawing ``eval_key``."""
    stats, agent_metrics = jax.device_get(([r[0] for r in rows], [r[1] for r in rows]))
    metrics = {k: np.stack([m[k] for m in agent_metrics]) for k in agent_metrics[0]}
    metrics.update({k: np.stack([s[k].sum() for s in stats]) for k in stats[0]})
    metrics["step"] = layout.iteration_steps(chunk, np)
    metrics["eval_return"] = np.full(len(rows), np.nan, np.float32)
    key, eval_key = jax.random.split(key)
    if layout.evaluates(chunk):
        metrics["eval_return"][-1] = float(evaluate(agent_state, eval_key).mean())
    return metrics, key


def threaded_runner(
    agent: Agent, init: Any, run_chunk: Any, evaluate: Any, layout: ChunkLayout
) -> Runner:
    """The ``Runner`` of actor threads (Sebulba's, A3C's workers): checkpoints hold the
    learner (``base.learner_runner``); a restored state's version is its updates so far."""

    def restore(saved: LearnerCheckpoint, fresh) -> SebulbaState:
        state = restore_learner(saved, fresh)
        return dataclasses.replace(state, version=int(state.chunk) * layout.iterations_per_chunk)

    return learner_runner(agent, init, run_chunk, evaluate, layout, restore)


def make_sebulba_runner(
    agent: Agent,
    env: Env,
    config: RunConfig,
    eval_env: Env | None = None,
    actor_threads: int = 2,
    queue_size: int = 2,
    synchronous: bool = False,
) -> Runner:
    """Builds the actor-learner runner (module docstring) for a JAX-native ``env``."""
    if actor_threads < 1 or queue_size < 1:
        raise ConfigError(
            f"actor_threads and queue_size must be >= 1, got {actor_threads}, {queue_size}"
        )
    if not env.state_is_portable:
        raise ConfigError("actor threads need a JAX-native env whose state is an array pytree")
    num_envs = env.spec.num_envs
    layout = ChunkLayout.of(config, num_envs)
    iterations = layout.iterations_per_chunk
    collect = jax.jit(make_rollout(agent, env, config.rollout_len))
    evaluate = jax.jit(make_evaluate(agent, eval_env or env))
    update = learner_update(agent, ends_streams=actor_threads > 1)
    init = make_init(agent, env, actor_threads)

    def act_loop(a: int, actor: ActorState, store: ParameterStore, out, first: int) -> None:
        """Actor ``a``: its rollouts of this chunk (global indices ``g = first + i`` with
        ``g mod K == a``), each put on ``out`` as ``(version, transitions, stats, a)``."""
        try:
            for g in range(first, first + iterations):
                if g % actor_threads != a:
                    continue
                version, agent_state = store.read(g if synchronous else 0)
                transitions, stats, _ = collect_rollout(collect, actor, agent_state)
                out(a).put((version, transitions, stats))
        except BaseException as e:  # raised again by the learner
            out(a).put(e)

    def run_chunk(state: SebulbaState) -> tuple[SebulbaState, dict[str, Any]]:
        count = actor_threads if synchronous else 1
        queues: list[queue.Queue[Any]] = [queue.Queue(queue_size) for _ in range(count)]
        out = (lambda a: queues[a]) if synchronous else (lambda a: queues[0])
        store = ParameterStore(state.agent_state, state.version)
        first = state.chunk * iterations
        threads = start_threads(act_loop, state, store, out, first)
        agent_state, key, version = state.agent_state, state.key, state.version
        rows, lag, waits = [], np.zeros(iterations, np.float32), np.zeros(iterations, np.float32)
        for i in range(iterations):
            start = time.perf_counter()
            item = queues[(first + i) % actor_threads if synchronous else 0].get()
            waits[i] = time.perf_counter() - start
            if isinstance(item, BaseException):
                raise item
            rollout_version, transitions, stats = item
            agent_state, metrics, key = update(agent_state, transitions, key)
            lag[i] = version - rollout_version
            version += 1
            store.publish(agent_state, version)
            rows.append((stats, metrics))
        for thread in threads:
            thread.join()
        chunk = state.chunk + 1
        metrics, key = finish_chunk(rows, layout, chunk, evaluate, agent_state, key)
        metrics["policy_lag"], metrics["queue_wait_s"] = lag, waits
        new = SebulbaState(agent_state, state.actors, key, chunk, version)
        return new, metrics

    return threaded_runner(agent, init, run_chunk, evaluate, layout)
