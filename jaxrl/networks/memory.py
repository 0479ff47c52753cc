r"""Memory cells as parts: LSTM, GRU and minGRU behind one interface of pure functions.

A cell keeps a carry between the steps of an episode. Each cell here is a ``MemoryCell``,
a NamedTuple of pure functions over the cell's own parameters (a pytree), so any network
can put it between its encoder and its heads (``Memory``, the Flax layer, or called
directly, as a sequence learner such as R2D2's burn-in does):

* ``init(key, input_dim) -> params``;
* ``init_carry(batch_shape) -> carry``: zeros, leaves ``[*batch_shape, ...]`` float32;
* ``step(params, carry, x [*B, D]) -> (carry, y [*B, size])``: one step;
* ``scan(params, carry, xs [T, *B, D], starts [T, *B] bool) -> (carries, ys [T, *B, size])``:
  a sequence from ``carry``, the carry reset to ``init_carry`` before step ``t`` wherever
  ``starts[t]`` (an episode starts there), as the runners reset it after an episode's last
  step (``types.reset_carry``); ``carries`` is the carry after each step (leaves
  ``[T, *B, ...]``; the last one is the final carry).

``make_cell(name, size)`` builds one by name (``CELLS``). The cells, for input ``x``:

* ``"lstm"``: Flax's ``LSTMCell`` (Hochreiter & Schmidhuber 1997, with forget gates), carry
  ``(c, h)``: :math:`i, f, o = \sigma(W_{i,f,o} x + U_{i,f,o} h + b_{i,f,o})`,
  :math:`g = \tanh(W_g x + U_g h + b_g)`, :math:`c' = f c + i g`, :math:`h' = o \tanh(c')`;
  ``y = h'``.
* ``"gru"``: Flax's ``GRUCell`` (Cho et al. 2014), carry ``h``:
  :math:`r = \sigma(W_r x + b_r + U_r h)`, :math:`z = \sigma(W_z x + b_z + U_z h)`,
  :math:`n = \tanh(W_n x + b_n + r (U_n h + b_{hn}))`, :math:`h' = (1 - z) n + z h`;
  ``y = h'``.
* ``"mingru"``: the minimal GRU of Feng et al. 2024 ("Were RNNs All We Needed?", section
  3.1), carry ``h``: :math:`z = \sigma(W_z x + b_z)`, :math:`\tilde h = W_h x + b_h`,
  :math:`h' = (1 - z) h + z \tilde h`; ``y = h'``. Its gates do not read ``h``, so the
  recurrence is linear in ``h`` and ``scan`` runs it as a parallel prefix scan
  (``jax.lax.associative_scan``; Blelloch 1990) in ``O(log T)`` depth, resets included.

LSTM and GRU take the input kernels Flax gives them (LeCun normal) and orthogonal
recurrent kernels (``initializers.orthogonal``, safe under ``vmap`` on XLA:CPU); biases
are 0. minGRU's two dense layers use LeCun normal kernels; the bias of ``h~`` is 0 and
that of ``z`` starts at ``MINGRU_Z_BIAS`` (-2: ``z`` about 0.12, so ``h`` keeps 88% of
itself per step at the start), as an LSTM's forget gate starts open (Jozefowicz et al.
2015). minGRU's only path through time is ``(1 - z) h``: with a zero bias it halves ``h``
at every step, and recurrent PPO with it did not learn MemoryChain-v0 (10 steps) in 100k
env steps (0.050 [-0.075, 0.175] over 8 seeds; benchmarks/journal/2026-12-02-recurrent-ppo.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.initializers import orthogonal
from jaxrl.types import ConfigError, reset_carry

Array = jax.Array
Carry = Any
Params = Any


class CellInit(Protocol):
    def __call__(self, key: Array, input_dim: int) -> Params: ...


class CellInitCarry(Protocol):
    def __call__(self, batch_shape: tuple[int, ...]) -> Carry: ...


class CellStep(Protocol):
    def __call__(self, params: Params, carry: Carry, x: Array) -> tuple[Carry, Array]: ...


class CellScan(Protocol):
    def __call__(
        self, params: Params, carry: Carry, xs: Array, starts: Array
    ) -> tuple[Carry, Array]: ...


class MemoryCell(NamedTuple):
    """A memory cell of ``size`` units as pure functions (module docstring)."""

    name: str
    size: int
    init: CellInit
    init_carry: CellInitCarry
    step: CellStep
    scan: CellScan


def scan_steps(step: CellStep, init_carry: CellInitCarry) -> CellScan:
    """A ``scan`` that runs ``step`` once per time step (``lax.scan``), the carry reset to
    ``init_carry`` where an episode starts."""

    def scan(params: Params, carry: Carry, xs: Array, starts: Array) -> tuple[Carry, Array]:
        initial = init_carry(starts.shape[1:])

        def body(carry: Carry, inputs: tuple[Array, Array]):
            x, start = inputs
            carry, y = step(params, reset_carry(carry, initial, start), x)
            return carry, (carry, y)

        _, (carries, ys) = jax.lax.scan(body, carry, (xs, starts))
        return carries, ys

    return scan


def _flax_cell(name: str, size: int, module: nn.Module, zeros: CellInitCarry) -> MemoryCell:
    """A ``MemoryCell`` of a Flax recurrent cell ``module`` (``(carry, x) -> (carry, y)``)."""

    def init(key: Array, input_dim: int) -> Params:
        return module.init(key, zeros((1,)), jnp.zeros((1, input_dim), jnp.float32))

    def step(params: Params, carry: Carry, x: Array) -> tuple[Carry, Array]:
        return module.apply(params, carry, x)  # type: ignore[return-value]

    return MemoryCell(name, size, init, zeros, step, scan_steps(step, zeros))


def lstm(size: int) -> MemoryCell:
    """Flax's ``LSTMCell`` of ``size`` units; carry ``(c, h)`` each ``[*B, size]``."""
    module = nn.LSTMCell(size, recurrent_kernel_init=orthogonal())

    def zeros(batch_shape: tuple[int, ...]) -> Carry:
        return (jnp.zeros((*batch_shape, size)), jnp.zeros((*batch_shape, size)))

    return _flax_cell("lstm", size, module, zeros)


def gru(size: int) -> MemoryCell:
    """Flax's ``GRUCell`` of ``size`` units; carry ``h`` ``[*B, size]``."""
    module = nn.GRUCell(size, recurrent_kernel_init=orthogonal())
    return _flax_cell("gru", size, module, lambda batch_shape: jnp.zeros((*batch_shape, size)))


MINGRU_Z_BIAS = -2.0  # minGRU's update-gate bias at init (module docstring)


def mingru(size: int) -> MemoryCell:
    """minGRU (Feng et al. 2024) of ``size`` units; carry ``h`` ``[*B, size]``;
    ``params = {"z": {"kernel", "bias"}, "h": {"kernel", "bias"}}``."""
    lecun = nn.initializers.lecun_normal()

    def init(key: Array, input_dim: int) -> Params:
        kz, kh = jax.random.split(key)
        dense = lambda k, b: {"kernel": lecun(k, (input_dim, size)), "bias": jnp.full((size,), b)}
        return {"z": dense(kz, MINGRU_Z_BIAS), "h": dense(kh, 0.0)}

    def zeros(batch_shape: tuple[int, ...]) -> Carry:
        return jnp.zeros((*batch_shape, size))

    def gates(params: Params, x: Array) -> tuple[Array, Array]:
        z = jax.nn.sigmoid(x @ params["z"]["kernel"] + params["z"]["bias"])
        return z, x @ params["h"]["kernel"] + params["h"]["bias"]

    def step(params: Params, carry: Carry, x: Array) -> tuple[Carry, Array]:
        z, candidate = gates(params, x)
        h = (1.0 - z) * carry + z * candidate
        return h, h

    def scan(params: Params, carry: Carry, xs: Array, starts: Array) -> tuple[Carry, Array]:
        # h_t = a_t h_{t-1} + b_t with a_t = 1 - z_t (0 where an episode starts: the zero
        # carry), b_t = z_t h~_t; the pairs compose as (a2 a1, a2 b1 + b2).
        z, candidate = gates(params, xs)
        a = jnp.where(starts[..., None], 0.0, 1.0 - z)
        b = z * candidate

        def compose(first, second):
            return second[0] * first[0], second[0] * first[1] + second[1]

        a_cum, b_cum = jax.lax.associative_scan(compose, (a, b))
        h = a_cum * carry + b_cum
        return h, h

    return MemoryCell("mingru", size, init, zeros, step, scan)


CELLS: dict[str, Callable[[int], MemoryCell]] = {"lstm": lstm, "gru": gru, "mingru": mingru}


def make_cell(name: str, size: int) -> MemoryCell:
    """The cell ``name`` (``CELLS``) of ``size`` units; ``ConfigError`` (one line) for a
    name that is not a cell."""
    if name not in CELLS:
        near = difflib.get_close_matches(name, CELLS, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        valid = ", ".join(f"'{n}'" for n in CELLS)
        raise ConfigError(f"unknown cell '{name}'{hint}: the cells are {valid}")
    return CELLS[name](size)


class Memory(nn.Module):
    """A ``MemoryCell`` as a Flax layer, its parameters under ``"cell"``.

    ``Memory(cell)(carry, x [*B, D]) -> (carry, y [*B, size])`` takes one step;
    ``Memory(cell)(carry, xs [T, *B, D], starts [T, *B]) -> (carries, ys [T, *B, size])``
    runs ``cell.scan`` over a sequence (both forms share the parameters)."""

    cell: MemoryCell

    @nn.compact
    def __call__(self, carry: Carry, x: Array, starts: Array | None = None) -> tuple[Carry, Array]:
        params = self.param("cell", lambda key: self.cell.init(key, x.shape[-1]))
        if starts is None:
            return self.cell.step(params, carry, x)
        return self.cell.scan(params, carry, x, starts)
