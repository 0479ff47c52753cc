import jax
import numpy as np
import pytest

from jaxrl.ops.q_learning import q_learning_td_error


def reference(q_taken, next_q_target, reward_sum, discount, next_q_online):
    out = np.zeros_like(q_taken)
    for i in range(len(q_taken)):
        if next_q_online is None:
            value = max(next_q_target[i])
        else:
            best = max(range(next_q_online.shape[1]), key=lambda a: next_q_online[i, a])
            value = next_q_target[i, best]
        out[i] = q_taken[i] - (reward_sum[i] + discount[i] * value)
    return out


@pytest.mark.parametrize("double", [False, True])
def test_matches_numpy(double):
    rng = np.random.default_rng(0)
    b, a = 32, 5
    q_taken = rng.normal(size=b).astype(np.float32)
    next_q_target = rng.normal(size=(b, a)).astype(np.float32)
    next_q_online = rng.normal(size=(b, a)).astype(np.float32) if double else None
    reward_sum = rng.normal(size=b).astype(np.float32)
    discount = (rng.uniform(size=b) * (rng.uniform(size=b) > 0.3)).astype(np.float32)
    got = q_learning_td_error(q_taken, next_q_target, reward_sum, discount, next_q_online)
    want = reference(q_taken, next_q_target, reward_sum, discount, next_q_online)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_double_differs_from_max_and_gradient_only_through_q_taken():
    next_q_target = np.array([[1.0, 5.0]], np.float32)
    next_q_online = np.array([[3.0, 0.0]], np.float32)
    args = (np.zeros(1, np.float32), next_q_target, np.zeros(1, np.float32), np.ones(1, np.float32))
    assert float(q_learning_td_error(*args)[0]) == -5.0
    assert float(q_learning_td_error(*args, next_q_online)[0]) == -1.0
    grads = jax.grad(lambda q, t: q_learning_td_error(q, t, *args[2:]).sum(), argnums=(0, 1))(
        args[0], next_q_target
    )
    np.testing.assert_array_equal(np.asarray(grads[0]), [1.0])
    np.testing.assert_array_equal(np.asarray(grads[1]), np.zeros((1, 2)))


def _log_pi_ref(q_row, tau, legal):
    m = max(q_row[a] / tau for a in legal)
    z = sum(np.exp(q_row[a] / tau - m) for a in legal)
    return {a: q_row[a] / tau - m - np.log(z) for a in legal}


@pytest.mark.parametrize("masked", [False, True])
def test_munchausen_target_matches_numpy(masked):
    from jaxrl.ops import munchausen_target

    rng = np.random.default_rng(3)
    b, a = 8, 4
    alpha, tau, l0 = 0.9, 0.5, -1.0  # tau large enough that the clip binds only sometimes
    q, next_q = rng.normal(size=(2, b, a)).astype(np.float32)
    action = rng.integers(0, a, b)
    reward = rng.normal(size=b).astype(np.float32)
    discount = np.where(rng.uniform(size=b) < 0.3, 0.0, 0.99).astype(np.float32)
    mask = rng.uniform(size=(b, a)) < 0.6 if masked else np.ones((b, a), bool)
    mask[np.arange(b), action] = True
    next_mask = rng.uniform(size=(b, a)) < 0.6 if masked else np.ones((b, a), bool)
    next_mask[:, 0] = True
    want = np.zeros(b)
    for i in range(b):
        legal = [x for x in range(a) if mask[i, x]]
        next_legal = [x for x in range(a) if next_mask[i, x]]
        bonus = alpha * min(max(tau * _log_pi_ref(q[i], tau, legal)[action[i]], l0), 0.0)
        lp = _log_pi_ref(next_q[i], tau, next_legal)
        soft = sum(np.exp(lp[x]) * (next_q[i, x] - tau * lp[x]) for x in next_legal)
        want[i] = reward[i] + bonus + discount[i] * soft
    got = munchausen_target(
        q, action, reward, discount, next_q, alpha, tau, l0,
        mask if masked else None, next_mask if masked else None,
    )  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The clip binds for some rows: the floor alpha * l_0 is reached.
    from jaxrl.ops import munchausen_bonus

    bonus = np.asarray(munchausen_bonus(q, action, alpha, 0.03, l0, None))
    assert np.isclose(bonus.min(), alpha * l0) and bonus.max() <= 0


def test_soft_bootstrap_tends_to_the_max():
    from jaxrl.ops import soft_bootstrap_value

    q = np.array([[1.0, 3.0, 2.0]], np.float32)
    np.testing.assert_allclose(soft_bootstrap_value(q, 1e-4), [3.0], rtol=1e-4)
