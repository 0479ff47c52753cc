"""``python -m jaxrl.train``: train an agent on an environment.

Examples::

    python -m jaxrl.train --agent dqn --env CartPole
    python -m jaxrl.train --agent dqn --env Acrobot --steps 200000 --agent.lr 3e-4
    python -m jaxrl.train --config runs/dqn_CartPole-v1_s0_.../config.yaml
    python -m jaxrl.train --agent dqn --env CartPole --checkpoint-every 20000 --keep 3
    python -m jaxrl.train --resume runs/dqn_CartPole-v1_s0_...   [--steps 300000]
    python -m jaxrl.train --agent dqn --env CartPole --seeds 8
    python -m jaxrl.train --agent dqn --env CartPole --seeds 4 --sweep agent.lr=1e-3,3e-4
    python -m jaxrl.train --agent rainbow --env connect_four --self-play
    python -m jaxrl.train --agents rainbow,dqn --env connect_four
    python -m jaxrl.train --agent dqn --env CartPole --callback export:every=50000
    python -m jaxrl.train --agent dqn --env CartPole --init-from runs/dqn_CartPole-v1_s0_...:20000
    python -m jaxrl.train --agent dqn --env CartPole --callback mymodule:my_callback
    python -m jaxrl.launch --processes 2 -- python -m jaxrl.train --agent ppo --env MinAtar-Breakout

Dotted overrides set any option: ``--agent.KEY VALUE``, ``--env.KEY VALUE`` and
``--run.KEY VALUE`` (``--agent.n_step 3``, ``--run.eval_every 20000``). A user's mistake
prints one line on stderr and exits with code 2; a run whose loss, parameters or metrics
become non-finite stops with one line and exit code 3 (its last finite checkpoint kept);
SIGINT or SIGTERM stops after the current chunk with a checkpoint and exit code 130 or 143
(a second one aborts at once).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxrl import trust
from jaxrl.experiment.guards import NONFINITE_EXIT, Interrupted, NonFinite
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser

if TYPE_CHECKING:
    from jaxrl.experiment.run import Launch

# What ``--resume`` takes besides the run directory; any other flag is an error.
RESUME_MAY_CHANGE = (
    *("help", "resume", "step", "steps", "checkpoint_every", "keep", "logdir", "watchdog"),
    *("imports", "devices"),
)


class _Once(argparse.Action):
    """Stores a flag's value, refusing the flag given twice (the last would win silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise ConfigError(f"{option_string} is given twice; give it once")
        setattr(namespace, self.dest, values)


def _epilog() -> str:
    from jaxrl.experiment.helptext import epilog

    return epilog()


def _help_request(argv: Sequence[str], flag: str) -> str | None:
    """The NAME of ``FLAG NAME --help`` (or ``-h``; ``flag`` ``--agent`` or ``--env``),
    else None."""
    if "--help" not in argv and "-h" not in argv:
        return None
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(flag + "="):
            return token.partition("=")[2]
    return None


def _imports_of(argv: Sequence[str]) -> list[str]:
    """The modules of ``--import MODULE`` (or ``--import=MODULE``) in ``argv``."""
    found = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t == "--import"]
    return found + [t.partition("=")[2] for t in argv if t.startswith("--import=")]


def _repeated(metavar: str, help: str) -> dict[str, Any]:
    """The options of a flag that may be given many times: the list of its values."""
    return dict(action="append", default=[], metavar=metavar, help=help)


def _switch(help: str) -> dict[str, Any]:
    """The options of a flag without a value: True when given, else None (not set)."""
    return dict(action="store_true", default=None, help=help)


IMPORT_FLAG: tuple[str, dict[str, Any]] = ("--import", {})  # trust.add_import_argument
# The flags of ``python -m jaxrl.train``, in --help's order: (flag, add_argument options).
FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--agent", dict(action=_Once, help="agent name (default: dqn)")),
    ("--env", dict(action=_Once, help="environment name (default: CartPole-v1)")),
    (
        "--config -c",
        dict(
            action=_Once,
            metavar="FILE.yaml",
            help="experiment config file (jaxrl's, or RLHive's experiment file)",
        ),
    ),
    (
        "--preset -p",
        dict(
            action=_Once,
            metavar="NAME",
            help="a preset by name (jaxrl/presets), or RLHive's preset path (atari/dqn.yml)",
        ),
    ),
    ("--steps", dict(action=_Once, type=int, help="total environment steps")),
    ("--seed", dict(action=_Once, type=int, help="random seed")),
    ("--num-envs", dict(action=_Once, type=int, help="parallel environments")),
    ("--logdir", dict(default="runs", help="parent of run directories (runs)")),
    (
        "--resume",
        dict(
            action=_Once,
            metavar="RUN_DIR",
            help="continue RUN_DIR from its newest readable checkpoint",
        ),
    ),
    ("--step", dict(type=int, metavar="N", help="with --resume: continue from checkpoint N")),
    (
        "--checkpoint-every",
        dict(type=int, metavar="N", help="save a checkpoint every N env steps (0: at the end)"),
    ),
    ("--keep", dict(type=int, metavar="K", help="checkpoints kept (default 3)")),
    (
        "--watchdog",
        dict(
            type=float,
            metavar="SECONDS",
            help="stalled-chunk limit: exit 4, stacks (3600; 0: off)",
        ),
    ),
    (
        "--seeds",
        dict(type=int, metavar="K", help="train K seeds (seed, seed+1, ...) as one program"),
    ),
    ("--sweep", _repeated("agent.K=V,V", "vmap over values (repeatable: a grid)")),
    ("--devices", dict(metavar="N", help="split the envs over N local devices, or 'all' (1)")),
    (
        "--coordinator",
        dict(action=_Once, metavar="H:P", help="jax.distributed: process 0's HOST:PORT"),
    ),
    ("--num-processes", dict(action=_Once, type=int, metavar="N", help="of the job")),
    ("--process-id", dict(action=_Once, type=int, metavar="I", help="0 .. N-1")),
    ("--init-timeout", dict(action=_Once, type=float, metavar="S", help="to join, seconds (300)")),
    (
        "--actor-threads",
        dict(type=int, metavar="K", help="Sebulba, A3C: K actor threads feed the learner"),
    ),
    (
        "--actor-processes",
        dict(type=int, metavar="P", help="Ape-X, IMPALA: P actor processes (jaxrl.launch)"),
    ),
    ("--queue-size", dict(type=int, metavar="Q", help="with actor threads/processes: queued (2)")),
    ("--sync-actors", _switch("with actor threads/processes: no policy lag, repeatable")),
    ("--self-play", _switch("one agent plays every side of a turn-based game")),
    (
        "--agents",
        dict(action=_Once, metavar="A,B", help="independent agents, one per player of a game"),
    ),
    IMPORT_FLAG,
    ("--log", dict(metavar="NAMES", help="extra loggers: tensorboard, wandb (tensorboard)")),
    ("--callback", _repeated("SPEC", "hook between chunks: NAME[:k=v,...] or MODULE:ATTR")),
    (
        "--init-from",
        dict(action=_Once, metavar="RUN", help="start from RUN[:STEP]'s checkpoint (same agent)"),
    ),
    (
        "--init-parts",
        dict(
            action=_Once,
            metavar="P,P",
            help="of --init-from: params,optimizer,normalizer,buffer",
        ),
    ),
)


def _make_parser() -> ArgumentParser:
    """The flags of ``python -m jaxrl.train`` (``FLAGS``; dotted overrides are parsed apart)."""
    parser = ArgumentParser(
        prog="python -m jaxrl.train",
        usage="%(prog)s --agent NAME --env NAME [options] [--agent.KEY VALUE ...]",
        description="Train a jaxrl agent. With no --config, the preset for the agent and "
        "env pair is used when one exists (jaxrl/presets).",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flag, options in FLAGS:
        if (flag, options) == IMPORT_FLAG:
            trust.add_import_argument(parser)
        else:
            parser.add_argument(*flag.split(), **options)
    return parser


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, Any]]:
    """Splits ``argv`` into the named flags and the dotted overrides."""
    from jaxrl.experiment import rlhive
    from jaxrl.experiment.config import parse_override
    from jaxrl.suggest import did_you_mean

    parser = _make_parser()
    agent_help, env_help = _help_request(argv, "--agent"), _help_request(argv, "--env")
    if agent_help is None and env_help is not None:  # --env NAME --help, after --import
        from jaxrl.experiment.helptext import env_help as env_text
        from jaxrl.networks.spec import import_modules

        with trust.trusted(_imports_of(argv)):
            import_modules(_imports_of(argv))
            print(env_text(env_help))
        raise SystemExit(0)
    if agent_help is not None:  # after --import, which may register the agent
        from jaxrl.experiment.helptext import agent_help as text
        from jaxrl.networks.spec import import_modules

        imports = _imports_of(argv)
        with trust.trusted([*imports, *filter(None, [trust.module_of(agent_help)])]):
            import_modules(imports)
            print(text(agent_help))
        raise SystemExit(0)
    args, rest = parser.parse_known_args(argv)
    args.fixed_by_resume = [  # the flags a resume may not change, in --help's order
        action.option_strings[0]
        for action in parser._actions
        if action.dest not in RESUME_MAY_CHANGE
        and action.option_strings
        and getattr(args, action.dest) not in (None, [])
    ]
    overrides: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        if not token.startswith("--") or "." not in token:
            flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
            hint = did_you_mean(token.partition("=")[0], flags)
            raise ConfigError(
                f"unrecognized argument '{token}'{hint}; see --help (overrides look like "
                "--agent.lr 3e-4)"
            )
        key, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 >= len(rest):
                raise ConfigError(f"override '{token}' needs a value")
            value = rest[i + 1]
            i += 1
        overrides[rlhive.override(key)] = parse_override(value)  # --ag.X: --agent.X
        i += 1
    return args, overrides


def _devices(value: str | None) -> int | str:
    """``--devices``: None -> 1, ``"all"``, or a positive integer."""
    if value is None or value == "all":
        return 1 if value is None else value
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"--devices must be a positive integer or 'all', got '{value}'") from None


def _join(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    """Joins the job of ``--coordinator/--num-processes/--process-id`` (or of the
    ``JAXRL_*`` variables ``python -m jaxrl.launch`` sets; ``runners.distributed.topology``): a peer
    that does not come within ``--init-timeout`` is a ``ConfigError``. Returns the job's
    process count (1: no job). A job of several processes trains one run over all the
    job's devices (``--devices all``, the default there; ``experiment.setup``); with
    ``--actor-processes`` it is a learner and its actor processes instead, each process
    its own JAX runtime."""
    from jaxrl.runners.distributed.topology import DEFAULT_TIMEOUT, Topology, join

    flags = (args.coordinator, args.num_processes, args.process_id)
    topology = Topology.from_env()
    if any(flag is not None for flag in flags):
        if None in flags:
            raise ConfigError("give --coordinator, --num-processes and --process-id together")
        timeout = DEFAULT_TIMEOUT if args.init_timeout is None else args.init_timeout
        topology = Topology(*flags, timeout)
    elif args.init_timeout is not None and topology is None:
        raise ConfigError("--init-timeout is for a job of several processes (--num-processes)")
    if args.actor_processes or _resumed_launch(args).actor_processes:  # each its own runtime
        args.topology = topology  # joined by _open_actor_link once the run is checked
        return 1
    join(topology)
    return 1 if topology is None else topology.num_processes


def _resumed_launch(args: argparse.Namespace) -> Launch:
    """The ``launch.yaml`` of the run ``--resume`` continues (the default ``Launch`` for a
    new run or a directory without one)."""
    from jaxrl.experiment.launch import Launch, read_launch

    return Launch() if args.resume is None else read_launch(args.resume)


def _serves_resumed_actors(args: argparse.Namespace, stack: contextlib.ExitStack) -> bool:
    """``--resume`` of a run of actor processes: opens the link; True where this process
    is one of the actors and has served them (the learner resumes the run)."""
    from jaxrl.experiment.config import resolve

    launch = _resumed_launch(args)
    if not launch.actor_processes:
        return False
    config = resolve(config_file=str(Path(args.resume) / "config.yaml"))
    _open_actor_link(config, launch, getattr(args, "topology", None), stack)
    if not _is_actor_process():
        return False
    from jaxrl.experiment.actors import serve_as_actor

    serve_as_actor(config, launch)
    return True


def _open_actor_link(config: Any, launch: Launch, topology: Any, stack: contextlib.ExitStack):
    """``--actor-processes P``: the run checked (``experiment.actors.check``), then the
    link between the learner (process 0) and the ``P`` actor processes of a job of ``P +
    1`` (``runners/distributed/link.py``), which process 0 closes by telling the actors to
    stop."""
    from jaxrl.experiment.actors import check
    from jaxrl.runners.distributed.link import open_link

    check(config, launch)
    count, got = launch.actor_processes, 1 if topology is None else topology.num_processes
    if got != count + 1:
        raise ConfigError(
            f"--actor-processes {count} runs a learner and {count} actor processes, a job of "
            f"{count + 1}, not {got}: start it with python -m jaxrl.launch --processes "
            f"{count + 1} -- python -m jaxrl.train ... --actor-processes {count}"
        )
    link = open_link(topology)
    stack.callback(link.close)
    if link.process_id == 0:
        stack.callback(link.stop)  # runs first: the actors stop, then all close


def _names(value: str) -> list[str]:
    """``"tensorboard,wandb"`` -> ``["tensorboard", "wandb"]`` (``""``: none)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def _loggers(value: str) -> list[str]:
    """``--log``'s names, each installed (the default, tensorboard, is skipped silently
    where tensorboardX is not; named, it is a mistake)."""
    from jaxrl.experiment.logging import check_loggers

    return check_loggers(_names(value), given=True)


def named_modules(args: argparse.Namespace, overrides: dict[str, Any]) -> list[str]:
    """The modules the command line names, which its names may import (``jaxrl.trust``):
    ``--import``'s, and those of ``module:attr`` names in ``--agent``, ``--agents``,
    ``--env``, ``--callback``, ``--*.name``, ``--*_fn`` overrides (MBPO's
    ``termination_fn``, ``reward_fn``) and ``--*.extra_losses`` (a name or a list)."""
    names = [args.agent, args.env, *_names(args.agents or ""), *args.callback]
    names += [v for k, v in overrides.items() if k.endswith((".name", "_fn"))]
    for k, v in overrides.items():
        if k.endswith(".extra_losses"):
            names += v if isinstance(v, list) else [v]
    return [*args.imports, *filter(None, map(trust.module_of, names))]


def _rlhive_choices(args: argparse.Namespace) -> list[str]:
    """``--preset NAME`` checked (an RLHive preset path made the jaxrl preset and env of
    ``rlhive.PRESETS``), and the command-line choices an RLHive file implies (self-play,
    the checkpoint period; the command line's win); returns the file's notes."""
    from jaxrl.experiment import config, rlhive

    if args.preset is not None:
        if args.config is not None:
            raise ConfigError("give --config FILE or --preset NAME, not both")
        name, env = rlhive.PRESETS.get(args.preset, (args.preset, None))
        if name not in config.presets():
            raise ConfigError(
                f"unknown preset '{args.preset}'; jaxrl's: {', '.join(config.presets())}; "
                f"RLHive's: {', '.join(rlhive.PRESETS)}"
            )
        if env is None and args.env is None and not config.load_preset(name)["env"].get("name"):
            raise ConfigError(f"preset '{name}' is for a family of envs: give --env NAME")
        args.preset, args.env = name, args.env or env
    translated = None if args.config is None else config.rlhive_file(args.config)
    if translated is None:
        return []
    args.self_play = args.self_play or translated.self_play
    if args.checkpoint_every is None and translated.checkpoint_every is not None:
        args.checkpoint_every = translated.checkpoint_every
    return translated.notes


def _is_actor_process() -> bool:
    """Whether this process is one of ``--actor-processes``'s actors (not the learner)."""
    from jaxrl.runners.distributed.link import current_link

    link = current_link()
    return link is not None and link.process_id > 0


def main(argv: Sequence[str] | None = None) -> int:
    return trust.run_main(_main, argv)


def _resume(args: argparse.Namespace, overrides: dict[str, Any]) -> None:
    """``--resume RUN``: the run continued with its saved config (only the flags that
    say how far and how it is kept may be given)."""
    from jaxrl.experiment.run import resume_experiment

    given = args.fixed_by_resume
    if given or overrides:
        what = given[0] if given else f"--{next(iter(overrides))}"
        raise ConfigError(
            f"--resume continues a run with its saved config; {what} cannot be "
            "changed (only --steps, --step, --checkpoint-every, --keep, --watchdog and "
            "--devices)"
        )
    resume_experiment(
        args.resume,
        steps=args.steps,
        checkpoint_every=args.checkpoint_every,
        keep=args.keep,
        step=args.step,
        watchdog=args.watchdog,
        devices=None if args.devices is None else _devices(args.devices),
    )


def _launch(args: argparse.Namespace) -> Launch:
    """The ``Launch`` (how a new run is carried out) of the command line's flags."""
    from jaxrl.experiment.run import Launch
    from jaxrl.experiment.sweep import parse_sweep

    return Launch(
        seeds=1 if args.seeds is None else args.seeds,
        sweep=parse_sweep(args.sweep),
        checkpoint_every=args.checkpoint_every or 0,
        keep=3 if args.keep is None else args.keep,
        loggers=["tensorboard"] if args.log is None else _loggers(args.log),
        devices=_devices(args.devices),
        watchdog=3600.0 if args.watchdog is None else args.watchdog,
        actor_threads=args.actor_threads or 0,
        actor_processes=args.actor_processes or 0,
        queue_size=2 if args.queue_size is None else args.queue_size,
        sync_actors=bool(args.sync_actors),
        callbacks=args.callback,
        init_from=args.init_from,
        init_parts=[] if args.init_parts is None else _names(args.init_parts),
        imports=list(args.imports),
    )


def _main(argv: list[str], stack: contextlib.ExitStack) -> int:
    try:
        args, overrides = parse_args(argv)
        stack.enter_context(trust.trusted(named_modules(args, overrides)))
        if _join(args, stack) > 1 and args.devices is None:
            args.devices = "all"
        from jaxrl.networks.spec import import_modules

        import_modules(args.imports)
        from jaxrl.experiment.config import resolve
        from jaxrl.experiment.run import run_experiment

        if args.resume is not None:
            if not _serves_resumed_actors(args, stack):
                _resume(args, overrides)
            return 0
        if args.step is not None:
            raise ConfigError("--step selects the checkpoint a --resume continues from")
        notes = _rlhive_choices(args)
        launch = _launch(args)

        agent_list = None if args.agents is None else _names(args.agents)
        if agent_list is not None:
            if args.agent is not None or not agent_list:
                raise ConfigError("give either --agent NAME or --agents NAME,NAME (one per player)")
            args.agent = agent_list[0]
        config = resolve(
            agent_list=agent_list,
            agent=args.agent,
            env=args.env,
            config_file=args.config,
            steps=args.steps,
            seed=args.seed,
            num_envs=args.num_envs,
            overrides=overrides,
            preset=args.preset,
        )
        if launch.actor_processes:
            _open_actor_link(config, launch, getattr(args, "topology", None), stack)
        if _is_actor_process():
            from jaxrl.experiment.actors import serve_as_actor

            serve_as_actor(config, launch)
            return 0
        for note in notes:  # an RLHive file's keys jaxrl does not use, once it is valid
            print(f"note: {note}", file=sys.stderr)
        run_experiment(config, args.logdir, launch=launch, self_play=bool(args.self_play))
    except ConfigError as e:
        if not _is_actor_process():  # the learner says it
            print(f"error: {e}", file=sys.stderr)
        return 2
    except NonFinite as e:
        print(f"error: {e}", file=sys.stderr)
        return NONFINITE_EXIT
    except Interrupted as e:
        print(e, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    from jaxrl.experiment.guards import exit_with

    exit_with(main())
