"""Torsos: observation -> feature vector (``make_torso`` picks one by name), and
``QNetwork`` (torso + head).

The convolutional torsos take ``canonical_backward``, passed to every ``conv.Conv`` they
hold: which backward pass their convolutions use (see ``jaxrl.networks.conv``). The torso
builders ``make_torso`` and ``cnn_torso`` set it from the backend
(``conv.canonical_backward_default()``: True on CPU, False on GPU and TPU); this is the one
place where the network code depends on the backend. Outputs, gradients and parameter
trees are the same either way."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks import spec
from jaxrl.networks.conv import Conv, canonical_backward_default
from jaxrl.networks.inputs import TORSOS, scale_obs
from jaxrl.networks.noisy import dense
from jaxrl.types import ConfigError


class MLP(nn.Module):
    """A multilayer perceptron with ReLU activations after every layer.

    Input ``[..., *obs_shape]`` is flattened to ``[..., prod(obs_shape)]`` and cast to
    float32; integer (uint8 image) inputs are divided by 255 first.
    Output ``[..., hidden_sizes[-1]]`` float32.

    With ``noisy`` every layer is a ``NoisyLinear`` (Fortunato et al. 2018) named
    ``NoisyLinear_<i>`` instead of ``Dense_<i>``; ``apply`` then needs
    ``rngs={"noise": key}`` unless called with ``deterministic=True`` (mean weights).
    With ``layer_norm`` each layer's output is normalized (``LayerNorm_<i>``, Ba et al.
    2016) before its ReLU, as in PQN (Gallici et al. 2024).
    """

    hidden_sizes: Sequence[int]
    obs_ndim: int = 1
    noisy: bool = False
    sigma0: float = 0.5
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array, deterministic: bool = False) -> jax.Array:
        x = scale_obs(obs)
        x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))
        for size in self.hidden_sizes:
            layer = dense(size, noisy=self.noisy, sigma0=self.sigma0, deterministic=deterministic)
            x = layer(x)
            x = nn.relu(nn.LayerNorm()(x) if self.layer_norm else x)
        return x


def _norm_relu(x: jax.Array, layer_norm: bool) -> jax.Array:
    """``relu(LayerNorm(x))`` over the last axis (a fresh ``LayerNorm`` module of the
    calling ``nn.compact`` method) with ``layer_norm``, else ``relu(x)``."""
    return nn.relu(nn.LayerNorm()(x) if layer_norm else x)


class NatureCNN(nn.Module):
    """The convolutional torso of Mnih et al. 2015 ("Nature DQN"), then dense layers.

    ``[..., H, W, C]`` (uint8 frames are divided by 255) through Conv(32, 8x8, stride 4),
    Conv(64, 4x4, stride 2), Conv(64, 3x3, stride 1), each VALID-padded with ReLU,
    flattened, then ``Dense(size)`` + ReLU for each of ``hidden_sizes`` (512 in the paper).
    Output ``[..., hidden_sizes[-1]]`` float32 (or the flattened conv features if empty).
    With ``layer_norm`` every layer's output is normalized (``LayerNorm``, Ba et al. 2016;
    over the channels at each position for a convolution) before its ReLU, as in PQN's
    network (Gallici et al. 2024; purejaxql's ``pqn_atari.py``).
    """

    hidden_sizes: Sequence[int] = (512,)
    canonical_backward: bool = False
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = scale_obs(obs)
        for features, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
            conv = Conv(
                features,
                (kernel, kernel),
                (stride, stride),
                padding="VALID",
                canonical_backward=self.canonical_backward,
            )
            x = _norm_relu(conv(x), self.layer_norm)
        x = x.reshape(x.shape[:-3] + (-1,))
        for size in self.hidden_sizes:
            x = _norm_relu(nn.Dense(size)(x), self.layer_norm)
        return x


class ResidualBlock(nn.Module):
    """``x + conv(relu(conv(relu(x))))``, both 3x3 SAME stride 1 with ``x``'s channels
    (Espeholt et al. 2018, Figure 3). ``x [N, H, W, C]`` float32 -> same shape."""

    canonical_backward: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        conv = lambda: Conv(  # noqa: E731
            channels, (3, 3), padding="SAME", canonical_backward=self.canonical_backward
        )
        y = conv()(nn.relu(x))
        y = conv()(nn.relu(y))
        return x + y


class ImpalaCNN(nn.Module):
    """The IMPALA ResNet torso (Espeholt et al. 2018, "IMPALA", Figure 3, "deep").

    ``[..., H, W, C]`` (uint8 frames divided by 255); for each of ``channels`` (16, 32,
    32) a stage Conv(c, 3x3, stride 1, SAME), MaxPool(3x3, stride 2, SAME) and two
    ``ResidualBlock``; then ReLU, flatten and ``Dense(size)`` + ReLU for each of
    ``hidden_sizes`` (256 in the paper). An 84x84 input leaves 11x11x32 before the dense
    layers (84 -> 42 -> 21 -> 11). Output ``[..., hidden_sizes[-1]]`` float32.
    """

    hidden_sizes: Sequence[int] = (256,)
    channels: Sequence[int] = (16, 32, 32)
    canonical_backward: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = scale_obs(obs)
        batch = x.shape[:-3]
        x = x.reshape((-1, *x.shape[-3:]))
        for c in self.channels:
            x = Conv(c, (3, 3), padding="SAME", canonical_backward=self.canonical_backward)(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            x = ResidualBlock(self.canonical_backward)(x)
            x = ResidualBlock(self.canonical_backward)(x)
        x = nn.relu(x).reshape((*batch, -1))
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


class MinAtarCNN(nn.Module):
    """The MinAtar torso (Young & Tian 2019, "MinAtar"): Conv(16, 3x3, stride 1, VALID) +
    ReLU, flatten, ``Dense(size)`` + ReLU for each of ``hidden_sizes`` (128 in the paper).

    ``[..., H, W, C]`` cast to float32 as it is (MinAtar's channels are 0/1; uint8 frames
    are divided by 255). Output ``[..., hidden_sizes[-1]]`` float32. With ``layer_norm``
    the convolution's output (over its 16 channels at each position) and every dense
    layer's are normalized before their ReLU, as in PQN's MinAtar network (Gallici et al.
    2024; purejaxql's ``pqn_minatar.py``).
    """

    hidden_sizes: Sequence[int] = (128,)
    canonical_backward: bool = False
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = obs.astype(jnp.float32) if obs.dtype == jnp.bool_ else scale_obs(obs)
        conv = Conv(16, (3, 3), padding="VALID", canonical_backward=self.canonical_backward)
        x = _norm_relu(conv(x), self.layer_norm)
        x = x.reshape(x.shape[:-3] + (-1,))
        for size in self.hidden_sizes:
            x = _norm_relu(nn.Dense(size)(x), self.layer_norm)
        return x


CNN_TORSOS = {"nature": NatureCNN, "impala": ImpalaCNN, "minatar": MinAtarCNN}
#: The convolutional torsos with a ``layer_norm`` field.
LAYER_NORM_TORSOS = ("nature", "minatar")


def make_torso(name: Any, obs_shape: Sequence[int], hidden_sizes: Sequence[int]) -> nn.Module:
    """The torso ``name`` for observations of ``obs_shape``, its dense widths ``hidden_sizes``.

    ``"mlp"``: ``MLP``; ``"nature"``: ``NatureCNN`` (Mnih et al. 2015); ``"impala"``:
    ``ImpalaCNN`` (Espeholt et al. 2018); ``"minatar"``: ``MinAtarCNN`` (Young & Tian
    2019); ``"auto"``: ``mlp`` for vector observations, ``minatar`` for images ``[H, W, C]``
    smaller than 32 pixels on a side (MinAtar's 10x10), ``nature`` for other images.
    The convolutional torsos need image observations ``[H, W, C]`` (else ``ConfigError``)
    and are built by ``cnn_torso``. ``name`` may also be a ``networks.spec.TorsoSpec``
    (``spec.spec_torso``) or a name given to ``networks.spec.register_torso``.
    """
    name = torso_name(name, obs_shape)
    if isinstance(name, spec.TorsoSpec):
        return spec.spec_torso(name, obs_shape, hidden_sizes)
    if name in spec.registered():
        return spec.user_torso(name, tuple(obs_shape), tuple(hidden_sizes))
    if name == "mlp":
        return MLP(tuple(hidden_sizes), obs_ndim=len(tuple(obs_shape)))
    return cnn_torso(name, hidden_sizes)


def cnn_torso(
    name: str,
    hidden_sizes: Sequence[int],
    canonical_backward: bool | None = None,
    layer_norm: bool = False,
) -> nn.Module:
    """The convolutional torso ``name`` (a key of ``CNN_TORSOS``) with dense widths
    ``hidden_sizes``, its convolutions' backward pass chosen by backend.

    ``layer_norm`` (``nature`` and ``minatar`` only; ``ConfigError`` for ``impala``): a
    LayerNorm before every ReLU, PQN's network.

    ``canonical_backward`` None (the default) takes ``conv.canonical_backward_default()``
    (True on the CPU backend, where XLA's own convolution backward pass is 6-13x slower
    inside ``lax.scan``: jax-ml/jax#12868; False on GPU and TPU). Every torso builder of
    the library goes through here, so this is the one place where the choice is made.
    """
    if canonical_backward is None:
        canonical_backward = canonical_backward_default()
    if not layer_norm:
        return CNN_TORSOS[name](tuple(hidden_sizes), canonical_backward=canonical_backward)
    if name not in LAYER_NORM_TORSOS:
        raise ConfigError(
            f"torso {name!r} has no layer_norm option; torsos with one: mlp, "
            f"{', '.join(LAYER_NORM_TORSOS)} (or a torso spec with layer_norm); "
            "give layer_norm false for this torso"
        )
    return CNN_TORSOS[name](tuple(hidden_sizes), canonical_backward, layer_norm=True)


def torso_name(name: Any, obs_shape: Sequence[int]) -> Any:
    """``name`` checked against ``obs_shape``, with ``"auto"`` resolved (see ``make_torso``).

    A ``TorsoSpec`` is checked (``spec.check_spec``) and returned as it is; a registered
    name is returned as it is. Raises ``ConfigError`` for an unknown name or a
    convolutional torso on vector observations."""
    obs_shape = tuple(obs_shape)
    if isinstance(name, spec.TorsoSpec):
        spec.check_spec(name, obs_shape)
        return name
    image = len(obs_shape) == 3
    if name == "auto":
        return "mlp" if not image else "minatar" if min(obs_shape[:2]) < 32 else "nature"
    if name in spec.registered():
        return name
    if name == "multi":  # the agents that take it build it first (networks.multi_input)
        raise refuse("this agent")
    if name not in TORSOS:
        valid = ", ".join((*TORSOS, *spec.registered()))
        raise ConfigError(
            f"unknown torso {name!r}; valid: {valid}, or a torso spec (channels, "
            "kernel_sizes, strides, paddings, hidden_sizes, ...)"
        )
    if name != "mlp" and not image:
        raise ConfigError(
            f"torso {name!r} needs image observations [H, W, C], got shape {obs_shape}; "
            "use torso 'mlp' or 'auto'"
        )
    return name


def _accepts_deterministic(module: nn.Module) -> bool:
    return "deterministic" in inspect.signature(module.__call__).parameters


class QNetwork(nn.Module):
    """A torso followed by a head: ``obs [..., *obs_shape] -> head output``.

    The output is ``Q [..., num_actions]`` for ``QHead`` / ``DuelingHead`` and logits
    ``[..., num_actions, num_atoms]`` for the categorical heads.

    ``deterministic`` is passed on to the torso and the head when their ``__call__``
    takes a ``deterministic`` argument (the modules of ``jaxrl.networks`` do), so that a
    network with noisy layers can be evaluated with its mean weights:
    ``net.apply(params, obs, deterministic=True)``; a noisy network otherwise needs
    ``rngs={"noise": key}``.

    Further keyword arguments go to the head (IQN's ``num_samples``).
    """

    torso: nn.Module
    head: nn.Module

    @nn.compact
    def __call__(self, obs: jax.Array, deterministic: bool = False, **head_kwargs) -> Any:
        if deterministic:
            torso_kw = {"deterministic": True} if _accepts_deterministic(self.torso) else {}
            head_kw = {"deterministic": True} if _accepts_deterministic(self.head) else {}
        else:
            torso_kw, head_kw = {}, {}
        return self.head(self.torso(obs, **torso_kw), **head_kw, **head_kwargs)


# The agents whose networks take the ``multi`` torso (``networks.multi_input``).
MULTI_AGENTS = (
    "dqn", "rainbow", "qrdqn", "iqn", "mdqn", "apex_dqn",
    "ppo", "a2c", "sac", "td3", "ddpg", "apex_ddpg",
)  # fmt: skip


def refuse(what: str) -> ConfigError:
    """The one-line error of ``what`` (an agent, a network) that cannot take ``multi``."""
    return ConfigError(
        f"{what} cannot take torso 'multi' (dict observations); agents that can: "
        f"{', '.join(MULTI_AGENTS)}"
    )
