"""Flax Linen modules: torsos and heads that agents compose, and noisy layers."""

from jaxrl.networks.heads import CategoricalHead, DuelingCategoricalHead, DuelingHead, QHead
from jaxrl.networks.noisy import NoisyLinear, dense, factorized_noise
from jaxrl.networks.torsos import MLP, MinAtarCNN, NatureCNN, QNetwork

__all__ = [
    "MLP",
    "MinAtarCNN",
    "NatureCNN",
    "CategoricalHead",
    "DuelingCategoricalHead",
    "DuelingHead",
    "NoisyLinear",
    "QHead",
    "QNetwork",
    "dense",
    "factorized_noise",
]
