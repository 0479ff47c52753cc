"""Torsos from config: a ``TorsoSpec`` read from YAML, and a registry of named torsos.

A config names its torso in one of three ways (``agent.torso``):

* a built-in name: ``"mlp"``, ``"nature"`` (Mnih et al. 2015), ``"impala"`` (Espeholt et
  al. 2018), ``"minatar"`` (Young & Tian 2019) or ``"auto"``, built by the library's own
  modules (``networks.torsos``), so that existing presets keep their parameter trees;
* a name given to ``register_torso(name, fn)`` by user code (imported with ``--import
  MODULE`` on ``jaxrl.train`` / ``jaxrl.evaluate``; a config's text is never evaluated);
* a mapping, a ``TorsoSpec``::

      torso:
        channels: [32, 64, 64]     # RLHive ConvNetwork's names
        kernel_sizes: [8, 4, 3]
        strides: [4, 2, 1]
        paddings: [0, 0, 0]        # zero padding on each side (0: VALID)
        activation: relu
        layer_norm: false
        init_fn: orthogonal        # any name of networks.initializers
        init_scale: 1.414

  ``[..., H, W, C]`` (integer frames divided by 255) through ``Conv(channels[i],
  kernel_sizes[i], strides[i], paddings[i])`` + activation for each layer, flattened, then
  ``Dense(size)`` (+ ``LayerNorm``) + activation for each of ``hidden_sizes`` (None: the
  agent's ``hidden_sizes``). With no ``channels`` it is an MLP on the flattened input.
  ``PRESETS`` holds the specs of the built-in torsos that are plain conv stacks (``nature``,
  ``minatar``, ``mlp``): with the same parameters they give the same outputs as the
  built-in modules (tested), and their parameter trees have the same names and shapes.
  IMPALA's residual stages are no plain stack: it stays a named torso only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Literal

import flax.linen as nn
import jax

from jaxrl.networks import initializers
from jaxrl.networks.conv import Conv, canonical_backward_default
from jaxrl.networks.inputs import TORSOS, scale_obs
from jaxrl.types import ConfigError
from jaxrl.validation import Options, first_line, option

Activation = Literal["relu", "tanh", "elu", "gelu", "silu", "leaky_relu"]
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": nn.relu,
    "tanh": nn.tanh,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
    "leaky_relu": nn.leaky_relu,
}


@dataclasses.dataclass(frozen=True)
class TorsoSpec(Options):
    """A torso as data (module docstring). ``strides`` and ``paddings`` may be left empty
    (1 and 0 for every layer); otherwise each conv list has one entry per layer.

    Attributes:
      channels, kernel_sizes, strides, paddings: the conv layers (square kernels).
      hidden_sizes: dense widths after the convolutions; None: the agent's.
      activation: after every layer. layer_norm: LayerNorm before each dense activation.
      init_fn: kernel initializer by name (``networks.initializers``; Flax's default
        ``lecun_normal``); init_scale: its ``scale`` (``stddev`` for the normals), None:
        the initializer's default. Biases start at zero.
    """

    channels: tuple[int, ...] = option((), ge=1)
    kernel_sizes: tuple[int, ...] = option((), ge=1)
    strides: tuple[int, ...] = option((), ge=1)
    paddings: tuple[int, ...] = option((), ge=0)
    hidden_sizes: tuple[int, ...] | None = option(None, ge=1)
    activation: Activation = "relu"
    layer_norm: bool = False
    init_fn: str = "lecun_normal"
    init_scale: float | None = option(None, gt=0)

    def __post_init__(self):
        super().__post_init__()
        n = len(self.channels)
        for name in ("kernel_sizes", "strides", "paddings"):
            size = len(getattr(self, name))
            if size != n and not (size == 0 and name != "kernel_sizes"):
                raise ValueError(f"{name} needs one entry per conv layer ({n}), got {size}")
        self.initializer()  # an unknown name or option: ConfigError now

    def initializer(self) -> initializers.Initializer:
        """The kernel initializer ``init_fn`` with ``init_scale``."""
        name = initializers.ALIASES.get(self.init_fn, self.init_fn)
        if self.init_scale is None:
            return initializers.make(name)
        key = "stddev" if name in ("normal", "truncated_normal") else "scale"
        return initializers.make({"name": name, key: self.init_scale})

    def layers(self) -> list[tuple[int, int, int, int]]:
        """``(channels, kernel, stride, padding)`` of each conv layer."""
        n = len(self.channels)
        strides = self.strides or (1,) * n
        paddings = self.paddings or (0,) * n
        return list(zip(self.channels, self.kernel_sizes, strides, paddings, strict=True))


PRESETS: dict[str, TorsoSpec] = {
    "mlp": TorsoSpec(),
    "nature": TorsoSpec(channels=(32, 64, 64), kernel_sizes=(8, 4, 3), strides=(4, 2, 1)),
    "minatar": TorsoSpec(channels=(16,), kernel_sizes=(3,)),
}


class SpecTorso(nn.Module):
    """The torso of a ``TorsoSpec``: ``[..., *obs_shape] -> [..., hidden_sizes[-1]]``
    float32 (the flattened conv features if ``hidden_sizes`` is empty).

    Submodules are auto-named as the built-in torsos name theirs (``Conv_<i>``,
    ``Dense_<i>``, ``LayerNorm_<i>``).
    """

    spec: TorsoSpec
    hidden_sizes: Sequence[int]
    obs_ndim: int = 1
    canonical_backward: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.spec.activation]
        init = self.spec.initializer()
        x = scale_obs(obs)
        if self.spec.channels:
            for features, kernel, stride, pad in self.spec.layers():
                padding = "VALID" if pad == 0 else ((pad, pad), (pad, pad))
                conv = Conv(
                    features,
                    (kernel, kernel),
                    (stride, stride),
                    padding=padding,
                    canonical_backward=self.canonical_backward,
                    kernel_init=init,
                )
                x = act(conv(x))
            x = x.reshape(x.shape[:-3] + (-1,))
        else:
            x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=init)(x)
            x = act(nn.LayerNorm()(x) if self.spec.layer_norm else x)
        return x


def check_spec(spec: TorsoSpec, obs_shape: Sequence[int]) -> None:
    """ConfigError (one line) unless ``spec``'s conv layers fit ``obs_shape``: images
    ``[H, W, C]`` for a conv spec, and every kernel within its (padded) input."""
    obs_shape = tuple(obs_shape)
    if not spec.channels:
        return
    if len(obs_shape) != 3:
        raise ConfigError(
            f"torso spec has conv layers (channels {list(spec.channels)}) but the "
            f"observation has shape {obs_shape}, not an image [H, W, C]; give no channels"
        )
    h, w = obs_shape[:2]
    for i, (_, kernel, stride, pad) in enumerate(spec.layers()):
        if kernel > min(h, w) + 2 * pad:
            raise ConfigError(
                f"torso spec conv layer {i}: kernel {kernel} is larger than its input "
                f"{h}x{w} (padding {pad}); observation shape {obs_shape}"
            )
        h, w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1


def spec_torso(spec: TorsoSpec, obs_shape: Sequence[int], hidden_sizes: Sequence[int]):
    """``SpecTorso`` for ``spec`` on ``obs_shape``, checked (``check_spec``); the spec's own
    ``hidden_sizes`` win over the agent's."""
    check_spec(spec, obs_shape)
    hidden = spec.hidden_sizes if spec.hidden_sizes is not None else tuple(hidden_sizes)
    return SpecTorso(spec, tuple(hidden), len(tuple(obs_shape)), canonical_backward_default())


TorsoFn = Callable[[tuple[int, ...], tuple[int, ...]], nn.Module]
_REGISTRY: dict[str, TorsoFn] = {}


def register_torso(name: str, fn: TorsoFn) -> None:
    """Make ``fn(obs_shape, hidden_sizes) -> flax.linen.Module`` the torso ``name``.

    The module maps ``[..., *obs_shape]`` to ``[..., features]`` float32. A config then
    says ``torso: name``; put the call in a module and pass ``--import that.module`` to
    ``jaxrl.train`` / ``jaxrl.evaluate``. Built-in names cannot be replaced; registering a
    name again replaces the earlier function.
    """
    if not isinstance(name, str) or not name or name in TORSOS:
        raise ConfigError(f"torso name {name!r} must be a new non-empty string, not built-in")
    if not callable(fn):
        raise ConfigError(f"torso {name!r}: fn must be callable (obs_shape, hidden_sizes)")
    _REGISTRY[name] = fn


def import_modules(names: Sequence[str]) -> None:
    """Imports each user module of ``--import MODULE`` (which may call ``register_torso``
    or ``envs.register``; looked up in the current directory too); ConfigError (one line)
    for a module that cannot be found."""
    from jaxrl import trust

    for name in names:
        try:
            trust.import_module(name, f"--import {name}")
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                raise ConfigError(f"--import: no module named {name!r}") from None
            raise ConfigError(f"--import {name}: it needs {e.name!r}, not installed") from None


def registered() -> dict[str, TorsoFn]:
    """Registered (user) torso name -> its function."""
    return dict(_REGISTRY)


def user_torso(name: str, obs_shape: tuple[int, ...], hidden_sizes: tuple[int, ...]) -> nn.Module:
    """The registered torso ``name`` built for ``obs_shape``, checked at the boundary: ``fn``
    takes ``(obs_shape, hidden_sizes)`` and returns a ``flax.linen.Module`` mapping float32
    observations ``[batch, *obs_shape]`` to float features ``[batch, F]``; ConfigError (one
    line naming what was expected) otherwise."""
    import inspect

    fn = _REGISTRY[name]
    expected = f"torso {name!r} must be fn(obs_shape, hidden_sizes) -> flax.linen.Module"
    try:
        inspect.signature(fn).bind(obs_shape, hidden_sizes)
    except TypeError as e:
        raise ConfigError(f"{expected}; {getattr(fn, '__name__', fn)!s}: {e}") from None
    except ValueError:  # no signature to inspect (a builtin): called as it is
        pass
    module = fn(obs_shape, hidden_sizes)
    if not isinstance(module, nn.Module):
        raise ConfigError(f"{expected}; it returned a {type(module).__name__}")
    obs = jax.ShapeDtypeStruct((2, *obs_shape), jax.numpy.float32)
    apply = lambda key, x: module.init_with_output(key, x)[0]
    try:
        out = jax.eval_shape(apply, jax.random.PRNGKey(0), obs)
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"torso {name!r}: its module must take observations [batch, *obs_shape] "
            f"({list(obs.shape)} float32 here); applying it failed: {first_line(e)}"
        ) from None
    leaves = jax.tree.leaves(out)
    shape = getattr(out, "shape", None)
    if len(leaves) != 1 or shape is None or len(shape) != 2 or shape[0] != obs.shape[0]:
        got = shape if len(leaves) == 1 else f"{len(leaves)} arrays"
        raise ConfigError(
            f"torso {name!r}: its module must map observations {list(obs.shape)} to "
            f"features [batch, F] ([2, F] here), got {got}"
        )
    if not jax.numpy.issubdtype(out.dtype, jax.numpy.floating):
        raise ConfigError(f"torso {name!r}: its features must be float (float32), got {out.dtype}")
    return module
