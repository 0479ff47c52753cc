"""Replay buffers as pure functions over fixed-size arrays."""

from jaxrl.buffers.replay import ReplayBuffer, ReplaySample, ReplayState, make_uniform_replay

__all__ = ["ReplayBuffer", "ReplaySample", "ReplayState", "make_uniform_replay"]
