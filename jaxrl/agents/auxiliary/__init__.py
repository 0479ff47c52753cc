"""Auxiliary learners attached to an agent's update (``base``; their options in
``options``): AMP and action symmetry, CURL, latent action priors, demonstrations."""
