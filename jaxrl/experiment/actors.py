"""``--actor-processes P``: the checks of the mode, the learner's runner (process 0) and the
loop of actor process ``p`` in ``1 .. P`` (``runners/distributed/actor_processes.py``).

The processes are started by ``python -m jaxrl.launch --processes P+1 -- python -m
jaxrl.train ... --actor-processes P``; ``jaxrl.train`` opens the link between them
(``runners/distributed/link.py``) before it builds anything.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxrl import agents
from jaxrl.experiment.config import Experiment
from jaxrl.experiment.launch import Launch
from jaxrl.runners import Runner
from jaxrl.runners.distributed.actor_processes import make_learner_runner, run_actor
from jaxrl.runners.distributed.link import current_link
from jaxrl.types import ConfigError


def check(config: Experiment, launch: Launch) -> None:
    """ConfigError unless the run is one seed of an agent with actors whose ``num_envs``
    (and Ape-X's actors) split over the ``P`` actor processes, in a job of ``P + 1``."""
    count, name = launch.actor_processes, config.agent.name
    what = f"--actor-processes {count}"
    if launch.batched or launch.devices != 1 or launch.actor_threads:
        raise ConfigError(
            f"{what} runs one seed on one device: drop --seeds, --sweep, --devices, --actor-threads"
        )
    entry = agents.entry(name)
    if entry.actor_options is None:
        with_actors = [n for n in agents.available() if agents.entry(n).actor_options]
        raise ConfigError(
            f"{what}: agent '{name}' has no actors; actor processes feed {', '.join(with_actors)}"
        )
    num_envs = config.env.num_envs
    if num_envs % count:
        valid = [p for p in range(1, num_envs + 1) if num_envs % p == 0]
        raise ConfigError(f"{what} must divide env.num_envs {num_envs}; valid: {valid}")
    for index in range(count):
        entry.actor_options(config.agent.kwargs(), num_envs, count, index)


def check_link(launch: Launch) -> None:
    """ConfigError unless this process has the link of a job of ``P + 1`` processes."""
    count, link = launch.actor_processes, current_link()
    if link is None or link.num_processes != count + 1:
        raise ConfigError(
            f"--actor-processes {count} needs {count + 1} processes: start it with python -m "
            f"jaxrl.launch --processes {count + 1} -- python -m jaxrl.train ... "
            f"--actor-processes {count}"
        )


def learner_runner(config: Experiment, launch: Launch, env: Any, eval_env: Any, agent) -> Runner:
    """Process 0's runner: the learner of the actor processes' rollouts (its link is
    None where the run is only restored or evaluated)."""
    return make_learner_runner(
        agent,
        env,
        config.run,
        (launch.actor_processes, current_link()),
        eval_env,
        launch.sync_actors,
        launch.queue_size,
    )


def actor_parts(config: Experiment, processes: int, index: int) -> tuple[Any, Any]:
    """``(agent, env)`` of actor process ``index + 1``: ``num_envs / processes`` envs and
    the agent with the options of its share of the actors (``AgentEntry.actor_options``)."""
    name, num_envs = config.agent.name, config.env.num_envs
    options = agents.entry(name).actor_options
    assert options is not None  # check
    env = config.env.make(num_envs // processes)
    own = options(config.agent.kwargs(), num_envs, processes, index)
    return agents.build(agents.configure(name, own), env.spec), env


def actor_key(seed: int, process: int) -> jax.Array:
    """Actor process ``process``'s key: the run's training key folded with ``process``."""
    return jax.random.fold_in(jax.random.split(jax.random.PRNGKey(seed))[0], process)


def serve_as_actor(config: Experiment, launch: Launch) -> int:
    """This process as actor process ``p`` of the open link: its rollouts until the
    learner stops; returns how many it sent."""
    check_link(launch)
    link = current_link()
    assert link is not None  # check_link
    agent, env = actor_parts(config, launch.actor_processes, link.process_id - 1)
    key = actor_key(config.run.seed, link.process_id)
    return run_actor(
        agent, env, link, key, config.run.rollout_len, launch.sync_actors, launch.queue_size
    )
