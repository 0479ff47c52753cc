"""Callbacks (experiment/callbacks.py, export/callback.py): a user's callback named by
``--callback MODULE:ATTR`` that logs a column and stops the run (its summary, its console
and its exit code say so, the run ends with a checkpoint where it stopped) and sees the
built-in checkpointer's checkpoints in the documented order, the built-in
``export:every=N`` writing the policy at the right steps (the same bytes as ``python -m
jaxrl.export`` of that step's checkpoint), ``stop_when``, and specs that name nothing:
one line, exit 2, no run directory."""

import json
import shutil

import jax
import numpy as np
import pytest
import yaml

from jaxrl.checkpoint import restore
from jaxrl.experiment import callbacks
from jaxrl.experiment.checkpoint import checkpoint_steps
from jaxrl.export.__main__ import main as export_main
from jaxrl.train import main
from tests.helpers import one_line_error, tiny_run, train_into

TINY = tiny_run("--steps 2048 --agent.buffer_size 256")

CALLS: list[tuple[str, int]] = []


class StopAt1024:
    """A user's callback: logs the agent's step counter as a column, stops at 1024 steps;
    records each call's step, ``event.checkpoint_step`` and the newest checkpoint on disk."""

    def record(self, hook, event):
        on_disk = checkpoint_steps(event.run_dir)
        CALLS.append((hook, event.step, event.checkpoint_step, on_disk[-1] if on_disk else None))

    def on_start(self, event):
        self.record("start", event)

    def on_chunk(self, event):
        self.record("chunk", event)
        for row in event.rows:
            row["seen_by_callback"] = event.chunk
        return "1024 steps are enough" if event.step >= 1024 else None

    def on_end(self, event):
        self.record("end", event)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    CALLS.clear()
    code, (run_dir,) = train_into(
        tmp_path_factory.mktemp("callbacks"),
        *TINY,
        *("--checkpoint-every", "512", "--callback", f"{__name__}:StopAt1024"),
        *("--callback", "export:every=512,format=stablehlo"),
    )
    return code, run_dir, list(CALLS)


def test_a_callback_stops_the_run_and_the_summary_says_so(stopped, capsys):
    code, run_dir, calls = stopped
    assert code == 0
    assert [c[:2] for c in calls] == [
        ("start", 0), *(("chunk", s) for s in (256, 512, 768, 1024)), ("end", 1024)
    ]  # fmt: skip
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert summary["steps"] == 1024
    assert summary["stopped_by"] == f"{__name__}:StopAt1024: 1024 steps are enough"
    assert np.isfinite(summary["final_eval_return"])  # the final evaluation ran
    assert checkpoint_steps(run_dir) == [512, 1024]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["seen_by_callback"] for r in rows] == [1, 2, 3, 4]
    assert "seen_by_callback" in (run_dir / "metrics.csv").read_text().splitlines()[0]
    launch = yaml.safe_load((run_dir / "launch.yaml").read_text())
    assert launch["callbacks"] == [f"{__name__}:StopAt1024", "export:every=512,format=stablehlo"]


def test_a_callback_sees_the_checkpoints_of_the_builtin_checkpointer(stopped):
    """The ordering contract (experiment/callbacks.py): after a chunk a user's callback
    runs before the built-in checkpointer, so it sees the newest checkpoint before this
    chunk's (512 is saved after the chunk ending at 512 was handed to it); at the end the
    checkpointer runs first, so ``on_end`` sees the final checkpoint, already on disk."""
    _, _, calls = stopped
    assert calls == [
        ("start", 0, None, None),
        ("chunk", 256, None, None),
        ("chunk", 512, None, None),
        ("chunk", 768, 512, 512),
        ("chunk", 1024, 512, 512),
        ("end", 1024, 1024, 1024),
    ]


def test_export_every_n_steps_writes_at_those_steps(stopped, tmp_path):
    _, run_dir, _ = stopped
    written = sorted(p.name for p in (run_dir / "export").iterdir())
    assert written == ["policy_1024.stablehlo", "policy_512.stablehlo"]
    out = tmp_path / "cli.stablehlo"
    args = [str(run_dir), "--step", "1024", "--format", "stablehlo", "--out", str(out)]
    assert export_main(args) == 0
    # The same policy as the CLI's export of the checkpoint at that step: equal actions.
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    ours = jax.export.deserialize((run_dir / "export" / "policy_1024.stablehlo").read_bytes())
    cli = jax.export.deserialize(out.read_bytes())
    np.testing.assert_array_equal(ours.call(obs)[0], cli.call(obs)[0])
    early = jax.export.deserialize((run_dir / "export" / "policy_512.stablehlo").read_bytes())
    assert (np.asarray(early.call(obs)[0]) != np.asarray(ours.call(obs)[0])).any()


class _Event:
    def __init__(self, rows):
        self.rows = rows


def test_stop_when():
    stop = callbacks.resolve("stop_when:metric=loss,below=0.5")
    assert stop.on_chunk(_Event([{"loss": 1.0}, {"loss": 0.2}])) is None  # mean 0.6
    assert stop.on_chunk(_Event([{"loss": 0.6}, {"loss": 0.2}])) == "loss 0.4 <= 0.5"
    assert stop.on_chunk(_Event([{"loss": float("nan")}])) is None
    above = callbacks.resolve("stop_when:metric=eval_return,above=100")
    assert above.on_chunk(_Event([{"eval_return": 100.0}])) == "eval_return 100 >= 100"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nope", "unknown --callback 'nope'; registered: export, stop_when"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        (f"{__name__}:missing", f"module '{__name__}' has no 'missing'"),
        ("export:every=0", "every must be an integer >= 1, got 0"),
        ("export:every=10,format=tflite", "unknown format 'tflite'; valid: stablehlo, onnx"),
        ("export:interval=10", "unexpected keyword argument 'interval'"),
        ("stop_when:metric=loss", "stop_when needs above=X or below=X"),
        (f"{__name__}:TINY", "is neither callable nor has any of on_start"),
    ],
)
def test_bad_callback_exits_2_and_writes_nothing(tmp_path, capsys, spec, message):
    assert main([*TINY, "--logdir", str(tmp_path / "runs"), "--callback", spec]) == 2
    one_line_error(capsys, message)
    assert not (tmp_path / "runs").exists()


def test_a_run_is_restored_without_its_callbacks_modules(stopped, tmp_path, capsys):
    _, run_dir, _ = stopped
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    launch = yaml.safe_load((copy / "launch.yaml").read_text())
    launch["callbacks"] = ["gone_module_xyz:Callback"]
    (copy / "launch.yaml").write_text(yaml.safe_dump(launch))
    _, agent_state, _ = restore(copy)  # restoring needs no callback
    assert int(agent_state.step) == 1024
    before = sorted(p.name for p in copy.iterdir())
    assert main(["--resume", str(copy), "--steps", "2048"]) == 2  # training does
    one_line_error(capsys, "give --import gone_module_xyz")
    assert sorted(p.name for p in copy.iterdir()) == before
