"""The driver's built-in callbacks (experiment/recorders.py) on fakes, no run: the order
``Callbacks`` calls them in beside a user's (experiment/callbacks.py's contract), the
checkpointer's periodic and final saves, and what the metrics log writes and counts."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from jaxrl.experiment import callbacks
from jaxrl.experiment.callbacks import Callbacks, Event
from jaxrl.experiment.recorders import Checkpointer, MetricsLog

ORDER: list[str] = []


class _Named:
    def __init__(self, name):
        self.name = name

    def on_start(self, event):
        ORDER.append(f"{self.name}.start")

    def on_chunk(self, event):
        ORDER.append(f"{self.name}.chunk")

    def on_end(self, event):
        ORDER.append(f"{self.name}.end")


def _event(rows=(), step=0, chunk=0):
    return Event(step, chunk, 4096, list(rows), None, Path("."), None)


def test_builtins_run_first_at_start_and_end_and_last_after_a_chunk(monkeypatch):
    monkeypatch.setitem(callbacks._REGISTRY, "_named_user", _Named)  # gone after the test
    ORDER.clear()
    calls = Callbacks(["_named_user:name=user"], [_Named("log"), _Named("ckpt")])
    event = _event()
    calls.start(event)
    calls.chunk(event)
    calls.end(event)
    assert ORDER == [
        "log.start", "ckpt.start", "user.start",
        "user.chunk", "log.chunk", "ckpt.chunk",
        "log.end", "ckpt.end", "user.end",
    ]  # fmt: skip


class _Saver:
    def __init__(self):
        self.saved = []

    def save(self, step, state, meta):
        self.saved.append((step, state, meta))


def test_checkpointer_saves_past_each_multiple_and_once_at_the_end():
    saver, now = _Saver(), {"steps": 0}
    ckpt = Checkpointer(
        saver, 500, lambda s: ("saved", s), lambda: {"at": now["steps"]}, lambda: now["steps"]
    )
    event = _event()
    ckpt.on_start(event)
    seen = []
    for steps in (256, 512, 768, 1024, 1280):
        now["steps"] = steps
        event.state = steps
        ckpt.on_chunk(event)
        seen.append(event.checkpoint_step)
    assert [s for s, _, _ in saver.saved] == [512, 1024]  # the first chunk end past 500, 1000
    assert saver.saved[0][1:] == (("saved", 512), {"at": 512})
    assert seen == [None, 512, 512, 1024, 1024]
    ckpt.on_end(event)  # 1280 is not saved yet: the final checkpoint
    ckpt.on_end(event)  # saved: nothing more
    assert [s for s, _, _ in saver.saved] == [512, 1024, 1280]
    assert event.checkpoint_step == 1280


def test_checkpointer_every_0_saves_only_at_the_end_and_not_a_resumed_step_again():
    saver = _Saver()
    ckpt = Checkpointer(saver, 0, lambda s: s, dict, lambda: 2048, saved_step=2048)
    event = _event()
    ckpt.on_chunk(event)
    ckpt.on_end(event)  # resumed from 2048 and no chunk ran: nothing to save
    assert saver.saved == []


class _Writer:
    def __init__(self):
        self.rows, self.hists = [], []

    def write(self, row, member=0):
        self.rows.append((member, dict(row)))

    def histograms(self, values, step):
        self.hists.append((sorted(values), step))


def test_metrics_log_writes_rows_as_their_members_counts_them_and_histograms_on_eval():
    writer, position = _Writer(), SimpleNamespace(rows=3)
    collected = []

    def histograms(agent_state, key):
        collected.append(np.asarray(key).tolist())
        return {"q_values": np.zeros(2)}

    log = MetricsLog(writer, position, batched=True, histograms=histograms)
    rows = [
        {"step": 8, "seed": 0, "eval_return": math.nan},
        {"step": 8, "seed": 1, "eval_return": 1.0},
    ]
    event = _event(rows, step=8, chunk=2)
    event.state = SimpleNamespace(agent_state=None)
    log.on_chunk(event)  # one member did not evaluate: the mean is NaN, no histograms
    assert [(b, row["seed"]) for b, row in writer.rows] == [(0, 0), (1, 1)]
    assert position.rows == 5 and writer.hists == []
    rows[0]["eval_return"] = 2.0
    log.on_chunk(event)
    assert position.rows == 7
    assert writer.hists == [(["eval/q_values"], 8)] and len(collected) == 1
