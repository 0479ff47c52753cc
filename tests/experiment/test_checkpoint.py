"""Checkpoints: exact resume (2N straight == N, stop, resume, N more: same parameters,
replay buffer with its sum tree, and metrics, bit for bit), a save killed midway leaves a
resumable run, the last --keep checkpoints are kept, and a missing or corrupt checkpoint
is a one-line error with exit code 2 that changes nothing."""

import json
import shutil
import subprocess
import sys

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from jaxrl.checkpoint import restore
from jaxrl.experiment.checkpoint import CHECKPOINT_DIR, checkpoint_steps
from jaxrl.train import main
from jaxrl.types import ConfigError
from tests.helpers import one_line_error, tiny_run, train_run

# Rainbow with prioritized replay (a sum tree in the state), n-step, double and dueling;
# noisy nets and C51 off, which makes the program quicker to compile.
TINY_RAINBOW = tiny_run(
    "--agent rainbow --agent.noisy false --agent.distributional false --agent.buffer_size 256"
    " --agent.updates_per_rollout 2 --agent.target_update_period 64 --run.log_every 128"
)

WALL_CLOCK = ("time", "sps")


def rows(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in WALL_CLOCK} for line in lines]


def csv_rows(run_dir):
    lines = (run_dir / "metrics.csv").read_text().splitlines()
    header = lines[0].split(",")
    drop = [header.index(c) for c in WALL_CLOCK]
    return [[v for i, v in enumerate(line.split(",")) if i not in drop] for line in lines]


def train(logdir, *args):
    return train_run(logdir, *TINY_RAINBOW, *args)


def assert_same_tree(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b) and len(leaves_a) > 10
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """1024 env steps in one go, a checkpoint every 256 steps, the last 2 kept."""
    logdir = tmp_path_factory.mktemp("straight")
    return train(logdir, "--steps", "1024", "--checkpoint-every", "256", "--keep", "2")


def test_resume_is_exact(tmp_path, straight):
    half = train(tmp_path, "--steps", "512")
    assert checkpoint_steps(half) == [512]  # saved at the end only
    _, state_half, _ = restore(half)
    _, state_mid, _ = restore(straight, step=768)
    assert main(["--resume", str(half), "--steps", "1024"]) == 0
    _, resumed, config = restore(half)
    _, direct, _ = restore(straight)
    assert config.run.steps == 1024 and config.agent.option("prioritized")
    # Every array: params, target params, Adam state, replay buffer with its sum tree.
    assert_same_tree(resumed, direct)
    assert rows(half) == rows(straight) and len(rows(half)) == 8
    assert csv_rows(half) == csv_rows(straight)
    # --keep 2: only the newest two of the four checkpoints remain, and the halfway
    # states differ from the final ones (the test compares something that moved).
    assert checkpoint_steps(straight) == [768, 1024]
    changed = jax.tree.leaves(jax.tree.map(lambda x, y: bool((x != y).any()), state_mid, direct))
    assert any(changed)
    # The sum tree of prioritized replay holds priorities learned after the halfway point.
    tree_changed = jax.tree.map(lambda x, y: bool((x != y).any()), state_half.buffer.tree,
                                direct.buffer.tree)  # fmt: skip
    assert any(jax.tree.leaves(tree_changed))


def test_killed_save_leaves_a_resumable_run(tmp_path, straight, monkeypatch, capsys):
    calls = {"n": 0}
    original = ocp.JsonCheckpointHandler.async_save

    async def killed_on_third_save(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the arrays of step 768 are written, its metadata is not
            raise KeyboardInterrupt
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(ocp.JsonCheckpointHandler, "async_save", killed_on_third_save)
    logdir = tmp_path / "runs"
    assert main([*TINY_RAINBOW, "--logdir", str(logdir), "--steps", "1024",
                 "--checkpoint-every", "256"]) == 130  # fmt: skip
    monkeypatch.setattr(ocp.JsonCheckpointHandler, "async_save", original)
    (run_dir,) = logdir.iterdir()
    leftovers = [p.name for p in (run_dir / CHECKPOINT_DIR).iterdir() if "tmp" in p.name]
    assert leftovers and leftovers[0].startswith("768")
    assert checkpoint_steps(run_dir) == [256, 512]
    assert len(rows(run_dir)) == 6  # rows written after the last complete checkpoint ...
    capsys.readouterr()
    assert main(["--resume", str(run_dir)]) == 0
    assert "resuming at step 512" in " ".join(capsys.readouterr().out.split())
    assert rows(run_dir) == rows(straight)  # ... are cut and written again, once
    assert_same_tree(restore(run_dir)[1], restore(straight)[1])
    assert not [p for p in (run_dir / CHECKPOINT_DIR).iterdir() if "tmp" in p.name]


def tree_bytes(path):
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_missing_or_corrupt_checkpoint_is_one_line_exit_2(tmp_path, straight, capsys):
    def fails(argv, fragment):
        assert main(argv) == 2
        one_line_error(capsys, fragment)

    fails(["--resume", str(tmp_path / "nope")], "does not exist")
    empty = tmp_path / "empty"
    shutil.copytree(straight, empty)
    shutil.rmtree(empty / CHECKPOINT_DIR)
    fails(["--resume", str(empty)], "has no checkpoint")
    fails(["--resume", str(straight), "--agent.lr", "1"], "cannot be changed")

    # Every checkpoint unreadable: one line, nothing changed.
    corrupt = tmp_path / "corrupt"
    shutil.copytree(straight, corrupt)
    for step in ("768", "1024"):
        for path in (corrupt / CHECKPOINT_DIR / step / "state").rglob("*"):
            if path.is_file():
                path.write_bytes(b"garbage")
    saved = tree_bytes(corrupt)
    fails(["--resume", str(corrupt)], "no checkpoint of")
    assert tree_bytes(corrupt) == saved  # nothing the user had was changed
    with pytest.raises(ConfigError, match="checkpoint 1024 of .* is unreadable"):
        restore(corrupt, step=1024)
    with pytest.raises(ConfigError, match="no checkpoint at step 5; available: 768, 1024"):
        restore(straight, step=5)


def test_unreadable_newest_checkpoint_falls_back_and_says_so(tmp_path, straight, capsys):
    """A data file of the newest checkpoint removed: resume and evaluate use the newest
    readable one and say so; ``--step`` selects one; no asyncio traceback."""
    broken = tmp_path / "broken"
    shutil.copytree(straight, broken)
    state = broken / CHECKPOINT_DIR / "1024" / "state"
    data = [p for p in state.rglob("*") if p.is_file() and p.parent.name == "d"]  # array data
    max(data, key=lambda p: p.stat().st_size).unlink()
    _, state, _ = restore(broken)
    _, older, _ = restore(straight, step=768)
    assert_same_tree(state, older)
    # Resuming to 768 steps: the fallback is said, and the run is complete at 768.
    saved = tree_bytes(broken)
    assert main(["--resume", str(broken), "--steps", "768"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "checkpoint 1024 of" in out and "resuming from checkpoint 768" in out
    assert "nothing to do" in out and tree_bytes(broken) == saved
    assert main(["--resume", str(broken), "--step", "1024"]) == 2
    one_line_error(capsys, "checkpoint 1024 of")
    assert main(["--resume", str(straight), "--step", "768", "--steps", "512"]) == 2
    assert "below the 768 steps" in capsys.readouterr().err
    assert tree_bytes(broken) == saved
    # A whole process: one line, none of Orbax's abandoned reads printed at exit.
    argv = [sys.executable, "-m", "jaxrl.evaluate", str(broken), "--step", "1024"]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "is unreadable" in done.stderr


def test_restored_agent_acts(straight):
    agent, state, cfg = restore(straight)
    obs = jax.numpy.zeros((3, 4))
    greedy, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(0), False)
    assert greedy.shape == (3,) and cfg.agent.name == "rainbow"
    # Greedy actions do not depend on the key (eval epsilon 0 here).
    state = state.replace(hparams=state.hparams.replace(eval_epsilon=np.float32(0.0)))
    a, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(1), False)
    b, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(2), False)
    np.testing.assert_array_equal(a, b)


def test_host_env_run_resumes_its_learner_and_restarts_its_envs(tmp_path):
    """A Gymnasium host env's state lives outside JAX: its checkpoints hold the agent state
    (replay buffer included), key and chunk; a resume restores exactly those, restarts the
    envs, and goes on appending rows."""
    host = [a if a != "CartPole" else "gym:CartPole-v1" for a in TINY_RAINBOW]
    logdir = tmp_path / "runs"
    assert main([*host, "--logdir", str(logdir), "--steps", "256"]) == 0
    (run_dir,) = logdir.iterdir()
    assert checkpoint_steps(run_dir) == [256]
    _, saved, cfg = restore(run_dir)
    assert cfg.env.name == "gym:CartPole-v1"
    # What a resume starts from is the saved learner, bit for bit.
    from jaxrl.experiment.checkpoint import load
    from jaxrl.experiment.run import build
    from jaxrl.runners import LearnerCheckpoint

    setup = build(run_dir)
    restored = load(run_dir, setup.saved_shape())
    assert isinstance(restored.state, LearnerCheckpoint) and int(restored.state.chunk) == 2
    state = setup.resumed(restored.state)
    assert_same_tree(state.agent_state, saved)
    assert state.chunk == 2 and state.obs.shape == (4, 4)
    assert main(["--resume", str(run_dir), "--steps", "512"]) == 0
    assert checkpoint_steps(run_dir) == [256, 512]
    assert [r["step"] for r in rows(run_dir)] == [128, 256, 384, 512]


def test_arrays_of_zero_elements_round_trip(tmp_path):
    # MJX's Data holds arrays such as act [0]; Orbax refuses to write those, so they are
    # left out on save and rebuilt (shape, dtype) on load, in their place in the tree.
    from jaxrl.experiment.checkpoint import CheckpointWriter, load

    state = {
        "act": jax.numpy.zeros((0,), jax.numpy.float32),
        "qpos": jax.numpy.arange(3.0),
        "empty": jax.numpy.zeros((2, 0), jax.numpy.int32),
        "step": jax.numpy.asarray(7),
    }
    with CheckpointWriter(tmp_path, keep=1) as writer:
        writer.save(5, state, {})
    restored = load(tmp_path, jax.eval_shape(lambda: state)).state
    assert jax.tree.structure(restored) == jax.tree.structure(state)
    for got, want in zip(jax.tree.leaves(restored), jax.tree.leaves(state), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
