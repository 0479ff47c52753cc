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
