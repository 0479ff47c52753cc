"""Flax Linen modules: torsos and heads that agents compose."""

from jaxrl.networks.heads import DuelingHead, QHead
from jaxrl.networks.torsos import MLP, QNetwork

__all__ = ["MLP", "DuelingHead", "QHead", "QNetwork"]
