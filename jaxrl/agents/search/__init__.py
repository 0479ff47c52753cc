"""Search agents: AlphaZero (Silver et al. 2018) and Gumbel MuZero's search policy
(Danihelka et al. 2022) with DeepMind's ``mctx``, on the board games of ``envs.games``."""
