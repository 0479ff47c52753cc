"""Loggers named by ``--log``, read back from TensorBoard's event files and W&B's offline
files: a ``--seeds 2`` run is one TensorBoard run and one W&B run (grouped) per member,
each with the member's hyperparameters (hparams plugin session, W&B config), every metric
row at its step under a grouped tag, the final evaluation and the summary; the progress
off a terminal is plain lines; an unknown logger, or W&B or TensorBoard asked for without
the package, is one line, exit code 2, and nothing is written."""

import contextlib
import io
import json
import math
import struct
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from jaxrl.experiment import logging as metrics_logging
from jaxrl.experiment import report
from jaxrl.experiment.loggers import member_name, scalars, tag
from jaxrl.experiment.report import ProgressBar
from jaxrl.train import main as train
from jaxrl.types import ConfigError
from tests.helpers import one_line_error, tensorboard_values, tiny_run

TINY = tiny_run("--num-envs 2 --steps 512 --run.rollout_len 8 --run.log_every 128")


def wandb_records(path: Path) -> list:
    """The records of a ``.wandb`` file: a 7-byte header (``:W&B``, magic, version), then
    32 KiB blocks of chunks ``[crc32 u32, length u16, type u8, data]`` (LevelDB's log
    format: type 1 a whole record, 2/3/4 its first/middle/last part)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, block, pos = path.read_bytes(), 32768, 7
    assert data[:4] == b":W&B"
    records, pending = [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    """A ``--seeds 2`` run logged to TensorBoard and to an offline W&B run, with what it
    printed (not to a terminal)."""
    pytest.importorskip("wandb")
    logdir = tmp_path_factory.mktemp("seeds")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("WANDB_MODE", "offline")
        patch.setenv("WANDB_SILENT", "true")
        argv = [*TINY, "--seeds", "2", "--logdir", str(logdir), "--log", "tensorboard,wandb"]
        assert train(argv) == 0
    (run_dir,) = logdir.iterdir()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    return run_dir, rows, summary, out.getvalue()


def hparams(run_dir: Path) -> tuple[dict, list[str], bool]:
    """The hparams plugin's session start values, its metrics' tags and whether the
    session ended, from the TensorBoard event files in ``run_dir``."""
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData

    values, metrics, ended = {}, [], False
    for _, value in tensorboard_values(run_dir):
        if value.metadata.plugin_data.plugin_name != "hparams":
            continue
        data = HParamsPluginData.FromString(value.metadata.plugin_data.content)
        kind = data.WhichOneof("data")
        if kind == "session_start_info":
            for key, v in data.session_start_info.hparams.items():
                values[key] = getattr(v, v.WhichOneof("kind"))
        elif kind == "experiment":
            metrics = [m.name.tag for m in data.experiment.metric_infos]
        ended |= kind == "session_end_info"
    return values, metrics, ended


def test_tags_are_grouped_and_metrics_files_keep_their_keys():
    assert [tag(k) for k in ("episode_return", "episodes", "epsilon", "q_mean")] == [
        "train/episode_return",
        "train/episodes",
        "train/epsilon",
        "train/q_mean",
    ]
    assert [tag(k) for k in ("eval_return", "loss", "critic_loss", "sps", "time")] == [
        "eval/return",
        "loss/loss",
        "loss/critic_loss",
        "perf/sps",
        "perf/time",
    ]
    assert tag("custom/x") == "custom/x"  # a callback's own group is kept
    member = {"seed": 1, "agent.lr": 0.01}
    row = {"step": 8, "seed": 1, "agent.lr": 0.01, "loss": 0.5, "eval_return": math.nan}
    assert scalars(row, member) == {"loss/loss": 0.5}  # hyperparameters and NaN are not sent
    assert member_name(member) == "seed1_lr=0.01"


def test_one_tensorboard_run_per_member_with_grouped_tags_hparams_and_final(seeds_run):
    run_dir, rows, summary, _ = seeds_run
    assert {"seed", "episode_return", "eval_return", "loss", "sps"} <= set(rows[0])  # plain
    for b, seed in enumerate((0, 1)):
        member_rows = [r for r in rows if r["seed"] == seed]
        logged = {}
        for step, value in tensorboard_values(run_dir / f"seed{seed}"):
            if value.HasField("simple_value"):
                logged.setdefault(value.tag, []).append((step, value.simple_value))
        for key in ("episode_return", "eval_return", "loss", "sps", "epsilon"):
            expected = [
                (r["step"], pytest.approx(r[key], rel=1e-6))
                for r in member_rows
                if r[key] is not None  # NaN is not sent
            ]
            assert logged[tag(key)] == expected, key
        assert not {"seed", "train/seed", "episode_return"} & set(logged)
        final = summary["final_eval_returns"][b]
        assert logged["eval/final_return"] == [(512, pytest.approx(final, rel=1e-6))]
        values, metrics, ended = hparams(run_dir / f"seed{seed}")
        assert values["run.seed"] == seed and values["agent.name"] == "dqn"
        assert values["agent.hidden_sizes"] == "[8]" and values["env.num_envs"] == 2
        assert "eval/final_return" in metrics and ended
    experiment = {v.tag: v.simple_value for _, v in tensorboard_values(run_dir)}
    assert experiment["summary/final_iqm"] == pytest.approx(summary["final_iqm"], rel=1e-6)
    assert experiment["summary/steps"] == 512


def test_one_wandb_run_per_member_grouped_with_config_rows_and_summary(seeds_run):
    run_dir, rows, summary, _ = seeds_run
    files = sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 2
    seen = set()
    for log_file in files:
        records = wandb_records(log_file)
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        config = {item.key: json.loads(item.value_json) for item in run.config.update}
        seed = config["run"]["seed"]
        seen.add(seed)
        assert run.run_group == run_dir.name and run.display_name == f"{run_dir.name}/seed{seed}"
        assert config["agent"]["name"] == "dqn" and config["agent"]["hidden_sizes"] == [8]
        history = [
            items(r.history.item) for r in records if r.WhichOneof("record_type") == "history"
        ]
        member_rows = [r for r in rows if r["seed"] == seed]
        assert [h["_step"] for h in history] == [r["step"] for r in member_rows]
        for h, row in zip(history, member_rows, strict=True):
            for key, value in row.items():  # NaN (null in JSON) and the member's seed not sent
                if key not in ("step", "seed"):
                    assert (
                        h.get(tag(key)) == pytest.approx(value)
                        if value is not None
                        else tag(key) not in h
                    )
        ends = {}
        for r in records:
            if r.WhichOneof("record_type") == "summary":
                ends.update(items(r.summary.update))
        assert ends["eval/final_return"] == pytest.approx(summary["final_eval_returns"][seed])
        assert ends["summary/final_iqm"] == pytest.approx(summary["final_iqm"])
    assert seen == {0, 1}


def items(entries) -> dict:
    """``{key: value}`` of a W&B history or summary record's items."""
    return {e.key or "/".join(e.nested_key): json.loads(e.value_json) for e in entries}


def test_progress_off_a_terminal_is_plain_lines_and_says_compiling(seeds_run):
    *_, out = seeds_run
    lines = out.splitlines()
    assert lines[0] == "compiling the training program ..."
    assert lines[1].startswith("compiled the training program in ")
    progress = [line for line in lines if line.startswith("step ")]
    # the first chunk's line, then one every PLAIN_EVERY seconds (none in a tiny run on an
    # idle machine) and the last step's
    steps = [line.split()[1] for line in progress]
    assert steps[0] == "128/512" and steps[-1] == "512/512"
    assert set(steps) <= {"128/512", "256/512", "384/512", "512/512"}
    assert "(100%)" in progress[-1] and "compiling the evaluation program ..." in lines


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=200), out


def test_progress_bar_lines_every_interval_and_compiling_label():
    console, out = plain_console()
    with ProgressBar(console, total=400, completed=100, every=0.0) as bar:
        bar.update(200, 1234.4, math.nan, 9.5)
        bar.update(300, 1000.0, 20.25, math.nan)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("step 200/400 (50%)  1,234 sps  return -  eval 9.5  ETA ")
    assert lines[1].startswith("step 300/400 (75%)  1,000 sps  return 20.2  eval -  ETA ")
    # the ETA from this process's pace: 200 steps in 10 s, 100 to go
    assert bar.line(300, 1.0, math.nan, math.nan, elapsed=10.0).endswith("ETA 0:00:05")
    console, out = plain_console()
    with ProgressBar(console, total=400, completed=0, every=1e9) as bar:
        for steps in (100, 200, 300, 400):
            bar.update(steps, 1.0, math.nan, math.nan)
    assert [line.split()[1] for line in out.getvalue().splitlines()] == ["100/400", "400/400"]
    assert ProgressBar(console, 400, 0, compiling=True).label == "compiling"
    assert ProgressBar(console, 400, 0).label == "training"
    console, out = plain_console()
    with report.compiling(console, "x"):
        assert out.getvalue() == "compiling x ...\n"
    assert out.getvalue().splitlines()[1].startswith("compiled x in ")


def test_wandb_asked_for_without_the_package_is_one_line_and_writes_nothing(
    tmp_path, capsys, monkeypatch
):
    real = metrics_logging.importlib.util.find_spec
    monkeypatch.setattr(
        metrics_logging.importlib.util,
        "find_spec",
        lambda name: None if name == "wandb" else real(name),
    )
    assert train([*TINY, "--logdir", str(tmp_path), "--log", "tensorboard,wandb"]) == 2
    one_line_error(capsys, "--log wandb needs wandb: pip install 'jaxrl[wandb]'")
    assert not list(tmp_path.iterdir())


def test_unknown_logger_is_refused_before_anything_is_written(tmp_path, capsys):
    assert train([*TINY, "--logdir", str(tmp_path), "--log", "wandb,mlflow"]) == 2
    one_line_error(capsys, "unknown logger 'mlflow'", "tensorboard")
    assert not list(tmp_path.iterdir())


def test_wandb_without_the_package_is_one_line(monkeypatch):
    real = metrics_logging.importlib.util.find_spec
    monkeypatch.setattr(
        metrics_logging.importlib.util,
        "find_spec",
        lambda name: None if name == "wandb" else real(name),
    )
    with pytest.raises(ConfigError, match=r"pip install 'jaxrl\[wandb\]'"):
        metrics_logging.check_loggers(["wandb"])
    assert metrics_logging.check_loggers(["tensorboard"]) == ["tensorboard"]


def test_log_tensorboard_without_the_package_is_one_line_and_writes_nothing(
    tmp_path, capsys, monkeypatch
):
    """Issue 55: ``--log tensorboard`` without tensorboardX wrote no event files and said
    nothing; the default (no ``--log``) still skips it silently."""
    real = metrics_logging.importlib.util.find_spec
    monkeypatch.setattr(
        metrics_logging.importlib.util,
        "find_spec",
        lambda name: None if name == "tensorboardX" else real(name),
    )
    assert train([*TINY, "--logdir", str(tmp_path), "--log", "tensorboard"]) == 2
    one_line_error(capsys, "--log tensorboard needs tensorboardX: pip install tensorboardX")
    assert not list(tmp_path.iterdir())
    assert metrics_logging.check_loggers(["tensorboard"]) == ["tensorboard"]
