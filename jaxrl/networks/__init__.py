"""Flax Linen modules: torsos and heads that agents compose, and noisy layers."""

from jaxrl.networks.heads import CategoricalHead, DuelingCategoricalHead, DuelingHead, QHead
from jaxrl.networks.noisy import NoisyLinear, dense, factorized_noise
from jaxrl.networks.policies import ActorCritic
from jaxrl.networks.torsos import (
    MLP,
    TORSOS,
    ImpalaCNN,
    MinAtarCNN,
    NatureCNN,
    QNetwork,
    ResidualBlock,
    make_torso,
)

__all__ = [
    "ActorCritic",
    "MLP",
    "TORSOS",
    "ImpalaCNN",
    "MinAtarCNN",
    "NatureCNN",
    "ResidualBlock",
    "make_torso",
    "CategoricalHead",
    "DuelingCategoricalHead",
    "DuelingHead",
    "NoisyLinear",
    "QHead",
    "QNetwork",
    "dense",
    "factorized_noise",
]
