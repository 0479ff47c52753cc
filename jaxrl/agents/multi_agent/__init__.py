"""Learners of several players: MADDPG and independent per-player learners (IPPO)."""
