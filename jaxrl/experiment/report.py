"""What a run reports: metrics rows per member, the progress bar, and the ``Summary``
written to ``summary.yaml`` and printed as a table at the end."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from jaxrl.experiment.logging import aggregate


@dataclasses.dataclass
class Summary:
    run_dir: Path
    steps: int
    compile_time: float
    run_time: float
    sps: float
    final_eval_return: float  # the mean over members for seed and sweep runs
    best_eval_return: float  # NaN when no evaluation ran during training
    first_solved_time: float | None  # wall seconds (compile included) to reach stop_return
    solved: bool
    final_eval_returns: list[float] = dataclasses.field(default_factory=list)  # per member


def fmt(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.1f}"


def nan_if_none(value: Any) -> float:
    return math.nan if value is None else float(value)


def member_rows(
    metrics: dict[str, np.ndarray], members: Sequence[dict[str, Any]], batched: bool
) -> list[dict[str, Any]]:
    """One metrics row per member (one row for a single run), with the member's seed and
    swept values as columns of a batched run's rows."""
    if not batched:
        return [aggregate(metrics)]
    rows = []
    for b, member in enumerate(members):
        row = aggregate({k: v[b] for k, v in metrics.items()})
        rows.append({**row, **member})
    return rows


def tag_prefix(row: dict[str, Any], batched: bool) -> str:
    """The TensorBoard tag prefix of a member's row: ``seed1/lr=0.001/``."""
    prefix = f"seed{row['seed']}/" if batched else ""
    return prefix + "".join(f"{k}={v:g}/" for k, v in row.items() if k.startswith("agent."))


def mean_eval(rows: Sequence[dict[str, Any]]) -> float:
    """The evaluation return over members (NaN unless every member evaluated)."""
    evals = [r["eval_return"] for r in rows]
    return math.nan if any(map(math.isnan, evals)) else float(np.mean(evals))


def mean_return(rows: Sequence[dict[str, Any]]) -> float:
    """The training episodes' return over members that finished one (NaN if none did)."""
    returns = [r["episode_return"] for r in rows if not math.isnan(r["episode_return"])]
    return float(np.mean(returns)) if returns else math.nan


class ProgressBar:
    """The rich progress line: env steps, steps per second, return and evaluation."""

    def __init__(self, console: Console, total: int, completed: int):
        self.progress = Progress(
            BarColumn(bar_width=12),
            MofNCompleteColumn(),
            TextColumn(
                "{task.fields[sps]} sps  return {task.fields[ret]}  eval {task.fields[eval]}"
            ),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self.total, self.completed = total, completed

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        self.task = self.progress.add_task(
            "training", total=self.total, completed=self.completed, sps="-", ret="-", eval="-"
        )
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, steps: int, sps: float, ret: float, eval_return: float) -> None:
        self.progress.update(
            self.task, completed=steps, sps=f"{sps:,.0f}", ret=fmt(ret), eval=fmt(eval_return)
        )


def write_summary(summary: Summary, run_dir: Path) -> None:
    data = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(summary).items()}
    data = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in data.items()}
    (run_dir / "summary.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def print_summary(
    summary: Summary,
    members: Sequence[dict[str, Any]],
    batched: bool,
    eval_episodes: int,
    stop_return: float | None,
    console: Console,
) -> None:
    table = Table(title="summary", show_header=False)
    table.add_row("env steps", f"{summary.steps:,}" + (" per member" if batched else ""))
    table.add_row("compile time", f"{summary.compile_time:.1f} s")
    table.add_row("run time", f"{summary.run_time:.1f} s ({summary.sps:,.0f} steps/s)")
    table.add_row("best evaluation", fmt(summary.best_eval_return))
    table.add_row(f"final evaluation ({eval_episodes} episodes)", fmt(summary.final_eval_return))
    if batched:
        for member, final in zip(members, summary.final_eval_returns, strict=True):
            name = ", ".join(f"{k} {v:g}" for k, v in member.items())
            table.add_row(f"  {name}", fmt(final))
    if stop_return is not None and not batched:
        solved = f"yes, after {summary.first_solved_time:.1f} s" if summary.solved else "no"
        table.add_row(f"reached {stop_return:g}", solved)
    table.add_row("run directory", str(summary.run_dir))
    console.print(table)
