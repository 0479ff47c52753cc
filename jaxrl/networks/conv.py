"""2-D NHWC convolution whose backward pass avoids XLA:CPU's slow path inside loops.

Why. On XLA:CPU a convolution's *backward* pass inside a loop body (``lax.scan``,
``fori_loop``, ``while_loop``: the fused training program) runs 6-13x slower than the
same computation as its own jitted call (jax-ml/jax#12868). Autodiff of
``lax.conv_general_dilated`` emits the two backward convolutions with non-canonical
dimension numbers (the batch axis used as the feature axis for the kernel gradient; the
kernel's input and output axes swapped for the input gradient), and inside a loop body
XLA:CPU lowers those to a slow generic loop; canonical NHWC/HWIO/NHWC convolutions go to
its fast (Eigen) path in either place. Measured on the 2-core CPU of this project (Nature
CNN, batch 32, jax 0.10.2; docs/concepts/backends.md): 302 ms per gradient step
inside ``lax.scan`` with XLA's own backward pass, 44.6 ms with the one below.

What. ``conv2d(x, w, strides, padding, canonical_backward)`` is
``lax.conv_general_dilated`` with NHWC/HWIO/NHWC dimension numbers. Its forward pass is
that very call either way (so outputs are bit-identical to ``flax.linen.Conv``). With
``canonical_backward=True`` it is a ``jax.custom_vjp`` whose backward pass computes both
gradients as canonical NHWC/HWIO/NHWC convolutions on explicitly transposed operands
(``_conv_bwd`` derives them); the input is zero-padded explicitly first, so ``"SAME"``
and explicit paddings work like ``"VALID"``. ``Conv`` is a Flax Linen layer with the
parameters of ``flax.linen.Conv`` (``kernel [kh, kw, C, F]`` with LeCun-normal init,
``bias [F]`` zeros, same names), so parameter trees and checkpoints do not depend on
which backward pass is used.

Where it is chosen. Only ``canonical_backward_default()`` looks at the backend, and only
the torso builders of ``jaxrl.networks.torsos`` (``make_torso``, ``cnn_torso``) call it:
the canonical backward pass on the CPU backend, XLA's native one on GPU and TPU (where
the upstream problem does not exist and cuDNN picks its own algorithms). A module built
directly (``NatureCNN()``) uses XLA's native backward pass unless told otherwise.

Members of a ``vmap`` (``--seeds``, ``--sweep``: each member with its own kernel) are
convolved in turn on the canonical path, not as one grouped convolution (``_member_conv``:
XLA:CPU's grouped convolution costs about twice the members' own).

Limits: 2-D, no dilation, no feature groups (what the torsos use). A ``custom_vjp``
function supports ``grad``/``vjp``, ``jit``, ``vmap`` and ``scan`` but not forward-mode
differentiation (``jvp``, ``jacfwd``, Hessians); use ``canonical_backward=False`` there.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.linen.dtypes import promote_dtype

DIMENSION_NUMBERS = ("NHWC", "HWIO", "NHWC")

Pads = tuple[tuple[int, int], tuple[int, int]]


def canonical_backward_default(backend: str | None = None) -> bool:
    """Whether convolutions on ``backend`` (default: ``jax.default_backend()``) should use
    the canonical backward pass: True on ``"cpu"``, False on GPU and TPU. The one place
    where the library chooses by backend (see the module docstring)."""
    return (backend or jax.default_backend()) == "cpu"


def _xla_conv(
    x: jax.Array,
    w: jax.Array,
    strides: tuple[int, ...],
    padding,
    lhs_dilation: tuple[int, int] = (1, 1),
    rhs_dilation: tuple[int, int] = (1, 1),
) -> jax.Array:
    """The convolution, exactly as ``flax.linen.Conv`` calls it (undilated, its forward
    pass); the dilations serve the canonical backward pass."""
    return jax.lax.conv_general_dilated(
        x,
        w,
        strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=DIMENSION_NUMBERS,
        feature_group_count=1,
        precision=None,
    )


def _explicit_pads(in_hw: Sequence[int], kernel_hw: Sequence[int], strides, padding) -> Pads:
    """``padding`` (``"SAME"``, ``"VALID"`` or ``((lo, hi), (lo, hi))``) as explicit
    ``((top, bottom), (left, right))``, as ``lax.conv_general_dilated`` resolves it."""
    if isinstance(padding, str):
        pads = jax.lax.padtype_to_pads(tuple(in_hw), tuple(kernel_hw), tuple(strides), padding)
    else:
        pads = padding
    return tuple((int(lo), int(hi)) for lo, hi in pads)  # type: ignore[return-value]


@functools.cache
def _member_conv(strides: tuple[int, int], padding, lhs_dilation=(1, 1), rhs_dilation=(1, 1)):
    """``conv(lhs, rhs)``: a canonical NHWC/HWIO/NHWC convolution whose ``vmap`` with a
    batched ``rhs`` (each member of a ``--seeds``/``--sweep`` program with its own kernel)
    convolves the members one after the other (``lax.map``) instead of as one grouped
    convolution, which is what ``vmap`` makes of it by default. XLA:CPU's grouped
    convolution costs about twice the members' own: Nature CNN gradient steps of batch 32
    inside a scan (2-core CPU, jax 0.10.2) took 40.6 / 41.6 ms per member under ``vmap`` of
    2 / 4 members against 22.4 ms for one, and 18.9 / 19.0 ms with the members in turn;
    MinAtar's torso 0.6 against 0.5 ms per member for 32 members. A ``vmap`` of the input
    alone (one kernel) folds the members into the batch axis, as ``vmap`` does anyway.
    Unbatched, it is the plain convolution (the same program)."""

    @jax.custom_batching.custom_vmap
    def conv(lhs: jax.Array, rhs: jax.Array) -> jax.Array:
        return _xla_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation)

    @conv.def_vmap
    def members_in_turn(axis_size, in_batched, lhs, rhs):
        lhs_batched, rhs_batched = in_batched
        if not rhs_batched:
            out = conv(jnp.reshape(lhs, (-1, *lhs.shape[2:])), rhs)
            return jnp.reshape(out, (axis_size, -1, *out.shape[1:])), True
        if not lhs_batched:
            lhs = jnp.broadcast_to(lhs, (axis_size, *lhs.shape))
        return jax.lax.map(lambda pair: conv(*pair), (lhs, rhs)), True

    return conv


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _canonical_conv(x: jax.Array, w: jax.Array, strides: tuple[int, ...], padding) -> jax.Array:
    return _member_conv(strides, padding)(x, w)


def _conv_fwd(x, w, strides, padding):
    return _member_conv(strides, padding)(x, w), (x, w)


def _conv_bwd(strides, padding, residuals, g):
    """Both gradients of ``y = conv(pad(x), w)`` as canonical NHWC/HWIO/NHWC convolutions.

    Shapes: ``x [N, H, W, C]``, ``w [kh, kw, C, F]``, ``g = dL/dy [N, OH, OW, F]``, strides
    ``(sh, sw)``, ``xp = pad(x)`` of ``[N, Hp, Wp, C]`` with ``Hp = top + H + bottom``, and
    ``y[n, i, j, f] = sum_{a, b, c} xp[n, i sh + a, j sw + b, c] w[a, b, c, f]``.

    Kernel gradient: ``dw[a, b, c, f] = sum_{n, i, j} xp[n, i sh + a, j sw + b, c]
    g[n, i, j, f]``. This is a stride-1 convolution of ``xp`` read as ``[C, Hp, Wp, N]``
    (channels as batch, images as features) with ``g`` read as an HWIO kernel ``[OH, OW,
    N, F]`` dilated by the strides; its output ``[C, Hp - (OH - 1) sh, Wp - (OW - 1) sw,
    F]`` holds ``dw`` transposed in its first ``kh x kw`` positions (the rest are the
    rows and columns a strided VALID convolution never reads).

    Input gradient: ``dxp[n, p, q, c] = sum_{i, j, f} g[n, i, j, f] w[p - i sh, q - j sw,
    c, f]``, the transposed convolution: ``g`` dilated by the strides (``lhs_dilation``),
    padded by ``k - 1`` on each side (plus the ``Hp - ((OH - 1) sh + kh)`` rows a strided
    convolution leaves unread at the bottom, likewise on the right), convolved with ``w``
    flipped in space and its ``C`` and ``F`` axes swapped (HWIO ``[kh, kw, F, C]``).
    ``dx`` is ``dxp`` without the padding: the low padding of that convolution shrinks by
    ``top`` / ``left`` and the high one by ``bottom`` / ``right``, which computes exactly
    ``dxp[:, top:top + H, left:left + W]``.
    """
    x, w = residuals
    kh, kw = w.shape[:2]
    (top, bottom), (left, right) = _explicit_pads(x.shape[1:3], (kh, kw), strides, padding)
    sh, sw = strides
    oh, ow = g.shape[1:3]

    xp = jnp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    dw = _member_conv((1, 1), "VALID", rhs_dilation=(sh, sw))(
        jnp.transpose(xp, (3, 1, 2, 0)),  # [C, Hp, Wp, N]
        jnp.transpose(g, (1, 2, 0, 3)),  # [OH, OW, N, F]
    )
    dw = jnp.transpose(dw[:, :kh, :kw, :], (1, 2, 0, 3))  # [kh, kw, C, F]

    rest_h = xp.shape[1] - ((oh - 1) * sh + kh)
    rest_w = xp.shape[2] - ((ow - 1) * sw + kw)
    dx_pads = (
        (kh - 1 - top, kh - 1 - bottom + rest_h),
        (kw - 1 - left, kw - 1 - right + rest_w),
    )
    flipped = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))  # [kh, kw, F, C]
    if min(min(p) for p in dx_pads) >= 0:
        dx = _member_conv((1, 1), dx_pads, lhs_dilation=(sh, sw))(g, flipped)
    else:  # padding wider than the kernel: take the padded input's gradient, then crop
        full = ((kh - 1, kh - 1 + rest_h), (kw - 1, kw - 1 + rest_w))
        dxp = _member_conv((1, 1), full, lhs_dilation=(sh, sw))(g, flipped)
        dx = dxp[:, top : top + x.shape[1], left : left + x.shape[2]]
    return dx.astype(x.dtype), dw.astype(w.dtype)


_canonical_conv.defvjp(_conv_fwd, _conv_bwd)


def conv2d(
    x: jax.Array,
    w: jax.Array,
    strides: Sequence[int] = (1, 1),
    padding: str | Sequence[tuple[int, int]] = "VALID",
    canonical_backward: bool = False,
) -> jax.Array:
    """``x [N, H, W, C] * w [kh, kw, C, F] -> [N, OH, OW, F]`` (NHWC/HWIO/NHWC), same dtype.

    ``padding``: ``"VALID"``, ``"SAME"`` (TensorFlow's: the odd pixel at the end) or
    explicit ``((top, bottom), (left, right))``. ``canonical_backward`` picks the backward
    pass (see the module docstring); the forward pass is the same either way.
    """
    strides = tuple(int(s) for s in strides)
    if not isinstance(padding, str):
        padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    if canonical_backward:
        return _canonical_conv(x, w, strides, padding)
    return _xla_conv(x, w, strides, padding)


class Conv(nn.Module):
    """A 2-D convolution layer, ``flax.linen.Conv``'s drop-in for the torsos.

    Input ``[*batch, H, W, C]`` (any number of leading batch axes, flattened for the
    convolution and restored, as ``flax.linen.Conv`` does), output ``[*batch, OH, OW,
    features]``. Parameters ``kernel [kh, kw, C, features]`` (LeCun normal) and ``bias
    [features]`` (zeros), float32, named as ``flax.linen.Conv`` names them, and the forward
    pass is the same computation (bit for bit). ``canonical_backward`` selects the backward
    pass of ``conv2d``: set it from ``canonical_backward_default()``.
    """

    features: int
    kernel_size: Sequence[int]
    strides: Sequence[int] = (1, 1)
    padding: str | Sequence[tuple[int, int]] = "VALID"
    use_bias: bool = True
    canonical_backward: bool = False
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()
    bias_init: nn.initializers.Initializer = nn.initializers.zeros_init()

    @nn.compact
    def __call__(self, inputs: jax.Array) -> jax.Array:
        kernel_size = tuple(self.kernel_size)
        if len(kernel_size) != 2:
            raise ValueError(f"Conv is 2-D: kernel_size {kernel_size} must have 2 entries")
        batch_shape = inputs.shape[:-3]
        if len(batch_shape) != 1:
            inputs = jnp.reshape(inputs, (-1, *inputs.shape[-3:]))
        kernel = self.param(
            "kernel", self.kernel_init, (*kernel_size, inputs.shape[-1], self.features), jnp.float32
        )
        bias = None
        if self.use_bias:
            bias = self.param("bias", self.bias_init, (self.features,), jnp.float32)
        inputs, kernel, bias = promote_dtype(inputs, kernel, bias, dtype=None)
        y = conv2d(inputs, kernel, self.strides, self.padding, self.canonical_backward)
        if bias is not None:
            y += bias.reshape((1, 1, 1, -1))
        if len(batch_shape) != 1:
            y = jnp.reshape(y, (*batch_shape, *y.shape[1:]))
        return y


class Conv1d(nn.Module):
    """A 1-D convolution over sequences ``[*batch, T, C] -> [*batch, OT, features]``.

    Parameters ``kernel [k, C, features]`` (LeCun normal) and ``bias [features]`` (zeros),
    float32. It is ``conv2d`` on ``[N, 1, T, C]`` with a ``[1, k, C, features]`` kernel, so
    ``canonical_backward`` (set it from ``canonical_backward_default()``) takes the same
    backward pass as ``Conv``'s. ``padding``: ``"VALID"``, ``"SAME"`` or ``(lo, hi)``.
    Emote's ``Conv1dEncoder`` layers, channels last.
    """

    features: int
    kernel_size: int
    stride: int = 1
    padding: str | tuple[int, int] = "SAME"
    canonical_backward: bool = False

    @nn.compact
    def __call__(self, inputs: jax.Array) -> jax.Array:
        batch_shape = inputs.shape[:-2]
        x = jnp.reshape(inputs, (-1, 1, *inputs.shape[-2:]))
        init = nn.initializers.lecun_normal()
        kernel = self.param(
            "kernel", init, (self.kernel_size, x.shape[-1], self.features), jnp.float32
        )
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,), jnp.float32)
        x, kernel, bias = promote_dtype(x, kernel, bias, dtype=None)
        pads: str | tuple[tuple[int, int], ...] = "SAME"
        if isinstance(self.padding, str):
            pads = self.padding
        else:
            pads = ((0, 0), (int(self.padding[0]), int(self.padding[1])))
        y = conv2d(x, kernel[None], (1, self.stride), pads, self.canonical_backward)
        y = y[:, 0] + bias
        return jnp.reshape(y, (*batch_shape, *y.shape[1:]))
