"""The Gumbel-softmax relaxation against NumPy, and its argmax as a categorical sample."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.ops.gumbel import TINY, gumbel_noise, gumbel_softmax, relaxed_sample


def test_gumbel_softmax_against_numpy():
    key = jax.random.PRNGKey(0)
    logits = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], np.float32)
    u = np.asarray(jax.random.uniform(key, logits.shape, jnp.float32), np.float64)
    g = -np.log(-np.log(u + TINY) + TINY)
    for tau in (1.0, 0.5):
        z = (logits + g) / tau
        expected = np.exp(z - z.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        got = gumbel_softmax(key, jnp.asarray(logits), tau)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gumbel_noise(key, logits.shape), g, rtol=1e-5)
    np.testing.assert_allclose(relaxed_sample(jnp.asarray(logits), 0.0 * g, 1.0).sum(-1), 1.0)


def test_argmax_is_a_categorical_sample():
    logits = jnp.log(jnp.array([0.2, 0.5, 0.3]))
    keys = jax.random.split(jax.random.PRNGKey(1), 8000)
    samples = jax.vmap(lambda k: jnp.argmax(gumbel_softmax(k, logits, 1.0)))(keys)
    freq = np.bincount(np.asarray(samples), minlength=3) / len(keys)
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.025)  # ~4.5 sigma
