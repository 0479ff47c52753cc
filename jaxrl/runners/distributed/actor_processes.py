"""Actor processes: ``P`` processes on one machine step the run's envs (``num_envs / P``
each) with the newest parameters the learner published, and one learner process (process
0) holds the replay or the trajectory queue and updates on their rollouts. They talk over
the coordination service's key-value store (``runners/distributed/link.py``).

One learner iteration ``g`` takes rollout ``g`` of every actor process (``[T, N / P]``
each), joins them along the env axis in process order (``[T, N]``, the batch one
iteration of the fused runner gives the agent) and calls ``agent.update`` once, then
publishes the agent state without its replay, optimizer state and hparams (an actor keeps
its own hparams: Ape-X's epsilons) as version ``g + 1``. Actor process ``p`` runs ahead
of the learner by at most ``queue_size`` rollouts.

* Asynchronous (default): each rollout is collected with the newest published version;
  metrics add ``policy_lag`` (the learner's version minus the rollout's, mean over the
  actors), ``queue_wait_s`` (the learner's wait for the rollouts) and ``update_s`` (its
  time in ``agent.update``).
* Synchronous (``synchronous=True``): rollout ``g`` is collected with exactly version
  ``g``, so a run is repeatable bit for bit.

Keys: ``start`` (the learner's first iteration), ``params`` (``params/{g}`` when
synchronous), ``rollout/{p}/{g}``, ``consumed/{g}`` and ``stop``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.core import Env
from jaxrl.runners.base import ChunkLayout, RunConfig, Runner
from jaxrl.runners.distributed.link import Link, Stopped, concat_envs, pack, unpack
from jaxrl.runners.distributed.sebulba import (
    ActorState,
    SebulbaState,
    collect_rollout,
    finish_chunk,
    learner_update,
    make_init,
    threaded_runner,
)
from jaxrl.runners.scan import make_evaluate, make_rollout
from jaxrl.types import Agent

PRIVATE = ("buffer", "opt_state", "hparams")  # the learner's alone: never published


def acting_view(agent_state: Any) -> dict[str, Any]:
    """The fields of ``agent_state`` (a flax dataclass) the learner publishes to its
    actors: all but ``PRIVATE``."""
    return {
        f.name: getattr(agent_state, f.name)
        for f in dataclasses.fields(agent_state)
        if f.name not in PRIVATE
    }


def _publish(link: Link, agent_state: Any, version: int, synchronous: bool) -> None:
    key = f"params/{version}" if synchronous else "params"
    link.put(key, pack({"version": np.int64(version), "view": acting_view(agent_state)}))


def make_learner_runner(
    agent: Agent,
    env: Env,
    config: RunConfig,
    actors: tuple[int, Link | None],
    eval_env: Env | None = None,
    synchronous: bool = False,
    queue_size: int = 2,
) -> Runner:
    """The learner's ``Runner`` (module docstring): ``env`` is the run's vector env of
    ``N`` envs (its spec and evaluation); ``actors``: ``(P, link)``, the ``P`` actor
    processes that run ``run_actor`` and the link to them (None: the runner restores and
    evaluates, and does not train)."""
    count, link = actors
    layout = ChunkLayout.of(config, env.spec.num_envs)
    iterations = layout.iterations_per_chunk
    collect = make_rollout(agent, env, config.rollout_len)
    evaluate = jax.jit(make_evaluate(agent, eval_env or env))
    init = make_init(agent, env, 0)
    shapes: dict[str, Any] = {}  # the rollout's, once the learner has started the actors

    update = learner_update(agent)

    def run_chunk(state: SebulbaState) -> tuple[SebulbaState, dict[str, Any]]:
        assert link is not None, "actor processes train over a link (experiment.actors)"
        first = state.chunk * iterations
        if not shapes:
            reset = _reset_shapes(agent, env)
            shapes["rollout"] = jax.eval_shape(collect, state.agent_state, *reset)
            _publish(link, state.agent_state, state.version, synchronous)
            link.put("start", str(first).encode())
        template = shapes["rollout"]
        agent_state, key, version = state.agent_state, state.key, state.version
        rows = []
        lag, waits, busy = (np.zeros(iterations, np.float32) for _ in range(3))
        for i in range(iterations):
            g = first + i
            begin = time.perf_counter()
            items = [_take(link, p, g, template) for p in range(1, count + 1)]
            waits[i] = time.perf_counter() - begin
            transitions = concat_envs([item["transitions"] for item in items])
            stats = jax.tree.map(lambda *s: np.sum(s, axis=0), *[item["stats"] for item in items])
            begin = time.perf_counter()
            agent_state, metrics, key = jax.block_until_ready(update(agent_state, transitions, key))
            busy[i] = time.perf_counter() - begin
            lag[i] = np.mean([version - int(item["version"]) for item in items])
            version += 1
            _publish(link, agent_state, version, synchronous)
            _consumed(link, g, queue_size, synchronous)
            rows.append((stats, metrics))
        chunk = state.chunk + 1
        metrics, key = finish_chunk(rows, layout, chunk, evaluate, agent_state, key)
        metrics.update(policy_lag=lag, queue_wait_s=waits, update_s=busy)
        return SebulbaState(agent_state, [], key, chunk, version), metrics

    return threaded_runner(agent, init, run_chunk, evaluate, layout)


def _reset_shapes(agent: Agent, env: Env) -> tuple[Any, ...]:
    env_state, timestep = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    carry = agent.init_carry(env.spec.num_envs)
    return env_state, timestep.obs, carry, jax.random.PRNGKey(0)


def _take(link: Link, p: int, g: int, template: Any) -> dict[str, Any]:
    """Actor process ``p``'s rollout ``g``, removed from the store."""
    key = f"rollout/{p}/{g}"
    data = link.get(key)
    link.delete(key)
    _, transitions, stats = template
    return unpack({"version": 0, "transitions": transitions, "stats": stats}, data)


def _consumed(link: Link, g: int, queue_size: int, synchronous: bool) -> None:
    """Marks round ``g`` taken; every actor has passed round ``g - queue_size``'s mark
    (and, synchronous, read version ``g``), so those keys go."""
    link.put(f"consumed/{g}", b"1")
    if g >= queue_size:
        link.delete(f"consumed/{g - queue_size}")
    if synchronous:
        link.delete(f"params/{g}")


def run_actor(
    agent: Agent,
    env: Env,
    link: Link,
    key: jax.Array,
    rollout_len: int,
    synchronous: bool = False,
    queue_size: int = 2,
) -> int:
    """Actor process ``link.process_id``'s loop over rollouts of its ``env`` until the
    learner says stop; returns the rollouts it sent. ``agent`` acts as this process's
    share of the actors (Ape-X: its epsilons)."""
    collect = jax.jit(make_rollout(agent, env, rollout_len))
    agent_key, env_key, actor_key = jax.random.split(key, 3)
    local = jax.jit(agent.init)(agent_key)
    view = acting_view(local)
    env_state, timestep = jax.jit(env.reset)(env_key)
    actor = ActorState(env_state, timestep.obs, agent.init_carry(env.spec.num_envs), actor_key)
    p, sent = link.process_id, 0
    try:
        first = int(link.get("start", stoppable=True).decode())
        for g in range(first, 2**62):
            if g - first >= queue_size:
                link.get(f"consumed/{g - queue_size}", stoppable=True)
            if link.stopped():
                break
            key_name = f"params/{g}" if synchronous else "params"
            got = unpack({"version": 0, "view": view}, link.get(key_name, stoppable=True))
            local = local.replace(**jax.tree.map(jnp.asarray, got["view"]))
            transitions, stats, _ = collect_rollout(collect, actor, local)
            message = {"version": got["version"], "transitions": transitions, "stats": stats}
            link.put(f"rollout/{p}/{g}", pack(message))
            sent += 1
    except Stopped:
        pass
    return sent
