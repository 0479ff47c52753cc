"""Faults in a run's checkpoints (issue 55): a checkpoint's arrays are saved with their
CRC-32 and checked on every restore, so garbled bytes fall back to the previous
checkpoint with one line (as a missing file does); a resume removes the unreadable
checkpoints it skipped and writes them again, so none holds a ``--keep`` slot; every
command that restores refuses a non-finite state with one line and exit code 2."""

import json
import shutil
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
import yaml

from jaxrl.checkpoint import restore
from jaxrl.evaluate import main as evaluate_main
from jaxrl.experiment.checkpoint import CHECKPOINT_DIR, CheckpointWriter, checkpoint_steps, load
from jaxrl.experiment.run import restore_checkpoint
from jaxrl.experiment.setup import build
from jaxrl.export.__main__ import main as export_main
from jaxrl.export_buffer import main as export_buffer_main
from jaxrl.train import main as train_main
from jaxrl.types import ConfigError
from tests.helpers import one_line_error, tiny_run, train_into

# The run the tests break (the ``trained_run`` fixture): the tiny DQN in chunks of 128 env
# steps, a checkpoint every 256, the newest two kept: checkpoints 768 and 1024.
TRAINED_RUN = tiny_run("--steps 1024 --run.log_every 128 --checkpoint-every 256 --keep 2")
# A warm start from it: the same program, one chunk.
WARM = tiny_run("--steps 128 --run.log_every 128")


def assert_same_tree(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b) and len(leaves_a) > 10
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def tree_bytes(path):
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def largest_file(run_dir, step):
    files = (p for p in (run_dir / CHECKPOINT_DIR / str(step) / "state").rglob("*") if p.is_file())
    return max(files, key=lambda p: p.stat().st_size)


def garble(run_dir, step):
    """Checkpoint ``step`` with up to 2,000 bytes of its largest parameter array written
    over with 0xFF (NaN as float32), stored back by Orbax: garbled bytes that read back
    without an error. (Orbax notices some others itself: a zstd frame that no longer
    decodes, a b-tree node whose CRC-32C fails; those were already unreadable.)"""
    state_dir = run_dir / CHECKPOINT_DIR / str(step) / "state"
    paths = json.loads((state_dir.parent / "meta" / "metadata").read_text())["paths"]
    with ocp.StandardCheckpointer() as checkpointer:
        leaves = {k: np.asarray(v) for k, v in checkpointer.restore(state_dir).items()}
    params = [k for k in leaves if paths[int(k)].startswith(".agent_state.params")]
    name = max(params, key=lambda k: leaves[k].nbytes)
    raw = leaves[name].copy().reshape(-1).view(np.uint8)
    raw[: min(2000, raw.size)] = 0xFF
    leaves[name] = raw.view(leaves[name].dtype).reshape(leaves[name].shape)
    shutil.rmtree(state_dir)
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(state_dir, leaves)


def delete(run_dir, step):
    largest_file(run_dir, step).unlink()


def broken_copy(trained_run, tmp_path, fault):
    broken = tmp_path / "broken"
    shutil.copytree(trained_run, broken)
    fault(broken, 1024)
    return broken


def test_saved_checksums_are_the_crc32_of_each_arrays_bytes(tmp_path):
    state = {
        "bool": jnp.array([True, False, True]),
        "bf16": jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3) / 7,
        "int": jnp.int32(-7),
        "float": jnp.linspace(0.0, 1.0, 5),
        "uint8": jnp.arange(250, 256, dtype=jnp.uint8),
        "empty": jnp.zeros((2, 0)),  # not stored, so no checksum
    }
    with CheckpointWriter(tmp_path, keep=1) as writer:
        writer.save(3, state, {})
    meta = json.loads((tmp_path / CHECKPOINT_DIR / "3" / "meta" / "metadata").read_text())
    leaves = jax.tree.leaves(state)
    want = {f"{i:05d}": zlib.crc32(np.asarray(x).tobytes()) for i, x in enumerate(leaves) if x.size}
    assert meta["crc32"] == want and len(want) == 5
    restored = load(tmp_path, jax.eval_shape(lambda: state)).state
    for got, want in zip(jax.tree.leaves(restored), leaves, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_garbled_bytes_are_found_by_every_restore_which_falls_back(trained_run, tmp_path, capsys):
    broken = broken_copy(trained_run, tmp_path, garble)
    with pytest.raises(ConfigError, match="checkpoint 1024 of .* does not match the checksum"):
        restore(broken, step=1024)
    _, state, _ = restore(broken)
    assert_same_tree(state, restore(trained_run, step=768)[1])
    assert restore_checkpoint(broken)[1].step == 768
    capsys.readouterr()
    # evaluate, export and --init-from say so and use checkpoint 768.
    assert evaluate_main([str(broken), "--episodes", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "checkpoint 1024 of" in out and "using checkpoint 768" in out
    assert "checkpoint 768," in out
    assert export_main([str(broken), "--format", "stablehlo"]) == 0
    assert "using checkpoint 768" in capsys.readouterr().out
    assert [p.name for p in (broken / "export").iterdir()] == ["policy_768.stablehlo"]
    code, (warm,) = train_into(tmp_path / "warm", *WARM, "--init-from", str(broken))
    assert code == 0 and yaml.safe_load((warm / "init_from.yaml").read_text())["step"] == 768
    # A resume from it, asked for: one line, exit code 2.
    capsys.readouterr()
    assert train_main(["--resume", str(broken), "--step", "1024"]) == 2
    one_line_error(capsys, "checkpoint 1024 of", "does not match the checksum")


@pytest.mark.parametrize("fault", [delete, garble], ids=["deleted_file", "garbled_bytes"])
def test_resume_rewrites_an_unreadable_checkpoint_that_holds_no_keep_slot(
    trained_run, tmp_path, monkeypatch, capsys, fault
):
    """Checkpoint 1024 unreadable, 768 restored: the resume removes 1024 and writes it
    again, bit for bit the straight run's; with a checkpoint every 128 steps and --keep 2,
    the unreadable one never holds one of the two slots (768 stays until 1024 is saved)."""
    broken = broken_copy(trained_run, tmp_path, fault)
    kept, save = [], CheckpointWriter.save

    def save_and_list(self, step, state, meta):
        save(self, step, state, meta)
        kept.append(checkpoint_steps(broken))

    monkeypatch.setattr(CheckpointWriter, "save", save_and_list)
    assert train_main(["--resume", str(broken), "--checkpoint-every", "128"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "resuming from checkpoint 768" in out and "removed unreadable checkpoint 1,024" in out
    assert kept == [[768, 896], [896, 1024]]
    setup, rewritten, skipped = restore_checkpoint(broken)
    assert rewritten.step == 1024 and not skipped
    assert_same_tree(rewritten.state.agent_state, restore(trained_run)[1])


def non_finite_copy(trained_run, tmp_path):
    """The run with checkpoint 1024 replaced by one whose parameters are NaN (a checkpoint
    written before the non-finite guard, or by a user's script), checksums intact."""
    run = tmp_path / "nan"
    shutil.copytree(trained_run, run)
    saved = load(run, build(run).saved_shape())
    agent_state = saved.state.agent_state
    params = jax.tree.map(lambda x: x * jnp.nan, agent_state.params)
    diverged = saved.state.replace(agent_state=agent_state.replace(params=params))
    shutil.rmtree(run / CHECKPOINT_DIR / "1024")
    with CheckpointWriter(run, keep=2) as writer:
        writer.save(1024, diverged, saved.meta)
    return run


def test_a_non_finite_checkpoint_is_refused_by_every_restoring_command(
    trained_run, tmp_path, capsys
):
    run = non_finite_copy(trained_run, tmp_path)
    saved = tree_bytes(run)
    commands = [
        (train_main, ["--resume", str(run), "--steps", "1280"]),
        (evaluate_main, [str(run), "--episodes", "1"]),
        (export_main, [str(run), "--format", "stablehlo"]),
        (export_buffer_main, [str(run), str(tmp_path / "buffer.npz")]),
    ]
    for main, argv in commands:
        assert main(argv) == 2, argv
        one_line_error(capsys, "checkpoint 1024 of", "non-finite", "other checkpoints: 768")
    assert tree_bytes(run) == saved and not (tmp_path / "buffer.npz").exists()
    # --init-from: refused before the new run directory is created.
    assert train_into(tmp_path / "warm", *WARM, "--init-from", str(run)) == (2, [])
    one_line_error(capsys, "checkpoint 1024 of", "non-finite")
    # An older checkpoint of the same run is still usable.
    assert evaluate_main([str(run), "--episodes", "1", "--step", "768"]) == 0


def test_a_checkpoint_saved_without_checksums_still_loads(trained_run, tmp_path):
    """Checkpoints written before checksums were saved load as they are, unverified."""
    old = tmp_path / "old"
    shutil.copytree(trained_run, old)
    meta_file = old / CHECKPOINT_DIR / "1024" / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    del meta["crc32"]
    meta_file.write_text(json.dumps(meta))
    setup, restored, skipped = restore_checkpoint(old)
    assert restored.step == 1024 and not skipped
    assert_same_tree(restored.state.agent_state, restore(trained_run)[1])
