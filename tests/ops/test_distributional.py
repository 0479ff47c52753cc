"""Categorical (C51) ops against plain-Python loops (Bellemare et al. 2017, Algorithm 1)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops.distributional import (
    categorical_double_q_target,
    categorical_projection,
    categorical_q_values,
    categorical_support,
    categorical_td_loss,
)
from tests.references import c51_project, softmax

projection_jit = jax.jit(categorical_projection)
double_q_target_jit = jax.jit(categorical_double_q_target)


def test_support():
    z = categorical_support(-10.0, 10.0, 51)
    assert z.dtype == jnp.float32 and z.shape == (51,)
    np.testing.assert_allclose(np.asarray(z), np.linspace(-10, 10, 51), atol=1e-6)
    with pytest.raises(ValueError, match="num_atoms"):
        categorical_support(0.0, 1.0, 1)
    with pytest.raises(ValueError, match="v_min < v_max"):
        categorical_support(1.0, 1.0, 5)


def test_projection_matches_algorithm_1():
    # Support -5..5 with dz = 1, so integer targets land exactly on atoms.
    z = np.linspace(-5.0, 5.0, 11)
    rng = np.random.default_rng(0)
    # (reward, discount) per row: Tz = r + d z.
    rows = [
        (1.0, 1.0),  # every atom shifted onto the next one; the top two pile on v_max
        (0.0, 0.5),  # z / 2: half on atoms, half midway between two
        (2.3, 0.0),  # terminal: all mass 0.7 on atom 2, 0.3 on atom 3
        (2.0, 0.0),  # terminal, exactly on an atom (l == u)
        (7.0, 0.0),  # terminal above v_max
        (-100.0, 0.0),  # terminal below v_min
        (-20.0, 1.0),  # every atom below v_min
        (3.0, 2.0),  # partly above v_max
    ]
    rows += [(rng.uniform(-8, 8), rng.uniform(0, 1)) for _ in range(8)]
    r = np.array([a for a, _ in rows])
    d = np.array([b for _, b in rows])
    tz = r[:, None] + d[:, None] * z[None, :]
    p = rng.dirichlet(np.ones(11), size=len(rows))
    got = np.asarray(
        projection_jit(z.astype(np.float32), tz.astype(np.float32), p.astype(np.float32))
    )
    want = np.stack([c51_project(z, tz[i], p[i]) for i in range(len(rows))])
    np.testing.assert_allclose(got, want, atol=2e-6)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, atol=1e-5)
    assert (got >= 0).all()
    # Spot checks that do not depend on the reference.
    np.testing.assert_allclose(got[2, 7:9], [0.7, 0.3], atol=1e-6)  # atoms 2, 3 are z_7, z_8
    np.testing.assert_allclose(got[3, 7], 1.0, atol=1e-6)
    np.testing.assert_allclose(got[4, -1], 1.0, atol=1e-6)
    np.testing.assert_allclose(got[5, 0], 1.0, atol=1e-6)


def test_projection_leading_axes_and_uneven_float_spacing():
    z = np.linspace(-10.0, 10.0, 51)  # dz = 0.4, not exact in binary
    rng = np.random.default_rng(1)
    tz = rng.uniform(-13, 13, size=(2, 3, 51))
    tz[0, 0] = z  # identity: on the atoms
    p = rng.dirichlet(np.ones(51), size=(2, 3))
    got = np.asarray(
        categorical_projection(z.astype(np.float32), tz.astype(np.float32), p.astype(np.float32))
    )
    assert got.shape == (2, 3, 51)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(got[idx], c51_project(z, tz[idx], p[idx]), atol=2e-5)
    np.testing.assert_allclose(got[0, 0], p[0, 0], atol=2e-5)
    with pytest.raises(ValueError, match="target_support"):
        categorical_projection(z, tz[..., :50], p[..., :50])


def test_q_values_and_td_loss():
    rng = np.random.default_rng(2)
    z = np.linspace(-2.0, 3.0, 6).astype(np.float32)
    logits = rng.normal(size=(4, 3, 6)).astype(np.float32) * 3
    q = np.asarray(categorical_q_values(logits, z))
    for b, a in np.ndindex(4, 3):
        assert q[b, a] == pytest.approx(float(np.dot(softmax(logits[b, a]), z)), abs=1e-5)

    online = logits[:, 0]  # [B, K]
    target = rng.dirichlet(np.ones(6), size=4).astype(np.float32)

    def total(lg, tp):
        return categorical_td_loss(lg, tp).sum()

    loss = np.asarray(categorical_td_loss(online, target))
    assert loss.shape == (4,)
    for b in range(4):
        log_p = np.log(softmax(online[b]))
        want = -sum(float(target[b, i]) * log_p[i] for i in range(6))
        assert loss[b] == pytest.approx(want, rel=1e-5)
    g_logits, g_target = jax.grad(total, argnums=(0, 1))(online, target)
    want_g = np.stack([softmax(online[b]) for b in range(4)]) - target
    np.testing.assert_allclose(np.asarray(g_logits), want_g, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(g_target), 0.0)  # target is stop-gradient


def test_double_q_target_matches_reference():
    rng = np.random.default_rng(3)
    B, A, K = 16, 4, 51
    z = np.linspace(-10.0, 10.0, K)
    logits = rng.normal(size=(B, A, K)) * 2
    selector = rng.normal(size=(B, A))
    reward_sum = rng.uniform(-12, 12, size=B)
    discount = rng.choice([0.0, 0.99**3, 1.0], size=B)
    discount[:3] = 0.0  # terminal windows
    args = [x.astype(np.float32) for x in (logits, selector, reward_sum, discount, z)]

    def reference(sel):
        out = np.zeros((B, K))
        for b in range(B):
            a_star = int(np.argmax(sel[b]))
            p = softmax(logits[b, a_star])
            tz = [reward_sum[b] + discount[b] * z[j] for j in range(K)]
            out[b] = c51_project(z, tz, p)
        return out

    got = np.asarray(double_q_target_jit(*args))
    np.testing.assert_allclose(got, reference(selector), atol=2e-5)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, atol=1e-5)

    # Without a selector: the target network's own expected values (C51's argmax).
    own_q = np.array([[np.dot(softmax(logits[b, a]), z) for a in range(A)] for b in range(B)])
    assert (own_q.argmax(1) != selector.argmax(1)).any()  # so the two cases differ
    got_own = np.asarray(categorical_double_q_target(args[0], None, *args[2:]))
    np.testing.assert_allclose(got_own, reference(own_q), atol=2e-5)

    # A terminal window puts all mass at clip(reward_sum), whatever the next distribution.
    for b in range(3):
        pos = (min(max(reward_sum[b], -10.0), 10.0) + 10.0) / 0.4  # fractional atom index
        lo, frac = math.floor(pos), pos - math.floor(pos)
        want = np.zeros(K)
        want[lo] = 1.0 - frac
        if frac > 0:
            want[lo + 1] = frac
        np.testing.assert_allclose(got[b], want, atol=2e-5)

    # The target is a constant for the learner.
    weights = np.arange(K, dtype=np.float32)
    grad = jax.grad(lambda lg: (categorical_double_q_target(lg, *args[1:]) * weights).sum())(
        args[0]
    )
    np.testing.assert_array_equal(np.asarray(grad), 0.0)
