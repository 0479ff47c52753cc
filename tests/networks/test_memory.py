"""The memory cells (networks/memory.py) against NumPy references of their equations: one
step from a non-zero carry, and a sequence with resets where episodes start (``scan``),
against a Python loop over steps that resets the carry to zeros there."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.networks.memory import CELLS, Memory, make_cell
from jaxrl.types import ConfigError

H, B, T, D = 5, 3, 7, 4


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _dense(p, x, bias=True):
    return x @ p["kernel"] + (p["bias"] if bias else 0.0)


def np_lstm(p, carry, x):
    """Flax's LSTMCell, gate by gate (names i, f, g, o; input kernels without bias)."""
    p = p["params"]
    c, h = carry
    gate = lambda n: _dense(p[f"i{n}"], x, bias=False) + _dense(p[f"h{n}"], h)
    i, f, o = _sigmoid(gate("i")), _sigmoid(gate("f")), _sigmoid(gate("o"))
    c = f * c + i * np.tanh(gate("g"))
    h = o * np.tanh(c)
    return (c, h), h


def np_gru(p, h, x):
    """Flax's GRUCell: r, z from input and hidden; n with r gating the hidden's term."""
    p = p["params"]
    r = _sigmoid(_dense(p["ir"], x) + _dense(p["hr"], h, bias=False))
    z = _sigmoid(_dense(p["iz"], x) + _dense(p["hz"], h, bias=False))
    n = np.tanh(_dense(p["in"], x) + r * _dense(p["hn"], h))
    h = (1.0 - z) * n + z * h
    return h, h


def np_mingru(p, h, x):
    """Feng et al. 2024, section 3.1: z = sigmoid(W_z x), h~ = W_h x, h' = (1-z) h + z h~."""
    z = _sigmoid(_dense(p["z"], x))
    h = (1.0 - z) * h + z * _dense(p["h"], x)
    return h, h


REFERENCES = {"lstm": np_lstm, "gru": np_gru, "mingru": np_mingru}


@pytest.fixture(scope="module", params=sorted(CELLS))
def cell_run(request):
    """A cell, its parameters, a non-zero carry, inputs, episode starts and the outputs
    of its jitted ``step`` (at t = 0) and ``scan``."""
    cell = make_cell(request.param, H)
    params = cell.init(jax.random.PRNGKey(0), D)
    carry = jax.tree.map(lambda z: z + 0.4, cell.init_carry((B,)))
    xs = jax.random.normal(jax.random.PRNGKey(1), (T, B, D))
    starts = np.zeros((T, B), bool)
    starts[0, 2] = starts[3, 0] = starts[4, 0] = starts[5, 1] = True
    step = jax.jit(cell.step)(params, carry, xs[0])
    scan = jax.jit(cell.scan)(params, carry, xs, jnp.asarray(starts))
    as_np = lambda tree: jax.tree.map(np.asarray, tree)
    return cell, as_np(params), as_np(carry), np.asarray(xs), starts, as_np(step), as_np(scan)


def _close(a, b):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6), a, b)


def test_one_step_matches_the_equations(cell_run):
    cell, params, carry, xs, _, (new_carry, y), _ = cell_run
    ref_carry, ref_y = REFERENCES[cell.name](params, carry, xs[0])
    _close(y, ref_y)
    _close(new_carry, ref_carry)
    assert y.shape == (B, H) and y.dtype == np.float32


def test_scan_resets_where_an_episode_starts(cell_run):
    """``scan`` equals a loop of the reference that sets an env's carry to zeros before a
    step that starts an episode; the same loop without resets differs after the first
    reset, so the resets matter."""
    cell, params, carry, xs, starts, _, (carries, ys) = cell_run
    zeros = jax.tree.map(np.asarray, cell.init_carry((B,)))
    for reset in (True, False):
        c, outs, states = carry, [], []
        for t in range(T):
            if reset:
                c = jax.tree.map(lambda a, z, t=t: np.where(starts[t][:, None], z, a), c, zeros)
            c, y = REFERENCES[cell.name](params, c, xs[t])
            outs.append(y)
            states.append(c)
        if reset:
            _close(ys, np.stack(outs))
            _close(carries, jax.tree.map(lambda *s: np.stack(s), *states))
        else:  # env 1 runs unreset until t = 5; env 2 starts at t = 0
            _close(ys[:5, 1], np.stack(outs)[:5, 1])
            assert not np.allclose(ys[:, 2], np.stack(outs)[:, 2], atol=1e-4)


def test_memory_layer_shares_its_parameters_between_step_and_scan(cell_run):
    """``Memory(cell)`` as a Flax layer: one parameter set (``"cell"``), its step the
    cell's step and its sequence form the cell's scan."""
    cell, params, carry, xs, starts, (_, y), (_, ys) = cell_run
    layer = Memory(cell)
    variables = {"params": {"cell": params}}
    _, got = layer.apply(variables, carry, xs[0])
    _close(got, y)
    _, got_seq = layer.apply(variables, carry, xs, jnp.asarray(starts))
    _close(got_seq, ys)
    init = layer.init(jax.random.PRNGKey(0), carry, xs[0])
    assert jax.tree.map(np.shape, init["params"]["cell"]) == jax.tree.map(np.shape, params)


def test_unknown_cell_is_one_line():
    with pytest.raises(ConfigError, match=r"^unknown cell 'gur' \(did you mean 'gru'\?\): the "):
        make_cell("gur", 8)
