"""Loggers named by ``--log``: a W&B run (offline) receives the run's config and every
metric row at its step; an unknown logger or W&B without the package is one line, exit
code 2, and nothing is written."""

import json
import struct
from pathlib import Path

import pytest

from jaxrl.experiment import logging as metrics_logging
from jaxrl.train import main as train
from jaxrl.types import ConfigError
from tests.helpers import one_line_error, tiny_run

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


def test_wandb_offline_run_holds_config_and_rows(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    assert train([*TINY, "--logdir", str(tmp_path), "--log", "tensorboard,wandb"]) == 0
    (run_dir,) = tmp_path.iterdir()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    (log_file,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    records = wandb_records(log_file)
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["agent"]["name"] == "dqn" and config["agent"]["hidden_sizes"] == [8]
    assert run.display_name == run_dir.name
    history = [
        {
            item.key or "/".join(item.nested_key): json.loads(item.value_json)
            for item in r.history.item
        }
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [h["_step"] for h in history] == [row["step"] for row in rows]
    for h, row in zip(history, rows, strict=True):
        for key, value in row.items():  # NaN (null in JSON) is not sent
            if key != "step":
                assert h.get(key) == pytest.approx(value) if value is not None else key not in h
    assert list(run_dir.glob("events.out.tfevents.*"))  # the composite's other logger


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
