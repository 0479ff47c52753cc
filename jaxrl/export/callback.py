"""``--callback export:every=N``: the greedy policy exported every ``N`` env steps while a
run trains (Emote's ``OnnxExporter(interval)``), by ``jaxrl.export``.

At the first chunk end past each multiple of ``every`` (as ``--checkpoint-every`` is
rounded to whole chunks), ``PeriodicExport`` writes
``RUN_DIR/export/policy_STEP.FORMAT`` (for a ``--seeds``/``--sweep`` run one file per
member, ``policy_STEP_mI.FORMAT``; for independent agents one per agent,
``policy_STEP_aP.FORMAT``), the file ``python -m jaxrl.export RUN --step STEP``
writes from the checkpoint of that step. Registered in ``jaxrl.experiment.callbacks``
by name, so that module does not import this one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxrl.types import ConfigError, take_member


class PeriodicExport:
    """``on_chunk`` exports the greedy policy every ``every`` env steps.

    Args:
      every: env steps between exports (>= 1).
      format: ``stablehlo`` or ``onnx`` (``jaxrl.export.FORMATS``).
      batch: the ONNX model's batch size (StableHLO's is symbolic).
    """

    def __init__(self, every: int, format: str = "onnx", batch: int = 1):
        from jaxrl.export import FORMATS

        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(f"--callback export: every must be an integer >= 1, got {every!r}")
        if format not in FORMATS:
            raise ConfigError(
                f"--callback export: unknown format '{format}'; valid: {', '.join(FORMATS)}"
            )
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ConfigError(f"--callback export: batch must be an integer >= 1, got {batch!r}")
        self.every, self.format, self.batch = every, format, batch
        self.written: list[Path] = []

    def on_chunk(self, event: Any) -> None:
        steps_per_chunk = event.setup.runner.layout.steps_per_chunk
        previous = event.step - steps_per_chunk
        if event.step // self.every > previous // self.every:
            self.export(event)

    def export(self, event: Any) -> list[Path]:
        """Writes the policy of ``event.state`` at ``event.step``; returns the paths."""
        from jaxrl import export
        from jaxrl.export.__main__ import _write_whole

        setup = event.setup
        members = range(len(setup.members)) if event.batched else [None]
        names = [a.name for a in setup.config.trained]
        paths = []
        for (label, agent, state), name in zip(
            setup.policies(event.agent_state), names, strict=True
        ):
            if name == "random":
                continue
            for member in members:
                agent_state = state if member is None else take_member(state, member)
                data = export.policy_file(
                    agent, agent_state, setup.env.spec, self.format, self.batch
                )
                parts = (label, "" if member is None else f"m{member}")
                suffix = "".join(f"_{part}" for part in parts if part)
                path = event.run_dir / "export" / f"policy_{event.step}{suffix}.{self.format}"
                _write_whole(path, data)
                paths.append(path)
        self.written += paths
        return paths
