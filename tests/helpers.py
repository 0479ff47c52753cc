"""Plain helpers shared by the test modules (fixtures live in the ``conftest.py`` files):
the tiny command-line run most CLI tests train and the tiny agents the runner tests
build, a CLI mistake's one line, the run directories a run makes, TensorBoard event files
read back, random transitions and an agent's real rollout, a replay buffer with its
priority parameters bound, and an agent's refused options. The device tests' fresh
interpreters import it too: it imports pytest only where it is used."""

from __future__ import annotations

import functools
import shlex
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import agents
from jaxrl.buffers.base import PriorityParams
from jaxrl.types import ConfigError, EnvSpec, Transition

if TYPE_CHECKING:
    import pytest

# The tiny DQN on CartPole the CLI tests train (a few seconds each); each module states
# what its runs change (``tiny_run``). Runs whose options agree compile the same program,
# which the suite's XLA cache then shares.
TINY_RUN = (
    "--agent dqn --env CartPole --num-envs 4 --agent.hidden_sizes [8] --agent.batch_size 8"
    " --agent.learning_starts 64 --run.rollout_len 4 --run.log_every 256"
    " --run.eval_every 256 --run.eval_episodes 2 --run.stop_return null"
)

# The tiny DQN the runner tests build with ``agents.make``.
TINY_DQN = {
    "hidden_sizes": (8,), "batch_size": 8, "buffer_size": 256,
    "learning_starts": 64, "target_update_period": 64, "epsilon_decay_steps": 200,
}  # fmt: skip

# A tiny conv encoder and batch for an off-policy agent on 8x8 frames.
TINY_CONV = {
    "torso": {"channels": [4], "kernel_sizes": [3], "strides": [2]},
    "feature_dim": 6, "hidden_sizes": (8,), "batch_size": 4,
}  # fmt: skip


def _flags(text: str) -> dict[str, str | None]:
    """``{"--flag": value}`` of a command line, in order (None for a flag without one)."""
    tokens, flags = shlex.split(text), {}
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            value = tokens[i + 1] if i + 1 < len(tokens) else None
            flags[token] = None if value is None or value.startswith("--") else value
    return flags


def tiny_run(changes: str = "", drop: Iterable[str] = ()) -> list[str]:
    """``TINY_RUN`` as ``train.main``'s argv, with the flags of ``changes`` (a command
    line: ``"--steps 512 --agent rainbow --log ''"``) in place of its own or added, and
    the flags named in ``drop`` left out (their preset values hold)."""
    flags = _flags(TINY_RUN) | _flags(changes)
    for flag in drop:
        del flags[flag]
    return [token for flag, value in flags.items() for token in (flag, value) if token is not None]


def one_line_error(capsys: pytest.CaptureFixture[str], *fragments: str) -> str:
    """What the command wrote on stderr: one line, no traceback, holding every fragment."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert all(fragment in err for fragment in fragments), err
    return err


def run_dirs(logdir: Path) -> list[Path]:
    """The run directories in ``logdir`` (none where it does not exist), sorted."""
    return sorted(p for p in logdir.iterdir() if p.is_dir()) if logdir.exists() else []


def train_into(logdir: Path, *argv: str) -> tuple[int, list[Path]]:
    """``python -m jaxrl.train ARGV --logdir LOGDIR`` in this process: its exit code and
    the run directories it made in ``logdir``."""
    from jaxrl.train import main

    before = set(run_dirs(logdir))
    code = main([*argv, "--logdir", str(logdir)])
    return code, [p for p in run_dirs(logdir) if p not in before]


def train_run(logdir: Path, *argv: str) -> Path:
    """The run directory of ``python -m jaxrl.train ARGV --logdir LOGDIR``, which must
    exit 0 having made it."""
    code, made = train_into(logdir, *argv)
    assert code == 0 and len(made) == 1, (code, made)
    return made[0]


def tensorboard_values(run_dir: Path) -> Iterator[tuple[int, Any]]:
    """``(step, summary value)`` of every value in ``run_dir``'s TensorBoard event files
    (TFRecords: a length, its CRC, the event, the event's CRC)."""
    from tensorboardX.proto.event_pb2 import Event

    for path in run_dir.glob("events.out.tfevents.*"):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                yield event.step, value


def random_transitions(
    rng: np.random.Generator,
    shape: tuple[int, int],
    obs_shape: tuple[int, ...],
    draw_action: Callable[[np.random.Generator, tuple[int, int]], Any],
    ends: bool = True,
) -> Transition:
    """``shape`` (``[T, N]``) transitions of normal observations and rewards and the
    actions ``draw_action(rng, shape)``; with ``ends``, about 15% of the steps end an
    episode, half of them by termination, half by truncation."""
    ended = rng.random(shape) < 0.15 if ends else np.zeros(shape, bool)
    coin = rng.random(shape) < 0.5
    return Transition(
        obs=jnp.asarray(rng.normal(size=(*shape, *obs_shape)), jnp.float32),
        action=draw_action(rng, shape),
        reward=jnp.asarray(rng.normal(size=shape), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(*shape, *obs_shape)), jnp.float32),
        terminated=jnp.asarray(ended & coin),
        truncated=jnp.asarray(ended & ~coin),
        extras={},
    )


def collect_rollout(agent, state, env, key, T=8):
    """A real rollout ``[T, N]`` collected with ``agent.act`` (one jitted scan)."""

    @jax.jit
    def collect(state, key):
        env_state, ts = env.reset(key)

        def step(carry, k):
            env_state, obs = carry
            k1, k2 = jax.random.split(k)
            action, _, extras = agent.act(state, obs, (), k1, True)
            env_state, ts = env.step(env_state, action, k2)
            tr = Transition(
                obs, action, ts.reward, ts.info["final_obs"], ts.terminated, ts.truncated, extras
            )
            return (env_state, ts.obs), tr

        return jax.lax.scan(step, (env_state, ts.obs), jax.random.split(key, T))[1]

    return collect(state, key)


def bind_priority(buffer, alpha: float = 0.6, eps: float = 1e-6):
    """``buffer`` with ``PriorityParams(alpha, eps)`` bound into ``add`` and
    ``update_priorities`` (an agent passes its hparams instead)."""
    p = PriorityParams(jnp.float32(alpha), jnp.float32(eps))
    return buffer._replace(
        add=functools.partial(buffer.add, priority=p),
        update_priorities=functools.partial(buffer.update_priorities, priority=p),
    )


def assert_refused(agent: str, spec: EnvSpec, pattern: str, **options: Any) -> None:
    """``agents.make(agent, spec, **options)`` raises a ``ConfigError`` matching
    ``pattern``."""
    import pytest

    with pytest.raises(ConfigError, match=pattern):
        agents.make(agent, spec, **options)


def rollout_after_one_update(agent, env, rollout_len: int):
    """``(state, rollout, update)`` of a recurrent ``agent`` on ``env``: the state after one
    update (so that the rollout's parameters are not the initial ones), a rollout
    ``[rollout_len, N]`` collected with it from the agent's initial carry, and the jitted
    ``agent.update``."""
    import jax

    from jaxrl.runners.scan import make_rollout

    n = env.spec.num_envs
    collect, update = jax.jit(make_rollout(agent, env, rollout_len)), jax.jit(agent.update)

    def rollout(state, key):
        env_state, ts = env.reset(key)
        return collect(state, env_state, ts.obs, agent.init_carry(n), key)[1]

    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    state, _ = update(state, rollout(state, jax.random.PRNGKey(1)), jax.random.PRNGKey(2))
    return state, rollout(state, jax.random.PRNGKey(3)), update
