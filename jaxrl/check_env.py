"""``jaxrl check-env NAME`` (``python -m jaxrl.check_env NAME``): an environment checked
against jaxrl's contract before anything trains on it (``jaxrl.envs.check``; a ``gym:``
env through Gymnasium's own ``check_env``).

Examples::

    jaxrl check-env CartPole
    jaxrl check-env gym:LunarLander-v3 --env.continuous true
    jaxrl check-env corridor:make_corridor --env.length 5 --steps 200

Exit codes:

* 0: the env passes; one line says what was checked (Gymnasium's warnings on a ``gym:``
  env, advice rather than failures, as ``note:`` lines before it);
* 1: the env breaks the contract: one line per problem on stderr, ``NAME: problem``;
* 2: the command was wrong (an unknown env or option, a package not installed): one
  line, ``error: ...``, as every jaxrl command.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from jaxrl import trust
from jaxrl.types import ConfigError
from jaxrl.validation import ArgumentParser


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, Any]]:
    """The arguments and the env options of ``--env.KEY VALUE`` (values read as YAML)."""
    parser = ArgumentParser(prog="jaxrl check-env", description=__doc__.splitlines()[0])
    parser.add_argument("name", metavar="NAME", help="an env name, gym:ID or module:factory")
    parser.add_argument("--num-envs", type=int, default=2, help="copies stepped (default 2)")
    parser.add_argument(
        "--steps",
        type=int,
        help="steps of the rollout (default max_episode_steps + 1, at most 1,000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the rollout's key (default 0)")
    trust.add_import_argument(parser)
    args, rest = parser.parse_known_args(argv)
    options: dict[str, Any] = {}
    tokens = list(rest)
    while tokens:
        token = tokens.pop(0)
        key, eq, value = token.partition("=")
        if not key.startswith("--env.") or len(key) == len("--env."):
            raise ConfigError(f"unrecognized argument '{token}'; env options are --env.KEY VALUE")
        if not eq:
            if not tokens:
                raise ConfigError(f"{key} needs a value")
            value = tokens.pop(0)
        options[key.removeprefix("--env.")] = yaml.safe_load(value)
    if args.steps is not None and args.steps < 1:
        raise ConfigError(f"--steps must be >= 1, got {args.steps}")
    return args, options


def main(argv: Sequence[str] | None = None) -> int:
    return trust.run_main(_main, argv)


def _main(argv: list[str], stack: contextlib.ExitStack) -> int:
    try:
        args, options = parse_args(argv)
        stack.enter_context(
            trust.trusted([*args.imports, *filter(None, [trust.module_of(args.name)])])
        )
        from jaxrl import envs
        from jaxrl.envs import checker
        from jaxrl.networks.spec import import_modules

        import_modules(args.imports)
        env = envs.make(args.name, num_envs=args.num_envs, **options)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    spec = env.spec
    steps = args.steps or checker.default_steps(spec)
    notes: list[str] = []
    problems = envs.check(env, steps=steps, seed=args.seed, notes=notes)
    for note in notes:
        print(f"note: {note}")
    if problems:
        for problem in problems:
            print(f"{spec.name}: {problem}", file=sys.stderr)
        return 1
    if getattr(env, "host_loop", False):
        print(f"{spec.name}: passes Gymnasium's check_env (one copy, jaxrl's wrappers included)")
    else:
        vmap = "vmap, " if getattr(env, "vmappable", True) else ""
        print(
            f"{spec.name}: passes the env contract ({spec.num_envs} envs, {steps:,} random "
            f"steps: spec, jit, {vmap}auto-reset, final_obs, episode statistics, time limit, "
            "action mask, determinism)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
