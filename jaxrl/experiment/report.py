"""What a run reports: metrics rows per member, the progress bar, and the ``Summary``
written to ``summary.yaml`` and printed as a table at the end.

The summary tells what happened to the run as a whole: the final greedy evaluation (at
least ``FINAL_EPISODES`` episodes per member, of the policy the last checkpoint holds),
each member's first env step at which an evaluation reached ``run.stop_return`` (the
target), and for a seed run the interquartile mean of the members' final returns with its
95% stratified-bootstrap confidence interval and the fraction of members whose final
return is at or above the target (Agarwal et al. 2021; ``jaxrl.stats``). A sweep gives
these per configuration (the seeds of one point of the grid), never pooled over
configurations. A single run that stopped at the target says at which evaluation it
stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import math
import time
from collections.abc import Iterator, Sequence
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

from jaxrl import stats
from jaxrl.experiment.logging import aggregate

FINAL_EPISODES = 20  # at least this many final evaluation episodes per member


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
    final_eval_episodes: int = 0  # episodes per member in the final evaluation
    target: float | None = None  # run.stop_return
    first_solve_steps: list[int | None] = dataclasses.field(default_factory=list)  # per member
    stopped_at_step: int | None = None  # a single run stopped at this evaluation's step ...
    stopped_at_return: float | None = None  # ... whose return reached the target
    final_iqm: float | None = None  # seed runs: IQM of the members' final returns
    final_iqm_ci: list[float] | None = None  # its 95% stratified-bootstrap CI [lower, upper]
    fraction_at_target: float | None = None  # members whose final return >= target
    # sweeps, instead of the three above: one ``ConfigStats.asdict()`` per point of the grid
    configs: list[dict[str, Any]] | None = None
    stopped_by: str | None = None  # "SPEC: reason" of the callback that ended the run early


@dataclasses.dataclass
class ConfigStats:
    """The final returns of one configuration's seeds: their IQM with its 95%
    stratified-bootstrap CI (one task, the seeds as runs) and the fraction at the target."""

    values: dict[str, float]  # the swept values, {"agent.lr": 0.001}; {} for a seed run
    seeds: list[int]
    final_iqm: float
    final_iqm_ci: list[float]
    fraction_at_target: float | None

    def label(self) -> str:
        return ", ".join(f"{k} {v:g}" for k, v in self.values.items())


def config_stats(
    finals: Sequence[float], members: Sequence[dict[str, Any]], target: float | None
) -> list[ConfigStats]:
    """One ``ConfigStats`` per configuration (the members' values but the seed), in the
    members' order: a seed run has one, a sweep one per point of its grid."""
    groups: dict[tuple, list[int]] = {}
    for b, member in enumerate(members):
        groups.setdefault(tuple((k, v) for k, v in member.items() if k != "seed"), []).append(b)
    out = []
    for key, indices in groups.items():
        scores = np.asarray([finals[b] for b in indices], np.float64)
        estimate = stats.interval_estimate(scores)
        at_target = None if target is None else float(np.mean(scores >= target))
        out.append(
            ConfigStats(
                values=dict(key),
                seeds=[members[b].get("seed", 0) for b in indices],
                final_iqm=float(estimate.point),
                final_iqm_ci=[float(estimate.lower), float(estimate.upper)],
                fraction_at_target=at_target,
            )
        )
    return out


def across_members(summary: Summary, members: Sequence[dict[str, Any]]) -> Summary:
    """``summary`` with the IQM, its 95% CI and the fraction at the target of the members'
    ``final_eval_returns``: of a seed run's members, or per configuration (``configs``) of
    a sweep's, never pooled over configurations."""
    per_config = config_stats(summary.final_eval_returns, members, summary.target)
    if len(per_config) > 1:
        return dataclasses.replace(summary, configs=[dataclasses.asdict(c) for c in per_config])
    (only,) = per_config
    return dataclasses.replace(
        summary,
        final_iqm=only.final_iqm,
        final_iqm_ci=only.final_iqm_ci,
        fraction_at_target=only.fraction_at_target,
    )


def first_solves(
    rows: Sequence[dict[str, Any]], target: float | None, found: list[int | None]
) -> list[int | None]:
    """Each member's first step whose evaluation reached ``target``: ``found`` (one entry
    per row, None where not yet) updated with this chunk's ``rows``."""
    if target is None:
        return found
    return [
        row["step"] if old is None and row["eval_return"] >= target else old
        for row, old in zip(rows, found, strict=True)
    ]


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


def mean_eval(rows: Sequence[dict[str, Any]]) -> float:
    """The evaluation return over members (NaN unless every member evaluated)."""
    evals = [r["eval_return"] for r in rows]
    return math.nan if any(map(math.isnan, evals)) else float(np.mean(evals))


def mean_return(rows: Sequence[dict[str, Any]]) -> float:
    """The training episodes' return over members that finished one (NaN if none did)."""
    returns = [r["episode_return"] for r in rows if not math.isnan(r["episode_return"])]
    return float(np.mean(returns)) if returns else math.nan


PLAIN_EVERY = 30.0  # seconds between the plain progress lines of a non-terminal console


@contextlib.contextmanager
def compiling(console: Console, what: str) -> Iterator[None]:
    """Says ``compiling WHAT`` while the block runs: a transient status line on a
    terminal; elsewhere a plain line before and ``compiled WHAT in S s`` after."""
    if console.is_terminal:
        with console.status(f"compiling {what}"):
            yield
        return
    console.print(f"compiling {what} ...")
    start = time.perf_counter()
    yield
    console.print(f"compiled {what} in {time.perf_counter() - start:.1f} s")


class ProgressBar:
    """The progress of a run: env steps, steps per second, return, evaluation, ETA.

    On a terminal, rich's live line, labelled ``compiling`` until the first chunk where
    ``compiling`` (a runner that compiles as its first chunk runs, ``Runner.jittable``
    False), then ``training``. Elsewhere (a batch job's log, a pipe), plain lines
    (``line``): one after the first chunk, then one whenever ``every`` seconds have
    passed since the last, and one at the last step.
    """

    def __init__(
        self,
        console: Console,
        total: int,
        completed: int,
        compiling: bool = False,
        every: float = PLAIN_EVERY,
    ):
        self.console, self.total, self.completed = console, total, completed
        self.label = "compiling" if compiling else "training"
        self.every, self.live = every, console.is_terminal
        self.last_line: float | None = None
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=12),
            MofNCompleteColumn(),
            TextColumn(
                "{task.fields[sps]} sps  return {task.fields[ret]}  eval {task.fields[eval]}"
            ),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )

    def __enter__(self) -> ProgressBar:
        self.start = time.perf_counter()
        if self.live:
            self.progress.__enter__()
        self.task = self.progress.add_task(
            self.label, total=self.total, completed=self.completed, sps="-", ret="-", eval="-"
        )
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self.progress.__exit__(*exc)

    def update(self, steps: int, sps: float, ret: float, eval_return: float) -> None:
        self.progress.update(
            self.task,
            description="training",
            completed=steps,
            sps=f"{sps:,.0f}",
            ret=fmt(ret),
            eval=fmt(eval_return),
        )
        now = time.perf_counter()
        due = self.last_line is None or now - self.last_line >= self.every
        if not self.live and (due or steps >= self.total):
            self.last_line = now
            self.console.print(self.line(steps, sps, ret, eval_return, now - self.start))

    def line(self, steps: int, sps: float, ret: float, eval_return: float, elapsed: float) -> str:
        """``step 1,024/4,096 (25%)  12,345 sps  return 21.3  eval -  ETA 0:00:30``: the
        ETA from this process's pace (``-`` before any step)."""
        done = steps - self.completed
        left = elapsed * (self.total - steps) / done if done > 0 else math.nan
        eta = "-" if math.isnan(left) else str(datetime.timedelta(seconds=round(left)))
        percent = 100 * steps // max(self.total, 1)
        return (
            f"step {steps:,}/{self.total:,} ({percent}%)  {sps:,.0f} sps  return {fmt(ret)}  "
            f"eval {fmt(eval_return)}  ETA {eta}"
        )


def summary_dict(summary: Summary) -> dict[str, Any]:
    """``summary`` as ``summary.yaml`` holds it (paths as strings, NaN as None)."""
    data = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(summary).items()}
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in data.items()}


def write_summary(summary: Summary, run_dir: Path) -> None:
    data = summary_dict(summary)
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
    table.add_row(f"best evaluation ({eval_episodes} episodes)", fmt(summary.best_eval_return))
    episodes = summary.final_eval_episodes or eval_episodes
    per = " per member" if batched else ""
    table.add_row(f"final evaluation ({episodes} episodes{per})", fmt(summary.final_eval_return))
    target = stop_return
    if batched:
        for row in member_lines(summary, members, target):
            table.add_row(*row)
    if batched:
        for row in iqm_lines(summary, len(members), target):
            table.add_row(*row)
    if target is not None and not batched:
        if summary.stopped_at_step is not None:
            solved = (
                f"yes: stopped at the evaluation of step {summary.stopped_at_step:,} "
                f"({fmt(summary.stopped_at_return)}, {eval_episodes} episodes), "
                f"{summary.first_solved_time:.1f} s in; the final evaluation above is "
                "of the policy saved there"
            )
        else:
            solved = "no"
        table.add_row(f"reached {target:g}", solved)
    if summary.stopped_by is not None:
        table.add_row("stopped by callback", summary.stopped_by)
    table.add_row("run directory", str(summary.run_dir))
    console.print(table)


def iqm_lines(summary: Summary, members: int, target: float | None) -> list[tuple[str, str]]:
    """The IQM of the final returns with its CI, and how many reached the target: of the
    members of a seed run, or of each configuration's seeds in a sweep."""
    if summary.configs is None:
        if summary.final_iqm is None:
            return []
        groups = [("", summary.final_iqm, summary.final_iqm_ci, summary.fraction_at_target)]
        of = "members"
    else:
        groups = [
            (
                ConfigStats(**c).label() + ": ",
                c["final_iqm"],
                c["final_iqm_ci"],
                c["fraction_at_target"],
            )
            for c in summary.configs
        ]
        members, of = members // len(groups), "seeds"
    lines = []
    for name, point, ci, at_target in groups:
        low, high = ci or (math.nan, math.nan)
        lines.append((f"{name}final IQM [95% CI]", f"{fmt(point)} [{fmt(low)}, {fmt(high)}]"))
        if at_target is not None and target is not None:
            count = round(at_target * members)
            lines.append((f"{name}final return >= {target:g}", f"{count} of {members} {of}"))
    return lines


def member_lines(
    summary: Summary, members: Sequence[dict[str, Any]], target: float | None
) -> list[tuple[str, str]]:
    """One summary line per member: its final return and its first step at the target."""
    lines = []
    solves = summary.first_solve_steps or [None] * len(members)
    for member, final, step in zip(members, summary.final_eval_returns, solves, strict=True):
        name = ", ".join(f"{k} {v:g}" for k, v in member.items())
        value = fmt(final)
        if target is not None:
            value += f"  (first >= {target:g}: " + ("never" if step is None else f"step {step:,}")
            value += ")"
        lines.append((f"  {name}", value))
    return lines
