"""The Q-learning family: one agent (``core``) of composable parts (value heads,
exploration, replay) and its recipes: DQN, Rainbow, QR-DQN, IQN, M-DQN, Ape-X, PQN and
tabular Q-learning."""
