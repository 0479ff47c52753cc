"""Weight initializers by name, for configs: ``{"name": "orthogonal", "scale": 1.414}``.

A spec is a name or a dict with ``name`` and the initializer's options; :func:`make`
returns a Flax initializer ``(key, shape, dtype) -> array``. Fans follow Flax's (and
PyTorch's) convention for dense ``[in, out]`` and conv ``[*window, in, out]`` kernels:
``fan_in = prod(window) * in``, ``fan_out = prod(window) * out``.

* ``orthogonal`` (``scale`` 1.0): ``scale`` times a random orthogonal matrix (Saxe et
  al. 2014), :func:`orthogonal` (safe under ``vmap`` on XLA:CPU, see there);
* ``glorot_uniform`` (``scale`` 1.0): ``U(-a, a)``, ``a = sqrt(6 scale / (fan_in +
  fan_out))`` (Glorot & Bengio 2010); ``glorot_normal``: truncated normal of variance
  ``2 scale / (fan_in + fan_out)``;
* ``he_uniform``, ``he_normal``: ``variance_scaling`` with scale 2, ``fan_in`` (He et al.
  2015); ``lecun_normal``: scale 1, ``fan_in``, truncated normal (Flax's default);
* ``variance_scaling`` (``scale`` 1.0, ``mode`` fan_in, ``distribution`` uniform):
  variance ``scale / n``, ``n`` the fan of ``mode`` (``fan_avg``: their mean), drawn
  uniform, normal or truncated normal;
* ``normal`` (``stddev`` 0.01); ``truncated_normal`` (``stddev`` 0.01): cut at two
  standard deviations; ``zeros``.

``variance_scaling``'s defaults are RLHive's ``variance_scaling_`` (TensorFlow's
``VarianceScaling`` ported to PyTorch); the seeds' names are aliases: RLHive's and Emote's
``xavier_uniform_``, ``xavier_uniform_init_``, ``xavier_normal_``, ``ortho_init_``,
``orthogonal_``, ``variance_scaling_``, ``normal_init_``, ``truncated_normal_init``,
``kaiming_uniform_``, ``kaiming_normal_``. Truncated normals are rescaled so that their
standard deviation is the one asked (Flax's ``variance_scaling``: the draw of a unit
normal cut at +-2 has std 0.87962566).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.types import ConfigError

Initializer = Callable[..., jax.Array]

_TRUNCATED_STD = 0.87962566103423978  # std of a unit normal cut at +-2


def _truncated_normal(stddev: float = 0.01) -> Initializer:
    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        unit = jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)
        return unit * jnp.asarray(stddev / _TRUNCATED_STD, dtype)

    return init


def orthogonal(scale: float = 1.0, column_axis: int = -1) -> Initializer:
    """``jax.nn.initializers.orthogonal(scale, column_axis)`` (the QR of a normal draw, the
    signs fixed by ``R``'s diagonal; Saxe et al. 2014), the same numbers, with a ``vmap``
    of it run as a loop over the batch (``jax.custom_batching.sequential_vmap``).

    Why: a vmapped orthogonal init is a batched LAPACK QR (``lapack_sgeqrf_ffi``,
    ``lapack_sorgqr_ffi`` with a batch dimension); jaxlib runs the batch on XLA:CPU's
    intra-op thread pool (``ParallelBatchMap``) from a task of that same pool and waits
    for it. When independent QRs of one program (the layers of several networks) occupy
    every pool thread (2 on a 2-core machine), their batch tasks never run: the program
    never finishes, every thread idle (``--agent ippo``'s init: one PPO per player,
    ``vmap``-ed; a ``--seeds K`` run of an orthogonally initialized agent). Unbatched QRs
    run inline, so the loop cannot wait on the pool.
    """
    base = jax.nn.initializers.orthogonal(scale, column_axis)

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


# name -> (builder, its options with defaults)
_BUILDERS: dict[str, tuple[Callable[..., Initializer], dict[str, Any]]] = {
    "orthogonal": (orthogonal, {"scale": 1.0}),
    "glorot_uniform": (
        lambda scale: nn.initializers.variance_scaling(scale, "fan_avg", "uniform"),
        {"scale": 1.0},
    ),
    "glorot_normal": (
        lambda scale: nn.initializers.variance_scaling(scale, "fan_avg", "truncated_normal"),
        {"scale": 1.0},
    ),
    "he_uniform": (lambda: nn.initializers.he_uniform(), {}),
    "he_normal": (lambda: nn.initializers.he_normal(), {}),
    "lecun_normal": (lambda: nn.initializers.lecun_normal(), {}),
    "variance_scaling": (
        lambda scale, mode, distribution: nn.initializers.variance_scaling(
            scale, mode, distribution
        ),
        {"scale": 1.0, "mode": "fan_in", "distribution": "uniform"},
    ),
    "normal": (lambda stddev: nn.initializers.normal(stddev), {"stddev": 0.01}),
    "truncated_normal": (_truncated_normal, {"stddev": 0.01}),
    "zeros": (lambda: nn.initializers.zeros, {}),
}
ALIASES = {
    "xavier_uniform": "glorot_uniform",
    "xavier_uniform_": "glorot_uniform",
    "xavier_uniform_init_": "glorot_uniform",
    "xavier_normal": "glorot_normal",
    "xavier_normal_": "glorot_normal",
    "ortho_init_": "orthogonal",
    "orthogonal_": "orthogonal",
    "variance_scaling_": "variance_scaling",
    "normal_init_": "normal",
    "truncated_normal_init": "truncated_normal",
    "kaiming_uniform_": "he_uniform",
    "kaiming_normal_": "he_normal",
}
NAMES = tuple(_BUILDERS)
_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("uniform", "normal", "truncated_normal")


def make(spec: str | Mapping[str, Any]) -> Initializer:
    """The initializer a config names: ``"orthogonal"`` or ``{"name": ..., option: ...}``.

    Raises ``ConfigError`` (one line) for an unknown name or option, or a value out of
    range (a scale or stddev that is not a positive number, an unknown mode or
    distribution).
    """
    options: dict[str, Any] = {"name": spec} if isinstance(spec, str) else dict(spec)
    name = options.pop("name", None)
    name = ALIASES.get(name, name)
    if name not in _BUILDERS:
        raise ConfigError(f"unknown initializer {name!r}; valid: {', '.join(NAMES)}")
    builder, defaults = _BUILDERS[name]
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        valid = ", ".join(defaults) or "none"
        raise ConfigError(
            f"initializer {name!r} has no option {unknown[0]!r}; its options: {valid}"
        )
    options = {**defaults, **options}
    for key in ("scale", "stddev"):
        value = options.get(key, 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(
                f"initializer {name!r}: {key} must be a positive number, got {value!r}"
            )
    if options.get("mode", "fan_in") not in _MODES:
        raise ConfigError(f"initializer {name!r}: mode must be one of {', '.join(_MODES)}")
    if options.get("distribution", "uniform") not in _DISTRIBUTIONS:
        raise ConfigError(
            f"initializer {name!r}: distribution must be one of {', '.join(_DISTRIBUTIONS)}"
        )
    return builder(**options)
