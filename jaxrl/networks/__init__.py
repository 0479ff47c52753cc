"""Flax Linen modules: torsos and heads that agents compose, noisy layers, memory cells
(``memory``: LSTM, GRU, minGRU behind one interface), and the convolution layer of the
torsos (``conv``: its backward pass chosen by backend)."""

from jaxrl.networks.conv import Conv, canonical_backward_default, conv2d
from jaxrl.networks.heads import (
    CategoricalHead,
    DuelingCategoricalHead,
    DuelingHead,
    ImplicitQuantileHead,
    QHead,
)
from jaxrl.networks.memory import CELLS, Memory, MemoryCell, make_cell
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
    "CELLS",
    "Memory",
    "MemoryCell",
    "make_cell",
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
