"""n-step targets against plain-Python loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.ops import NStepTarget, n_step_bootstrap
from jaxrl.ops.returns import gae
from tests import references

# Jitted once per shape: far faster than op-by-op dispatch on CPU.
bootstrap_jit = jax.jit(n_step_bootstrap)


def _bootstrap_ref_1d(r, term, trunc, gamma):
    """One window, step by step: (reward_sum, bootstrap_discount, bootstrap_index)."""
    total, disc = 0.0, 1.0
    for k in range(len(r)):
        total += disc * float(r[k])
        disc *= gamma
        if term[k]:
            return total, 0.0, k
        if trunc[k]:
            return total, disc, k
    return total, disc, len(r) - 1


def _bootstrap_ref(r, term, trunc, gamma):
    batch = r.shape[:-1]
    out = [np.zeros(batch), np.zeros(batch), np.zeros(batch, np.int64)]
    for idx in np.ndindex(*batch):
        for o, v in zip(out, _bootstrap_ref_1d(r[idx], term[idx], trunc[idx], gamma), strict=True):
            o[idx] = v
    return out


def _random_flags(rng, shape, p_term=0.15, p_trunc=0.15):
    u = rng.uniform(size=shape)
    return u < p_term, (u >= p_term) & (u < p_term + p_trunc)  # never both


def _check(got: NStepTarget, ref, atol=1e-5):
    np.testing.assert_allclose(got.reward_sum, ref[0], rtol=1e-5, atol=atol)
    np.testing.assert_allclose(got.bootstrap_discount, ref[1], rtol=1e-5, atol=atol)
    np.testing.assert_array_equal(got.bootstrap_index, ref[2])
    assert got.bootstrap_index.dtype == jnp.int32


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("gamma", [0.0, 0.9, 0.99, 1.0])
def test_bootstrap_random(n, gamma):
    rng = np.random.default_rng(n * 100 + int(gamma * 100))
    shape = (64, 3, n)
    r = rng.normal(size=shape).astype(np.float32)
    term, trunc = _random_flags(rng, shape)
    got = bootstrap_jit(r, term, trunc, gamma)
    assert got.reward_sum.shape == shape[:-1] and got.reward_sum.dtype == jnp.float32
    _check(got, _bootstrap_ref(r, term, trunc, gamma))
    if n > 1:  # the random windows exercise every case
        first = np.argmax(term | trunc, -1)
        anydone = (term | trunc).any(-1)
        assert (~anydone).any() and (anydone & (first < n - 1)).any()
        assert (term.any(-1) & ~trunc.any(-1)).any() and (trunc.any(-1) & ~term.any(-1)).any()


def test_bootstrap_hand_cases():
    g = 0.5
    r = np.array(
        [
            [1.0, 2.0, 4.0, 8.0],  # no end: 1 + 1 + 1 + 1, discount g^4
            [1.0, 2.0, 4.0, 8.0],  # termination at k=1: 1 + 1, no bootstrap
            [1.0, 2.0, 4.0, 8.0],  # truncation at k=1: 1 + 1, bootstrap g^2 from index 1
            [1.0, 2.0, 4.0, 8.0],  # truncation k=0 then termination k=2: cut at 0
            [1.0, 2.0, 4.0, 8.0],  # termination k=2 then truncation k=3: cut at 2
            [1.0, 2.0, 4.0, 8.0],  # termination at the last step
        ],
        np.float32,
    )
    term = np.zeros_like(r, bool)
    trunc = np.zeros_like(r, bool)
    term[1, 1] = trunc[2, 1] = True
    trunc[3, 0] = term[3, 2] = True
    term[4, 2] = trunc[4, 3] = True
    term[5, 3] = True
    got = bootstrap_jit(r, term, trunc, g)
    np.testing.assert_allclose(got.reward_sum, [4.0, 2.0, 2.0, 1.0, 3.0, 4.0])
    np.testing.assert_allclose(got.bootstrap_discount, [g**4, 0.0, g**2, g, 0.0, 0.0])
    np.testing.assert_array_equal(got.bootstrap_index, [3, 1, 1, 0, 2, 3])
    _check(got, _bootstrap_ref(r, term, trunc, g))


def test_bootstrap_jnp_scalar_discount_jit_and_vmap():
    rng = np.random.default_rng(7)
    shape = (32, 4)
    r = rng.normal(size=shape).astype(np.float32)
    term, trunc = _random_flags(rng, shape, 0.2, 0.2)
    _check(bootstrap_jit(r, term, trunc, jnp.float32(0.97)), _bootstrap_ref(r, term, trunc, 0.97))

    gammas = np.array([0.0, 0.5, 0.9, 0.999], np.float32)
    batched = jax.vmap(n_step_bootstrap, in_axes=(None, None, None, 0))(r, term, trunc, gammas)
    batched = jax.tree.map(np.asarray, batched)
    for i, gamma in enumerate(gammas):
        _check(jax.tree.map(lambda x, i=i: x[i], batched), _bootstrap_ref(r, term, trunc, gamma))

    # A discount per window (shape [...]) broadcasts against the batch.
    per_window = rng.uniform(size=shape[:-1]).astype(np.float32)
    got = jax.tree.map(np.asarray, bootstrap_jit(r, term, trunc, per_window))
    for b in range(shape[0]):
        ref = _bootstrap_ref(r[b : b + 1], term[b : b + 1], trunc[b : b + 1], float(per_window[b]))
        _check(jax.tree.map(lambda x, b=b: x[b : b + 1], got), ref)


def test_validation():
    with pytest.raises(ValueError):
        n_step_bootstrap(np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 3)), 0.9)


def _gae_ref(r, v, nv, term, trunc, gamma, lam):
    """GAE per env, step by step backwards in plain Python."""
    T, N = r.shape
    adv = np.zeros((T, N))
    for n in range(N):
        running = 0.0
        for t in reversed(range(T)):
            bootstrap = 0.0 if term[t, n] else gamma * nv[t, n]
            delta = r[t, n] + bootstrap - v[t, n]
            if term[t, n] or trunc[t, n] or t == T - 1:
                running = delta
            else:
                running = delta + gamma * lam * running
            adv[t, n] = running
    return adv, adv + v


def test_gae_matches_reference_with_terminations_and_truncations():
    rng = np.random.default_rng(0)
    T, N = 9, 4
    r, v, nv = (rng.normal(size=(T, N)) for _ in range(3))
    term = rng.random((T, N)) < 0.15
    trunc = (rng.random((T, N)) < 0.15) & ~term
    term[-1, 0], trunc[-1, 1] = True, True  # episode ends on the rollout's last step
    adv, ret = jax.jit(gae)(r, v, nv, term, trunc, 0.97, 0.9)
    ref_adv, ref_ret = _gae_ref(r, v, nv, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)


def test_gae_bootstraps_at_truncation_and_not_at_termination():
    r = np.array([[1.0], [1.0]])
    v = np.zeros((2, 1))
    nv = np.array([[10.0], [20.0]])
    for term, expected in ((True, 1.0), (False, 1.0 + 0.5 * 10.0)):
        flags = np.array([[term], [False]])
        adv, _ = gae(r, v, nv, flags, ~flags & np.array([[True], [False]]), 0.5, 1.0)
        # Step 0 ends an episode: nothing flows back from step 1 either way.
        np.testing.assert_allclose(adv[0, 0], expected, rtol=1e-6)
        np.testing.assert_allclose(adv[1, 0], 1.0 + 0.5 * 20.0, rtol=1e-6)


def test_gae_with_lambda_one_and_no_ends_is_the_discounted_return_minus_value():
    rng = np.random.default_rng(2)
    r, v = rng.normal(size=(6, 1)), rng.normal(size=(6, 1))
    nv = np.concatenate([v[1:], [[3.0]]])
    flags = np.zeros((6, 1), bool)
    adv, ret = gae(r, v, nv, flags, flags, 0.9, 1.0)
    g = [3.0]
    for t in reversed(range(6)):
        g.insert(0, r[t, 0] + 0.9 * g[0])
    np.testing.assert_allclose(ret[:, 0], g[:6], rtol=1e-5)


def test_q_lambda_returns_match_numpy():
    from jaxrl.ops import q_lambda_returns

    rng = np.random.default_rng(7)
    T, N, gamma, lam = 6, 3, 0.9, 0.7
    r = rng.normal(size=(T, N)).astype(np.float32)
    nq = rng.normal(size=(T, N)).astype(np.float32)
    term = np.zeros((T, N), bool)
    trunc = np.zeros((T, N), bool)
    term[2, 0], trunc[3, 1], term[5, 2] = True, True, True
    got = np.asarray(q_lambda_returns(r, nq, term, trunc, gamma, lam))
    want = references.q_lambda_returns(r, nq, term, trunc, gamma, lam)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # lambda 0 is the one-step Q-learning target everywhere.
    one_step = r + gamma * np.where(term, 0.0, nq)
    np.testing.assert_allclose(
        q_lambda_returns(r, nq, term, trunc, gamma, 0.0), one_step, rtol=1e-5
    )
