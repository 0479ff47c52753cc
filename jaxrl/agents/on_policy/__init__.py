"""The on-policy actor-critic family: the skeleton (``core``), its rollout batches and
recurrent parts, and PPO, A2C, A3C and IMPALA."""
