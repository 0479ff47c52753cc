"""jaxrl: a JAX-first reinforcement-learning library.

Agents are pure ``init / act / update`` functions over immutable state pytrees; replay
buffers are fixed-size arrays; ``jaxrl.runners.make_train`` fuses environment stepping and
learning into one ``lax.scan`` program. See DESIGN.md for the contracts.
"""

from jaxrl import agents, envs, ops, runners, types

__version__ = "0.1.0"
__all__ = ["agents", "envs", "ops", "runners", "types"]
