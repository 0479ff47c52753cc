"""The ``multi`` torso: a dict observation, each entry through its own encoder, joined.

An env whose spec declares ``obs_extras`` gives dict observations ``{"obs": main, name:
...}`` (``jaxrl.types``). The other torsos see the main array only; ``MultiInputTorso``
sees every entry but the legal-action mask, each through the encoder its rank asks for
(``ENCODER_RULES``):

* ``[D]`` feature vectors: ``Dense(width)`` + ReLU (an MLP);
* ``[T, C]`` sequences: ``Conv1dEncoder``, 1-D convolutions over ``T`` then
  ``Dense(width)`` + ReLU (Emote's ``Conv1dEncoder``);
* ``[H, W, C]`` images: the CNN ``"auto"`` picks (``minatar`` under 32 pixels a side,
  else ``nature``) with one dense layer of ``width`` (``torsos.cnn_torso``, whose
  convolutions take the CPU-safe backward pass of ``networks.conv``);

then the encodings, concatenated in the sorted order of the keys, through ``Dense(size)``
+ ReLU for each further width. ``width`` is ``hidden_sizes[0]``. This is Emote's
``MultiKeyAgentProxy`` with its per-key encoders.

``network_inputs(obs)`` is what such a network is given (the dict without the mask);
``input_fn(torso)`` picks it or ``types.main_obs`` for an agent. Design notes:
``docs/concepts/observations.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.conv import Conv1d, canonical_backward_default
from jaxrl.networks.inputs import scale_obs
from jaxrl.networks.torsos import CNN_TORSOS, MLP, make_torso, torso_name
from jaxrl.types import ACTION_MASK, ConfigError, EnvSpec, Obs, main_obs

MULTI = "multi"
#: The encoder of an input of each rank (its shape without the batch axes).
ENCODER_RULES = {1: "mlp", 2: "conv1d", 3: "cnn"}
#: The agent families whose networks take the ``multi`` torso.
Inputs = tuple[tuple[str, str, tuple[int, ...]], ...]  # (key, encoder, shape) per input


def is_multi(torso: Any) -> bool:
    """Whether ``torso`` (an agent's ``torso`` option) names the ``multi`` torso."""
    return isinstance(torso, str) and torso == MULTI


def network_inputs(obs: Obs) -> Any:
    """What a ``multi`` torso is given: the dict ``obs`` without its legal-action mask."""
    return {k: v for k, v in obs.items() if k != ACTION_MASK}


def input_fn(torso: Any) -> Callable[[Obs], Any]:
    """``network_inputs`` for the ``multi`` torso, else ``types.main_obs``."""
    return network_inputs if is_multi(torso) else main_obs


def example_inputs(spec: EnvSpec, torso: Any, batch: int = 1) -> Any:
    """Zeros ``[batch, ...]`` of what the network sees (``input_fn(torso)``) on ``spec``."""
    obs = jax.tree.map(lambda s: jnp.zeros((batch, *s.shape), s.dtype), spec.obs_spec)
    return input_fn(torso)(obs)


def input_rules(spec: EnvSpec) -> Inputs:
    """``(key, encoder, shape)`` of each input of ``spec``, sorted by key; a one-line
    ``ConfigError`` for a spec without dict observations or an input with no rule."""
    if not spec.obs_extras:
        raise ConfigError(
            f"torso 'multi' needs dict observations (an env with "
            f"obs_extras), env {spec.name!r} gives one array {list(spec.obs_shape)}; "
            "use torso 'auto'"
        )
    rules = []
    for key, s in sorted(network_inputs(spec.obs_spec).items()):
        if len(s.shape) not in ENCODER_RULES:
            valid = ", ".join(f"rank {r}: {e}" for r, e in ENCODER_RULES.items())
            raise ConfigError(
                f"torso 'multi' has no encoder for observation entry "
                f"{key!r} of shape {list(s.shape)}; encoders by rank: {valid}"
            )
        rules.append((key, ENCODER_RULES[len(s.shape)], tuple(s.shape)))
    return tuple(rules)


class Conv1dEncoder(nn.Module):
    """Sequences ``[..., T, C]`` (integer inputs divided by 255) through ``Conv1d(c, k,
    stride s, SAME)`` + ReLU for each of ``channels``, flattened, then ``Dense(size)`` +
    ReLU for each of ``hidden_sizes``. Output ``[..., hidden_sizes[-1]]`` float32."""

    channels: Sequence[int] = (16, 16)
    kernel_sizes: Sequence[int] = (3, 3)
    strides: Sequence[int] = (1, 1)
    hidden_sizes: Sequence[int] = (64,)
    canonical_backward: bool = False

    @nn.compact
    def __call__(self, seq: jax.Array) -> jax.Array:
        x = scale_obs(seq)
        for c, k, s in zip(self.channels, self.kernel_sizes, self.strides, strict=True):
            x = nn.relu(Conv1d(c, k, s, "SAME", self.canonical_backward)(x))
        x = x.reshape(x.shape[:-2] + (-1,))
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


def encoder(kind: str, shape: tuple[int, ...], width: int, canonical_backward: bool, name: str):
    """The encoder ``kind`` (a value of ``ENCODER_RULES``) for inputs of ``shape``."""
    if kind == "mlp":
        return MLP((width,), name=name)
    if kind == "conv1d":
        return Conv1dEncoder(
            hidden_sizes=(width,), canonical_backward=canonical_backward, name=name
        )
    cnn = CNN_TORSOS[torso_name("auto", shape)]
    return cnn((width,), canonical_backward=canonical_backward, name=name)


class MultiInputTorso(nn.Module):
    """Dict observations ``{key: [..., *shape]}`` -> features ``[..., hidden_sizes[-1]]``
    float32 (the module docstring; ``width = hidden_sizes[0]``; with one width, the
    concatenated encodings ``[..., len(inputs) * width]``).

    Attributes:
      inputs: ``(key, encoder, shape)`` of each entry (``input_rules``).
      hidden_sizes: the encoders' width, then the joined layers' widths.
      canonical_backward: the convolutions' backward pass (``networks.conv``).
      shared: a module (``SharedEncoders``) whose features replace the encoders of the
        entries it encodes: one image encoder for an actor and a critic.

    Submodules: ``encoder_<key>`` per entry and ``Dense_<i>`` for the joined layers.
    """

    inputs: Inputs
    hidden_sizes: Sequence[int]
    canonical_backward: bool = False
    shared: nn.Module | None = None

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> jax.Array:
        width = self.hidden_sizes[0]
        given = self.shared(obs) if self.shared is not None else {}
        parts = []
        for key, kind, shape in self.inputs:
            if key in given:
                parts.append(given[key])
                continue
            module = encoder(kind, shape, width, self.canonical_backward, f"encoder_{key}")
            parts.append(module(obs[key]))
        x = jnp.concatenate(parts, axis=-1)
        for size in self.hidden_sizes[1:]:
            x = nn.relu(nn.Dense(size)(x))
        return x


class SharedEncoders(nn.Module):
    """The image encoders of ``inputs`` alone: ``obs -> {key: [..., width]}`` for every
    ``cnn`` entry; given to the actor's and the critic's ``MultiInputTorso`` as ``shared``
    so that both read one image encoder."""

    inputs: Inputs
    width: int
    canonical_backward: bool = False

    @nn.compact
    def __call__(self, obs: dict[str, jax.Array]) -> dict[str, jax.Array]:
        out = {}
        for key, kind, shape in self.inputs:
            if kind == "cnn":
                name = f"encoder_{key}"
                out[key] = encoder(kind, shape, self.width, self.canonical_backward, name)(obs[key])
        return out


def multi_torso(spec: EnvSpec, hidden_sizes: Sequence[int]) -> MultiInputTorso:
    """The ``multi`` torso for ``spec`` (``input_rules``), its convolutions' backward pass
    chosen by backend (``conv.canonical_backward_default``)."""
    inputs = input_rules(spec)
    return MultiInputTorso(inputs, tuple(hidden_sizes), canonical_backward_default())


def shared_encoders(torso: nn.Module | None) -> SharedEncoders:
    """The ``SharedEncoders`` of the image entries of ``torso`` (a ``MultiInputTorso``),
    with its width and backward pass."""
    assert isinstance(torso, MultiInputTorso), torso
    return SharedEncoders(torso.inputs, torso.hidden_sizes[0], torso.canonical_backward)


def build_torso(name: Any, spec: EnvSpec, hidden_sizes: Sequence[int]) -> nn.Module:
    """``multi_torso`` for the ``multi`` torso, else ``torsos.make_torso`` on the main
    observation's shape."""
    if is_multi(name):
        return multi_torso(spec, hidden_sizes)
    return make_torso(name, spec.obs_shape, hidden_sizes)
