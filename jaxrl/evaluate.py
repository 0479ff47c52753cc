"""``python -m jaxrl.evaluate RUN_DIR``: evaluate a saved policy.

Examples::

    python -m jaxrl.evaluate runs/dqn_CartPole-v1_s0_...                  # 10 greedy episodes
    python -m jaxrl.evaluate runs/dqn_CartPole-v1_s0_... --episodes 100 --epsilon 0.05
    python -m jaxrl.evaluate runs/dqn_CartPole-v1_s0_... --video cartpole.mp4

Restores the newest checkpoint (or ``--step``), runs ``--episodes`` episodes in parallel
with ``agent.act(..., explore=False)`` (the agent's ``eval_epsilon``, or ``--epsilon``),
and prints the mean, standard deviation, minimum and maximum return (one line per member
for seed and sweep runs). ``--video FILE`` records one greedy episode with imageio
(``pip install jaxrl[video]``) for environments that render (``jaxrl.experiment.video``:
classic control, MinAtar, Atari, the board games, MuJoCo, ``gym:`` envs).
A user's mistake (a missing run or checkpoint, a corrupt checkpoint, one holding
non-finite parameters) prints one line and exits with code 2; an unreadable newest
checkpoint is skipped for the newest readable one, and said.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jaxrl import trust
from jaxrl.types import ConfigError, member_axes, take_member
from jaxrl.validation import ArgumentParser

if TYPE_CHECKING:
    from jaxrl.experiment.config import Experiment


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m jaxrl.evaluate", description="Evaluate a saved policy.")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory with checkpoints")
    parser.add_argument("--episodes", type=int, default=10, help="episodes (default 10)")
    parser.add_argument(
        "--epsilon", type=float, help="act epsilon-greedily with this epsilon (default: greedy)"
    )
    parser.add_argument("--step", type=int, help="checkpoint to load (default: the newest)")
    parser.add_argument("--seed", type=int, default=0, help="evaluation seed (default 0)")
    parser.add_argument("--video", metavar="FILE.mp4", help="record one episode into FILE")
    trust.add_import_argument(parser)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {args.episodes}")
    if args.epsilon is not None and not 0.0 <= args.epsilon <= 1.0:
        raise ConfigError(f"--epsilon must be in [0, 1], got {args.epsilon}")
    return args


def with_epsilon(state: Any, epsilon: float | None) -> Any:
    """``state`` with ``hparams.eval_epsilon`` set to ``epsilon`` (unchanged when None)."""
    if epsilon is None:
        return state
    hparams = getattr(state, "hparams", None)
    if hparams is None or not hasattr(hparams, "eval_epsilon"):
        raise ConfigError("--epsilon: this agent has no eval_epsilon hyperparameter")
    import jax.numpy as jnp

    value = jnp.full_like(hparams.eval_epsilon, epsilon)
    return state.replace(hparams=hparams.replace(eval_epsilon=value))


def evaluate_returns(agent, agent_state, env, key, batched: bool):
    """Each episode's return: ``[episodes]``, or ``[members, episodes]`` when ``batched``."""
    import jax

    from jaxrl.runners import make_evaluate
    from jaxrl.runners.games.matches import make_match, opponents

    if getattr(env, "host_loop", False):  # a Gymnasium env stepped from Python
        from jaxrl.runners.host import make_host_evaluate

        return make_host_evaluate(agent, env)(agent_state, key)
    if env.spec.num_players > 1:  # a game: scores (+1/0/-1) against the random opponent
        evaluate = make_match(agent, env, opponents(env)["random"])
    else:
        evaluate = make_evaluate(agent, env)
    if batched:
        evaluate = jax.vmap(evaluate, in_axes=(member_axes(agent_state), None))
    return jax.device_get(jax.jit(evaluate)(agent_state, key))


def check_video(config: Experiment, agents: int) -> None:
    """ConfigError (one line) unless one episode of ``config``'s env can be recorded: an
    env that renders, imageio installed and a run of one agent (``experiment.video``)."""
    from jaxrl.experiment import video

    video.check(config, agents, "--video")


def check_video_early(run_dir: str, path: str) -> None:
    """``check_video`` from the run's ``config.yaml`` alone, and ``path``'s folder: before
    a checkpoint is restored or an episode run."""
    from pathlib import Path

    from jaxrl.experiment.config import resolve

    config_file = Path(run_dir) / "config.yaml"
    if not config_file.is_file():
        return  # restoring says what is wrong with the run directory
    folder = Path(path).parent
    if not folder.is_dir():
        raise ConfigError(f"--video: folder '{folder}' does not exist")
    config = resolve(config_file=str(config_file))
    check_video(config, max(1, len(config.agents)))


def record(agent, agent_state, config: Experiment, key, path: str) -> int:
    """Writes one greedy episode of the first member to ``path``; returns its frames
    (``check_video`` has accepted ``config`` before the evaluation)."""
    from jaxrl.experiment import video

    episode, fps = video.make_episode(agent, config)
    frames = episode(agent_state, key)
    video.write(path, frames, fps, "--video")
    return len(frames)


def main(argv: Sequence[str] | None = None) -> int:
    return trust.run_main(_main, argv)


def _main(argv: list[str], stack: contextlib.ExitStack) -> int:
    try:
        args = parse_args(argv)
        stack.enter_context(trust.trusted(args.imports))
        from jaxrl.networks.spec import import_modules

        import_modules(args.imports)
        import jax
        import numpy as np

        from jaxrl.experiment.run import restore_checkpoint

        if args.video:
            check_video_early(args.run_dir, args.video)
        setup, restored, skipped = restore_checkpoint(args.run_dir, args.step)
        for line in skipped:
            print(f"note: {line}; using checkpoint {restored.step}")
        config, launch = setup.config, setup.launch
        policies = setup.policies(restored.state.agent_state)
        if args.video:
            check_video(config, len(policies))
        env = config.env.make(args.episodes)
        key = jax.random.PRNGKey(args.seed)
        policy = "greedy" if args.epsilon is None else f"epsilon {args.epsilon:g}"
        names = ",".join(a.name for a in config.trained)
        print(
            f"{names} on {config.env.name}, checkpoint {restored.step:,}, "
            f"{args.episodes} episodes, {policy}"
            + (" (each agent against the random opponent)" if setup.players else "")
        )
        members = launch.members(config.run.seed) if launch.batched else [{}]
        for label, agent, state in policies:
            state = with_epsilon(state, args.epsilon)
            returns = np.asarray(evaluate_returns(agent, state, env, key, launch.batched))
            returns = returns if launch.batched else returns[None]
            for member, r in zip(members, returns, strict=True):
                name = " ".join(f"{k.removeprefix('agent.')}={v:g}" for k, v in member.items())
                name = " ".join(n for n in (label, name) if n)
                print(
                    f"{name + ': ' if name else ''}return mean {r.mean():.2f}  "
                    f"std {r.std():.2f}  min {r.min():.2f}  max {r.max():.2f}"
                )
        if args.video:
            _, agent, state = policies[0]
            first = take_member(state, 0) if launch.batched else state
            frames = record(agent, first, config, jax.random.PRNGKey(args.seed + 1), args.video)
            print(f"video: {args.video} ({frames} frames)")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from jaxrl.experiment.guards import exit_with

    exit_with(main())
