"""Replay sampling strategies (``agents/common/replay_sampling.py``): uniform replay's
functions leave everything as it is; prioritized replay's exponent, importance weights and
fed-back priorities against NumPy references (Schaul et al. 2016)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.agents.common.replay_sampling import prioritized_sampling, uniform_sampling
from jaxrl.buffers import PriorityParams, make_prioritized_replay
from tests.helpers import random_transitions


def test_uniform_sampling_threads_nothing_and_weighs_nothing():
    s = uniform_sampling()
    buffer_state = {"x": jnp.arange(3)}
    assert s.threaded(buffer_state) is None
    assert s.source(buffer_state, None) is buffer_state
    assert s.knobs({"alpha": 1.0}) is None
    assert s.beta({}, jnp.int32(5)) is None
    assert s.weights(jnp.full((4,), 0.25), 4, None) == {}
    assert s.feed_back("carry", jnp.zeros(4, jnp.int32), None, {}) == "carry"
    assert s.hparams == {}


def test_prioritized_sampling_matches_numpy():
    buffer = make_prioritized_replay(8, 1, 4)
    h = {"a": jnp.float32(0.6), "e": jnp.float32(1e-3), "b": jnp.float32(0.4)}
    s = prioritized_sampling(
        buffer, 100, knobs=lambda h: PriorityParams(h["a"], h["e"]), beta_start=lambda h: h["b"]
    )
    # beta: linear from 0.4 to 1 over 100 env steps, then 1.
    for step, want in [(0, 0.4), (50, 0.7), (100, 1.0), (400, 1.0)]:
        np.testing.assert_allclose(s.beta(h, jnp.int32(step)), want, rtol=1e-6)
    # weights (N P(i)) ** -beta, divided by their largest (the paper's normalization).
    probs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    w = s.weights(jnp.asarray(probs), 4, jnp.float32(0.7))["weight"]
    ref = (4 * probs) ** -0.7
    np.testing.assert_allclose(w, ref / ref.max(), rtol=1e-5)
    # fed back: the buffer's update_priorities with the knobs read from h.
    rng = np.random.default_rng(0)
    data = random_transitions(rng, (6, 1), (2,), lambda r, sh: jnp.zeros(sh, jnp.int32))
    state = buffer.add(buffer.init(jax.tree.map(lambda x: x[0], data)), data, s.knobs(h))
    indices, priorities = jnp.array([0, 2, 5]), jnp.array([0.5, 2.0, 0.1], jnp.float32)
    got = s.feed_back(state, indices, priorities, h)
    want = buffer.update_priorities(state, indices, priorities, PriorityParams(0.6, 1e-3))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), got, want)
    assert s.threaded("buffer") == "buffer" and s.source("outside", "threaded") == "threaded"
