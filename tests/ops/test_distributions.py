"""Categorical and diagonal-Gaussian log-probabilities and entropies against closed forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops import distributions as D


def test_categorical_log_prob_entropy_mode_match_closed_forms():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 3)).astype(np.float32) * 3
    actions = rng.integers(0, 3, size=5)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(
        D.categorical_log_prob(jnp.asarray(logits), jnp.asarray(actions)),
        np.log(p[np.arange(5), actions]),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        D.categorical_entropy(jnp.asarray(logits)), -(p * np.log(p)).sum(-1), rtol=1e-5
    )
    np.testing.assert_array_equal(D.categorical_mode(jnp.asarray(logits)), logits.argmax(-1))
    # Uniform logits: entropy log(A).
    np.testing.assert_allclose(D.categorical_entropy(jnp.zeros(4)), math.log(4), rtol=1e-6)


def test_categorical_sample_frequencies_follow_the_probabilities():
    logits = jnp.log(jnp.array([0.2, 0.5, 0.3]))
    samples = D.categorical_sample(jax.random.PRNGKey(0), jnp.broadcast_to(logits, (20_000, 3)))
    assert samples.dtype == jnp.int32
    freq = np.bincount(np.asarray(samples), minlength=3) / 20_000
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.015)


def test_gaussian_log_prob_and_entropy_match_closed_forms():
    rng = np.random.default_rng(1)
    mean = rng.normal(size=(6, 2)).astype(np.float32)
    log_std = rng.normal(size=(2,)).astype(np.float32) * 0.5
    action = rng.normal(size=(6, 2)).astype(np.float32)
    std = np.exp(log_std)
    ref = np.sum(-((action - mean) ** 2) / (2 * std**2) - np.log(std * np.sqrt(2 * np.pi)), axis=-1)
    np.testing.assert_allclose(
        D.gaussian_log_prob(jnp.asarray(mean), jnp.asarray(log_std), jnp.asarray(action)),
        ref,
        rtol=1e-5,
    )
    ent = np.sum(0.5 * np.log(2 * np.pi * np.e * std**2)) * np.ones(6)
    np.testing.assert_allclose(
        D.gaussian_entropy(jnp.asarray(mean), jnp.asarray(log_std)), ent, rtol=1e-5
    )
    np.testing.assert_array_equal(D.gaussian_mode(jnp.asarray(mean), jnp.asarray(log_std)), mean)


def test_gaussian_sample_moments():
    mean = jnp.array([1.0, -2.0])
    log_std = jnp.log(jnp.array([0.5, 2.0]))
    x = D.gaussian_sample(jax.random.PRNGKey(0), jnp.broadcast_to(mean, (50_000, 2)), log_std)
    np.testing.assert_allclose(np.asarray(x).mean(0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(np.asarray(x).std(0), [0.5, 2.0], rtol=0.02)


def test_categorical_mask_gives_illegal_actions_zero_probability_and_finite_entropy():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(6, 4)).astype(np.float32) * 3
    mask = rng.random((6, 4)) < 0.5
    mask[np.arange(6), rng.integers(0, 4, 6)] = True  # at least one legal action per row
    mask[0] = [False, False, True, False]  # one legal action only
    masked = D.categorical_mask(jnp.asarray(logits), jnp.asarray(mask))
    # Reference: the softmax over the legal actions alone.
    p = np.where(mask, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    p /= p.sum(-1, keepdims=True)
    logp = np.log(np.where(mask, p, 1.0))
    actions = np.argmax(np.where(mask, rng.random((6, 4)), -1), -1)  # a legal action per row
    np.testing.assert_allclose(
        D.categorical_log_prob(masked, jnp.asarray(actions)),
        logp[np.arange(6), actions],
        rtol=1e-5,
        atol=1e-6,
    )
    entropy = np.asarray(D.categorical_entropy(masked))
    np.testing.assert_allclose(entropy, -(p * logp).sum(-1), rtol=1e-5, atol=1e-6)
    assert entropy[0] == 0.0
    np.testing.assert_array_equal(
        D.categorical_mode(masked), np.where(mask, logits, -np.inf).argmax(-1)
    )
    keys = jax.random.split(jax.random.PRNGKey(0), 500)
    samples = np.asarray(jax.vmap(D.categorical_sample, (0, None))(keys, masked))
    assert mask[np.arange(6), samples].all() and (samples[:, 0] == 2).all()
    np.testing.assert_array_equal(D.categorical_mask(jnp.asarray(logits), None), logits)
