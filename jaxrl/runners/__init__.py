"""Runners: the fused on-device training loop."""

from jaxrl.runners.scan import (
    RunConfig,
    Runner,
    RunnerState,
    make_evaluate,
    make_runner,
    make_train,
)

__all__ = ["RunConfig", "Runner", "RunnerState", "make_evaluate", "make_runner", "make_train"]
