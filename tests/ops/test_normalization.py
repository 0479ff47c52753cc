"""Running mean/variance (Chan's parallel update) and reward scaling against NumPy."""

import jax.numpy as jnp
import numpy as np

from jaxrl.ops.normalization import (
    init_running_stats,
    normalize,
    scale_rewards,
    update_running_stats,
)


def test_running_stats_equal_statistics_of_everything_seen():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 5, 3)) for n in (1, 7, 40)]
    stats = init_running_stats((3,))
    for b in batches:
        stats = update_running_stats(stats, jnp.asarray(b, jnp.float32))
    data = np.concatenate(batches).reshape(-1, 3)
    # The initial count of 1e-4 (mean 0, var 1) perturbs the result by ~1e-5.
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(stats.count, len(data) + 1e-4, rtol=1e-6)
    x = rng.normal(size=(2, 3)) * 100
    ref = np.clip((x - stats.mean) / np.sqrt(stats.var + 1e-8), -10, 10)
    np.testing.assert_allclose(normalize(stats, jnp.asarray(x, jnp.float32)), ref, rtol=1e-5)


def test_scale_rewards_matches_reference():
    rng = np.random.default_rng(1)
    T, N, gamma = 6, 3, 0.9
    rewards = rng.normal(size=(T, N)) * 5
    done = rng.random((T, N)) < 0.2
    g0 = rng.normal(size=N)
    g, seen = g0.copy(), []
    for t in range(T):
        g = g * gamma + rewards[t]
        seen.append(g.copy())
        g = np.where(done[t], 0.0, g)
    stats0 = init_running_stats()
    stats, g_out, scaled = scale_rewards(
        stats0, jnp.asarray(g0, jnp.float32), jnp.asarray(rewards, jnp.float32), done, gamma
    )
    seen = np.array(seen).ravel()
    count = 1e-4 + seen.size
    mean = seen.mean() * seen.size / count
    var = (1e-4 + seen.var() * seen.size + seen.mean() ** 2 * 1e-4 * seen.size / count) / count
    np.testing.assert_allclose(stats.var, var, rtol=1e-4)
    np.testing.assert_allclose(stats.mean, mean, rtol=1e-4)
    np.testing.assert_allclose(g_out, g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scaled, np.clip(rewards / np.sqrt(var + 1e-8), -10, 10), rtol=1e-4)
