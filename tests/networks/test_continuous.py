"""Continuous-control networks against NumPy forward passes."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.networks.continuous import (
    CriticEnsemble,
    DeterministicActor,
    QCritic,
    SquashedGaussianActor,
)


def dense(p, x):
    return x @ np.asarray(p["kernel"], np.float64) + np.asarray(p["bias"], np.float64)


def np_mlp(p, x, names):
    for name in names:
        x = np.maximum(dense(p[name], x), 0.0)
    return x


OBS = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
ACT = np.random.default_rng(1).uniform(-1, 1, size=(5, 2)).astype(np.float32)


def test_deterministic_actor_is_tanh_of_mlp():
    net = DeterministicActor(2, (8, 6))
    p = net.init(jax.random.PRNGKey(0), OBS)["params"]
    h = np_mlp(p["MLP_0"], OBS, ("Dense_0", "Dense_1"))
    np.testing.assert_allclose(
        net.apply({"params": p}, OBS), np.tanh(dense(p["Dense_0"], h)), rtol=1e-5, atol=1e-6
    )


def test_squashed_gaussian_actor_clips_log_std():
    net = SquashedGaussianActor(2, (8,), log_std_min=-1.0, log_std_max=0.5)
    p = net.init(jax.random.PRNGKey(0), OBS)["params"]
    big = jax.tree.map(lambda x: x * 100.0, p)
    mean, log_std = net.apply({"params": big}, OBS)
    h = np_mlp(big["MLP_0"], OBS, ("Dense_0",))
    np.testing.assert_allclose(mean, dense(big["mean"], h), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(log_std, np.clip(dense(big["log_std"], h), -1.0, 0.5), rtol=1e-5)
    assert (np.asarray(log_std) == -1.0).any() and (np.asarray(log_std) == 0.5).any()


def test_critic_ensemble_members_are_independent_q_critics():
    ens = CriticEnsemble(num_critics=3, hidden_sizes=(8, 4))
    p = ens.init(jax.random.PRNGKey(0), OBS, ACT)["params"]
    q = np.asarray(ens.apply({"params": p}, OBS, ACT))
    assert q.shape == (3, 5)
    single = QCritic((8, 4))
    x = np.concatenate([OBS, ACT], axis=-1)
    for k in range(3):
        member = jax.tree.map(lambda leaf, k=k: leaf[k], p["critics"])
        want = dense(member["Dense_0"], np_mlp(member["MLP_0"], x, ("Dense_0", "Dense_1")))[:, 0]
        np.testing.assert_allclose(q[k], want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(single.apply({"params": member}, OBS, ACT), want, rtol=1e-5)
    assert not np.allclose(q[0], q[1])  # separately initialized
    assert jnp.shape(ens.apply({"params": p}, OBS[0], ACT[0])) == (3,)
