"""Replay buffers as pure functions over fixed-size arrays, all implementing one protocol
(``base.ReplayBuffer``, sampling ``base.ReplaySample``):

* ``replay``: uniform, full transitions (``make_uniform_replay``);
* ``prioritized``: the same storage with prioritized sampling (``make_prioritized_replay``);
* ``sharded``: prioritized storage split over devices (``make_sharded_prioritized_replay``);
* ``compact``: frames stored once, stacks and n-step windows rebuilt at sample time,
  uniform or prioritized (``make_compact_replay``);
* ``sequence``: prioritized sequences of fixed length with overlap, R2D2's
  (``make_sequence_replay``);
* ``validity``: which items each can sample, as functions testable alone;
* ``sum_tree``: the jit-compatible sum tree under the prioritized samplers.
"""

from jaxrl.buffers.base import PriorityParams, ReplayBuffer, ReplaySample
from jaxrl.buffers.compact import CompactReplayState, make_compact_replay
from jaxrl.buffers.prioritized import PrioritizedReplayState, make_prioritized_replay
from jaxrl.buffers.replay import ReplayState, make_uniform_replay
from jaxrl.buffers.sequence import make_sequence_replay
from jaxrl.buffers.sharded import ShardedReplayState, make_sharded_prioritized_replay
from jaxrl.buffers.validity import compact_valid, window_valid

__all__ = [
    "CompactReplayState",
    "PrioritizedReplayState",
    "PriorityParams",
    "ReplayBuffer",
    "ReplaySample",
    "ReplayState",
    "ShardedReplayState",
    "compact_valid",
    "make_compact_replay",
    "make_prioritized_replay",
    "make_sequence_replay",
    "make_sharded_prioritized_replay",
    "make_uniform_replay",
    "window_valid",
]
