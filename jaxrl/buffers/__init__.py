"""Replay buffers as pure functions over fixed-size arrays.

* ``replay``: uniform, full transitions (``make_uniform_replay``);
* ``prioritized``: the same storage with prioritized sampling (``make_prioritized_replay``);
* ``compact``: frames stored once, stacks and n-step windows rebuilt at sample time,
  uniform or prioritized (``make_compact_replay``);
* ``sum_tree``: the jit-compatible sum tree under the prioritized samplers.
"""

from jaxrl.buffers.compact import CompactReplayBuffer, CompactSample, make_compact_replay
from jaxrl.buffers.prioritized import (
    PrioritizedReplayBuffer,
    PrioritizedSample,
    make_prioritized_replay,
)
from jaxrl.buffers.replay import ReplayBuffer, ReplaySample, ReplayState, make_uniform_replay

__all__ = [
    "CompactReplayBuffer",
    "CompactSample",
    "PrioritizedReplayBuffer",
    "PrioritizedSample",
    "ReplayBuffer",
    "ReplaySample",
    "ReplayState",
    "make_compact_replay",
    "make_prioritized_replay",
    "make_uniform_replay",
]
