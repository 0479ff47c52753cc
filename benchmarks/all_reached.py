"""A run callback for the learning benchmarks: ends a seed or sweep run once every member's
greedy evaluation has reached a return (``run.stop_return`` alone ends only single runs).

    python -m jaxrl.train ... --seeds 3 --callback benchmarks.all_reached:AT_MINUS_200

(run from the repository root, so that ``benchmarks`` imports). Steps to the target per
member stay in the summary's ``first_solve_steps`` (with ``--run.stop_return``).
"""

from __future__ import annotations

import math
from typing import Any


class AllReached:
    """``on_chunk`` stops the run when, for every member (row), some evaluation so far had
    ``eval_return >= target``; members are keyed by their row's position."""

    def __init__(self, target: float):
        self.target = float(target)
        self.reached: set[int] = set()

    def on_chunk(self, event: Any) -> str | None:
        for i, row in enumerate(event.rows):
            value = row.get("eval_return")
            if value is not None and not math.isnan(value) and value >= self.target:
                self.reached.add(i)
        if event.rows and len(self.reached) == len(event.rows):
            return f"every member's evaluation reached {self.target:g}"
        return None

    def reset(self) -> None:
        """Forgets the members reached: call it between runs in one process (the module's
        instance is shared by every run that names it)."""
        self.reached.clear()


AT_MINUS_200 = AllReached(-200.0)  # an instance: the callback spec uses it as it is
