"""Runners: the fused on-device training loop (scan.py) and the host loop (host.py)."""

from jaxrl.runners.host import HostRunnerState, make_host_runner
from jaxrl.runners.scan import (
    RunConfig,
    Runner,
    RunnerState,
    make_evaluate,
    make_runner,
    make_train,
)

__all__ = [
    "HostRunnerState",
    "RunConfig",
    "Runner",
    "RunnerState",
    "make_evaluate",
    "make_host_runner",
    "make_runner",
    "make_train",
]
