"""The off-policy actor-critic family: the skeleton SAC, TD3 and DDPG share (``core``), its
optional parts, MBPO and Ape-X DDPG."""
