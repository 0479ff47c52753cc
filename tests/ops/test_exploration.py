"""epsilon_greedy: exact greedy limit, uniform limit, and mixing frequency."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops import epsilon_greedy

epsilon_greedy_jit = jax.jit(epsilon_greedy)


def _argmax_ref(q):
    out = np.zeros(q.shape[0], np.int64)
    for i in range(q.shape[0]):
        best = 0
        for a in range(1, q.shape[1]):
            if q[i, a] > q[i, best]:
                best = a
        out[i] = best
    return out


def _chi2(counts, expected):
    return float(np.sum((counts - expected) ** 2 / expected))


def test_epsilon_zero_is_argmax():
    q = np.random.default_rng(0).normal(size=(500, 6)).astype(np.float32)
    got = epsilon_greedy_jit(jax.random.key(0), q, 0.0)
    assert got.shape == (500,) and got.dtype == jnp.int32
    np.testing.assert_array_equal(got, _argmax_ref(q))


def test_epsilon_one_is_uniform():
    N, A = 40_000, 5
    q = np.tile(np.arange(A, dtype=np.float32), (N, 1))  # greedy action is always A-1
    got = np.asarray(epsilon_greedy_jit(jax.random.key(1), q, jnp.float32(1.0)))
    counts = np.bincount(got, minlength=A)
    assert counts.shape == (A,)
    # chi-square with A-1 = 4 degrees of freedom: P(chi2 > 18.47) = 0.001. A policy that
    # favoured the greedy action by even 2% of the mass would score ~ 80 here.
    assert _chi2(counts, N / A) < 18.47, counts


def test_intermediate_epsilon_greedy_frequency():
    N, A, eps = 40_000, 4, 0.3
    q = np.random.default_rng(2).normal(size=(N, A)).astype(np.float32)
    greedy = _argmax_ref(q)
    got = np.asarray(epsilon_greedy_jit(jax.random.key(2), q, eps))
    p = 1 - eps + eps / A
    freq = np.mean(got == greedy)
    assert abs(freq - p) < 4 * np.sqrt(p * (1 - p) / N), (freq, p)  # ~0.009
    # Non-greedy actions are spread uniformly over the other A-1 actions.
    other = (got - greedy) % A
    counts = np.bincount(other[other > 0], minlength=A)[1:]
    assert _chi2(counts, counts.sum() / (A - 1)) < 13.82  # df=2, p=0.001


def test_vmapped_epsilon_and_keys():
    q = np.random.default_rng(3).normal(size=(8, 3)).astype(np.float32)
    keys = jax.random.split(jax.random.key(4), 2)
    f = jax.jit(jax.vmap(epsilon_greedy, in_axes=(0, None, 0)))
    got = np.asarray(f(keys, q, jnp.array([0.0, 1.0])))
    np.testing.assert_array_equal(got[0], _argmax_ref(q))
    assert ((got[1] >= 0) & (got[1] < 3)).all()
