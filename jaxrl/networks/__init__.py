"""Flax Linen modules: torsos and heads that agents compose, noisy layers, and the
convolution layer of the torsos (``conv``: its backward pass chosen by backend)."""

from jaxrl.networks.conv import Conv, canonical_backward_default, conv2d
from jaxrl.networks.heads import (
    CategoricalHead,
    DuelingCategoricalHead,
    DuelingHead,
    ImplicitQuantileHead,
    QHead,
)
from jaxrl.networks.noisy import NoisyLinear, dense, factorized_noise
from jaxrl.networks.policies import ActorCritic
from jaxrl.networks.spec import PRESETS, SpecTorso, TorsoSpec, register_torso
from jaxrl.networks.torsos import (
    MLP,
    TORSOS,
    ImpalaCNN,
    MinAtarCNN,
    NatureCNN,
    QNetwork,
    ResidualBlock,
    cnn_torso,
    make_torso,
)

__all__ = [
    "PRESETS",
    "SpecTorso",
    "TorsoSpec",
    "register_torso",
    "ActorCritic",
    "Conv",
    "canonical_backward_default",
    "cnn_torso",
    "conv2d",
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
    "ImplicitQuantileHead",
    "NoisyLinear",
    "QHead",
    "QNetwork",
    "dense",
    "factorized_noise",
]
