"""Plain helpers shared by the test modules (fixtures live in the ``conftest.py`` files):
the tiny command-line run most CLI tests train, a CLI mistake's one line, the run
directories a run makes, and TensorBoard event files read back. The device tests' fresh
interpreters import it too: it imports pytest only where it is used."""

from __future__ import annotations

import shlex
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
