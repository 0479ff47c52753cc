"""jaxrl: a JAX-first reinforcement-learning library.

Agents are pure ``init / act / update`` functions over immutable state pytrees; replay
buffers are fixed-size arrays; ``jaxrl.runners.make_train`` fuses environment stepping and
learning into one ``lax.scan`` program. The contracts: ``docs/concepts/contracts.md``.
"""

from jaxrl import agents, envs, ops, runners, types

__version__ = "0.1.0"
__all__ = ["agents", "envs", "ops", "runners", "types"]


def __getattr__(name: str):
    """``jaxrl.checkpoint`` (``jaxrl.checkpoint.restore(run_dir)``) without importing it
    first: it is imported on first use, as it pulls in Orbax and the experiment driver."""
    if name == "checkpoint":
        import importlib

        return importlib.import_module("jaxrl.checkpoint")
    raise AttributeError(f"module 'jaxrl' has no attribute '{name}'")
