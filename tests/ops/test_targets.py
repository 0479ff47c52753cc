"""Target updates against plain-Python references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops import soft_update


def _params(rng, lead=()):
    return {
        "dense": {
            "kernel": rng.normal(size=(*lead, 3, 4)).astype(np.float32),
            "bias": rng.normal(size=(*lead, 4)).astype(np.float32),
        },
        "scale": rng.normal(size=lead).astype(np.float32),
    }


def _soft_ref(target, online, tau):
    def leaf(t, o):
        out = np.empty(t.size)
        for i, (a, b) in enumerate(zip(t.ravel(), o.ravel(), strict=True)):
            out[i] = (1.0 - tau) * float(a) + tau * float(b)
        return out.reshape(t.shape)

    return jax.tree.map(leaf, target, online)


def _assert_tree_close(a, b, **kw):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(x, y, **kw)


@pytest.mark.parametrize("tau", [0.0, 0.005, 0.3, 1.0])
def test_soft_update(tau):
    rng = np.random.default_rng(0)
    target, online = _params(rng), _params(rng)
    got = jax.jit(soft_update)(target, online, jnp.float32(tau))
    _assert_tree_close(got, _soft_ref(target, online, tau), rtol=1e-6, atol=1e-7)
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(got))


def test_soft_update_vmapped_tau_and_params():
    rng = np.random.default_rng(1)
    target, online = _params(rng, (3,)), _params(rng, (3,))
    taus = np.array([0.01, 0.5, 1.0], np.float32)
    got = jax.vmap(soft_update)(target, online, taus)
    for i in range(3):
        sl = lambda tree, i=i: jax.tree.map(lambda x: x[i], tree)
        _assert_tree_close(
            sl(got), _soft_ref(sl(target), sl(online), float(taus[i])), rtol=1e-6, atol=1e-7
        )


def test_hysteretic_target_against_numpy():
    from jaxrl.ops import hysteretic_target

    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 7)).astype(np.float32)
    y = rng.normal(size=(7,)).astype(np.float32)
    got = hysteretic_target(jnp.asarray(q), jnp.asarray(y), 0.3, 0.8)
    want = np.where(y - q > 0, q + 0.3 * (y - q), q + 0.8 * (y - q))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(
        hysteretic_target(jnp.asarray(q), jnp.asarray(y), 1, 1),
        np.broadcast_to(y, q.shape),
        rtol=1e-6,
    )
    assert float(jax.grad(lambda v: hysteretic_target(v, 1.0, 0.5, 0.5))(0.0)) == 0.0
