"""The execution modes, as two tables of values: the program one member of a run runs
(``PROGRAMS``: independent agents, the host loop, self-play, a team of players, the fused
loop) and how the run executes it (``EXECUTIONS``: a job of several processes, actor
processes, actor threads, envs split over devices, batched seeds and sweeps, one run).

Each mode says what it applies to, checks every mistake of that mode (one line,
``ConfigError``, before a run directory exists) and builds its part. Choosing is "the first
that applies, checked, then built" (``choose``). What a mode reads of an env or an agent
is a declared field: ``Env.host_loop``, ``Env.state_is_portable``, ``Env.vmappable``,
``EnvSpec.num_players``/``turn_based``, the registry's ``plays_turns``/``plays_teams`` and
``a3c_workers.asynchronous_parts`` (an agent whose update splits in two).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import jax

from jaxrl import agents
from jaxrl.envs.marl import team_view
from jaxrl.experiment import actors, sweep
from jaxrl.experiment.config import Experiment
from jaxrl.experiment.launch import Launch
from jaxrl.runners import Runner
from jaxrl.runners.distributed import devices
from jaxrl.runners.distributed.a3c_workers import asynchronous_parts, make_a3c_runner
from jaxrl.runners.distributed.sebulba import make_sebulba_runner
from jaxrl.runners.games.independent import make_multi_agent_runner
from jaxrl.runners.games.self_play import make_self_play_runner
from jaxrl.runners.host import make_host_runner
from jaxrl.runners.scan import make_runner
from jaxrl.types import Agent, ConfigError


class Parts(NamedTuple):
    """What a mode builds from: the training env, the evaluation env, the agent (player
    0's among independent agents) and the independent agents (empty for one agent)."""

    env: Any
    eval_env: Any
    agent: Agent
    players: tuple[Agent, ...] = ()


class Program(NamedTuple):
    """What one member of a run runs.

    Attributes:
      name: the mode's name.
      applies: ``(config, env) -> bool``.
      check: ``(config, launch, env, self_play) -> None``: ConfigError for a mistake;
        ``self_play`` is the ``--self-play`` flag of a new run, None where no flag is
        given (a resume, ``evaluate``).
      runner: ``(config, parts) -> Runner``.
    """

    name: str
    applies: Callable[[Experiment, Any], bool]
    check: Callable[[Experiment, Launch, Any, bool | None], None]
    runner: Callable[[Experiment, Parts], Runner]


class Built(NamedTuple):
    """An execution's part of a run: its runner and how members and envs lie on devices."""

    runner: Runner
    mesh: Any = None  # members over devices (--seeds, --sweep)
    env_mesh: Any = None  # one run's envs over devices (--devices)


class Execution(NamedTuple):
    """How a run executes its program.

    Attributes:
      name: the mode's name.
      applies: ``(launch) -> bool``.
      check: ``(config, launch, parts, program) -> None``: ConfigError for a mistake.
      build: ``(config, launch, parts, runner) -> Built``, from the program's runner.
    """

    name: str
    applies: Callable[[Launch], bool]
    check: Callable[[Experiment, Launch, Parts, Program], None]
    build: Callable[[Experiment, Launch, Parts, Runner], Built]


M = TypeVar("M", Program, Execution)


def choose(modes: Sequence[M], *args: Any) -> M:
    """The first of ``modes`` whose ``applies(*args)`` holds (the last applies always)."""
    return next(mode for mode in modes if mode.applies(*args))


# ---------------------------------------------------------------------------- programs


def _check_opponents(config: Experiment) -> None:
    for option in ("opponent_pool", "opponent_scripted"):
        if getattr(config.run, option):
            raise ConfigError(f"run.{option} (training opponents) applies to --self-play only")


def _is_game(env: Any) -> bool:
    return env.spec.num_players > 1 and env.spec.turn_based


def _check_independent(config: Experiment, launch: Launch, env: Any, self_play: bool | None):
    """Independent agents (``--agents``): a turn-based game, one agent per player, each
    a one-step learner of stitched transitions (``runners/games/independent.py``)."""
    listed, name, spec = config.agents, config.env.name, env.spec
    if self_play:
        raise ConfigError("--self-play shares one agent between the players; drop --agents")
    _check_opponents(config)
    if not _is_game(env):
        raise ConfigError(
            f"--agents needs a turn-based game of 2+ players (connect_four, tic_tac_toe); "
            f"'{name}' has {spec.num_players} player(s)"
        )
    if len(listed) != spec.num_players:
        names = ",".join(a.name for a in listed)
        raise ConfigError(
            f"'{name}' has {spec.num_players} players: give {spec.num_players} agents, not "
            f"{len(listed)} ({names})"
        )
    for a in listed:
        if not agents.entry(a.name).plays_turns:
            raise ConfigError(
                f"--agents takes {_turn_learners()} (one-step off-policy learners that "
                f"honour the legal-move mask), not '{a.name}'"
            )
        if a.option("n_step", 1) != 1:
            raise ConfigError(
                f"agent '{a.name}' has n_step {a.option('n_step')}: independent agents learn "
                "from single stitched transitions: give --agent.n_step 1"
            )
    if config.run.rollout_len % spec.num_players:
        raise ConfigError(
            f"run.rollout_len {config.run.rollout_len} must be a multiple of the "
            f"{spec.num_players} players"
        )
    if launch.sweep or launch.actor_threads or launch.devices != 1 or launch.init_from:
        raise ConfigError(
            "--agents runs with --seeds only: drop --sweep, --actor-threads, --devices, --init-from"
        )


def _turn_learners() -> str:
    """The registered agents that play turn-based games, as ``"dqn or rainbow"``."""
    return " or ".join(n for n in agents.available() if agents.entry(n).plays_turns)


def _check_self_play(config: Experiment, launch: Launch, env: Any, self_play: bool | None):
    """Self-play: one agent in every seat of a turn-based game (``runners/games/self_play.py``),
    confirmed by ``--self-play`` on a new run."""
    if self_play is False:
        raise ConfigError(
            f"'{config.env.name}' is a {env.spec.num_players}-player game: train it with "
            "--self-play"
        )
    agent = config.agent
    if not agents.entry(agent.name).plays_turns:
        raise ConfigError(
            f"--self-play trains {_turn_learners()} (one-step off-policy learners of stitched "
            f"transitions), not '{agent.name}'"
        )
    n_step = agent.option("n_step", 1)
    if n_step != 1:
        raise ConfigError(
            f"--self-play interleaves the players' transitions in one stream per env, so "
            f"n-step windows would mix players: use --agent.n_step 1 (got {n_step})"
        )


def _check_team(config: Experiment, launch: Launch, env: Any, self_play: bool | None):
    """A simultaneous-move game with one learner per player (``--env.shared false``)."""
    _check_not_self_play(config, env, self_play)
    _check_opponents(config)
    if not agents.entry(config.agent.name).plays_teams:
        raise ConfigError(
            f"'{config.env.name}' is a {env.spec.num_players}-player simultaneous-move game: "
            "train it with --agent maddpg or ippo (or the shared layout, without --env.shared "
            "false)"
        )


def _check_not_self_play(config: Experiment, env: Any, self_play: bool | None) -> None:
    if self_play:
        raise ConfigError(
            "--self-play needs a turn-based game of 2+ players (connect_four, tic_tac_toe, "
            f"hanabi); '{config.env.name}' has {env.spec.num_players} player(s)"
        )


def _check_single(config: Experiment, launch: Launch, env: Any, self_play: bool | None):
    """One agent on a single-agent env (or a game's shared layout)."""
    _check_not_self_play(config, env, self_play)
    _check_opponents(config)


def _single_runner(config: Experiment, parts: Parts) -> Runner:
    return make_runner(parts.agent, parts.env, config.run, parts.eval_env)


PROGRAMS: tuple[Program, ...] = (
    Program(
        "independent agents",
        lambda config, env: bool(config.agents),
        _check_independent,
        lambda config, p: make_multi_agent_runner(p.players, p.env, config.run, p.eval_env),
    ),
    Program(
        "host loop",
        lambda config, env: env.host_loop,
        _check_single,
        lambda config, p: make_host_runner(p.agent, p.env, config.run, p.eval_env),
    ),
    Program(
        "self-play",
        lambda config, env: _is_game(env),
        _check_self_play,
        lambda config, p: make_self_play_runner(p.agent, p.env, config.run, p.eval_env),
    ),
    Program(
        "team",
        lambda config, env: env.spec.num_players > 1,
        _check_team,
        lambda config, p: make_runner(p.agent, team_view(p.env), config.run, team_view(p.eval_env)),
    ),
    Program("fused", lambda config, env: True, _check_single, _single_runner),
)


# -------------------------------------------------------------------------- executions


def _check_job(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    check_job(launch)
    _check_devices(config, launch, parts, program)


def check_job(launch: Launch) -> None:
    """ConfigError unless a job of several processes (``jax.distributed``) trains one run,
    its envs split over every device of the job (``--devices all``)."""
    what = f"a job of {jax.process_count()} processes"
    if launch.devices == 1:
        raise ConfigError(f"{what} splits one run over all its devices: give --devices all")
    for flag, given in (
        ("--seeds/--sweep", launch.batched),
        ("--actor-threads", launch.actor_threads),
        ("--callback", launch.callbacks),
        ("--init-from", launch.init_from),
    ):
        if given:
            raise ConfigError(f"{what} trains one run over its devices; drop {flag}")


def _check_native_single_agent(config: Experiment, parts: Parts, what: str) -> None:
    """ConfigError unless the run is one agent on a JAX-native single-agent env."""
    env = parts.env
    if env.host_loop or not env.state_is_portable:
        raise ConfigError(f"{what} needs a JAX-native env; '{config.env.name}' is not")
    if env.spec.num_players > 1:
        raise ConfigError(f"{what} runs a single-agent env; '{config.env.name}' has players")


def _check_threads(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    what = f"--actor-threads {launch.actor_threads}"
    if launch.batched or launch.devices != 1:
        raise ConfigError(f"{what} runs one seed on one device: drop --seeds, --sweep, --devices")
    _check_native_single_agent(config, parts, what)


def _build_threads(config: Experiment, launch: Launch, parts: Parts, runner: Runner) -> Built:
    """Sebulba's actor threads and learner, or A3C's workers for an agent whose update
    splits into a gradient and its application."""
    agent, env, eval_env, run = parts.agent, parts.env, parts.eval_env, config.run
    threads, queue = launch.actor_threads, launch.queue_size
    if asynchronous_parts(agent) is not None:
        return Built(make_a3c_runner(agent, env, run, eval_env, threads, queue))
    return Built(make_sebulba_runner(agent, env, run, eval_env, threads, queue, launch.sync_actors))


def _check_processes(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    _check_native_single_agent(config, parts, f"--actor-processes {launch.actor_processes}")
    actors.check(config, launch)


def _build_processes(config: Experiment, launch: Launch, parts: Parts, runner: Runner) -> Built:
    """The learner of ``launch.actor_processes`` actor processes (process 0's part)."""
    return Built(actors.learner_runner(config, launch, parts.env, parts.eval_env, parts.agent))


def _check_devices(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    what = f"--devices {launch.devices}"
    if launch.batched:
        raise ConfigError(
            f"{what} splits one run's envs; --seeds and --sweep already spread their "
            "members over the local devices"
        )
    _check_native_single_agent(config, parts, what)


def _build_devices(config: Experiment, launch: Launch, parts: Parts, runner: Runner) -> Built:
    num_envs = config.env.num_envs
    mesh = devices.env_mesh(launch.devices, num_envs)
    return Built(devices.data_parallel(runner, mesh, num_envs), env_mesh=mesh)


def _check_batched(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    env = parts.env
    if env.host_loop or not env.vmappable:
        raise ConfigError(
            f"--seeds and --sweep need a JAX-native env; '{config.env.name}' is stepped on "
            "the host: run its seeds as separate jobs"
        )
    if launch.sweep:
        _check_sweep(config, launch, parts.agent)


def _check_sweep(config: Experiment, launch: Launch, agent: Agent) -> None:
    """ConfigError unless every swept name is a continuous hyperparameter of the agent and
    every swept value a valid value of its option."""
    name, options = config.agent.name, config.agent.kwargs()
    hparams = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
    sweep.check_sweep(name, getattr(hparams, "hparams", None), launch.sweep)
    for option, values in launch.sweep.items():
        for value in values:
            agents.configure(name, {**options, option: value})


def _build_batched(config: Experiment, launch: Launch, parts: Parts, runner: Runner) -> Built:
    """The runner vmapped over members; an env on this process's emulators (ale-py) runs
    its members as one vector env on the default device, not split over devices."""
    members = len(launch.members(config.run.seed))
    host_bytes = sweep.check_host_envs((parts.env, parts.eval_env), members, launch.seeds)
    runner = sweep.batch_runner(runner)
    sweep.check_memory(runner, members, launch.seeds, host_bytes)
    mesh = sweep.mesh_for(members) if parts.env.state_is_portable else None
    return Built(runner, mesh=mesh)


def _no_check(config: Experiment, launch: Launch, parts: Parts, program: Program) -> None:
    return None


def _build_one(config: Experiment, launch: Launch, parts: Parts, runner: Runner) -> Built:
    return Built(runner)


EXECUTIONS: tuple[Execution, ...] = (
    Execution("job", lambda launch: jax.process_count() > 1, _check_job, _build_devices),
    Execution(
        "actor processes",
        lambda launch: launch.actor_processes > 0,
        _check_processes,
        _build_processes,
    ),
    Execution(
        "actor threads", lambda launch: launch.actor_threads > 0, _check_threads, _build_threads
    ),  # noqa: E501
    Execution("devices", lambda launch: launch.devices != 1, _check_devices, _build_devices),
    Execution("batched", lambda launch: launch.batched, _check_batched, _build_batched),
    Execution("one run", lambda launch: True, _no_check, _build_one),
)
