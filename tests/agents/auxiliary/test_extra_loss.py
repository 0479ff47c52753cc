"""A user's extra loss (``jaxrl.agents.ExtraLoss``, ``tests/user_extra_losses.py``) on DQN:
its gradient added to the agent's exactly as a NumPy reference of the term says (SGD, one
step), its ``on_metrics`` seeing the update's metrics, its data group sampled per update,
and the mistakes (not importable, not an ``ExtraLoss``, a loss of the wrong shape) as one
ConfigError line on DQN and SAC."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec
from tests import user_extra_losses
from tests.helpers import random_transitions

SPEC = EnvSpec("vec", (3,), "float32", Discrete(2), 2, 100)
KW = dict(learning_starts=4, batch_size=4, buffer_size=16, hidden_sizes=(8,), optimizer="sgd")
KW.update(updates_per_rollout=1, lr=0.1)
USER = "tests.user_extra_losses:"


def _rollout():
    """``[2, 2]`` transitions of ``SPEC``, no episode ends."""
    draw = lambda rng, shape: jnp.asarray(rng.integers(0, 2, shape), jnp.int32)
    return random_transitions(np.random.default_rng(0), (2, 2), (3,), draw, ends=False)


@pytest.fixture(scope="module")
def stepped():
    """plain DQN and DQN with ``l2`` and ``reference_mean``: initial state, state and metrics
    after one update (one SGD step on the same batch)."""
    made = [
        agents.make("dqn", SPEC, **KW),
        agents.make("dqn", SPEC, **KW, extra_losses=(USER + "l2", USER + "reference_mean")),
    ]
    out = []
    for agent in made:
        state = jax.jit(agent.init)(jax.random.PRNGKey(0))
        out.append((state, *jax.jit(agent.update)(state, _rollout(), jax.random.PRNGKey(1))))
    return out


def test_the_terms_gradient_is_added_to_the_agents(stepped):
    (first, plain, _), (first_x, extra, metrics) = stepped
    for a, b in zip(jax.tree.leaves(first.params), jax.tree.leaves(first_x.params), strict=True):
        np.testing.assert_array_equal(a, b)  # the same start: the term draws no agent key
    w, lr = 0.01, 0.1
    p0 = [np.asarray(p, np.float64) for p in jax.tree.leaves(first.params)]
    want_norm2 = sum((p**2).sum() for p in p0)
    np.testing.assert_allclose(float(metrics["l2/norm2"]), want_norm2, rtol=1e-6)
    leaves = zip(p0, jax.tree.leaves(plain.params), jax.tree.leaves(extra.params), strict=True)
    for p, got_plain, got_extra in leaves:  # d/dp (w sum p^2) = 2 w p, times -lr (SGD)
        want = np.asarray(got_plain, np.float64) - lr * 2 * w * p
        np.testing.assert_allclose(got_extra, want, rtol=0, atol=2e-7)
    pairs = zip(jax.tree.leaves(plain.params), jax.tree.leaves(extra.params), strict=True)
    moved = [np.abs(a - b).max() for a, b in pairs]
    assert max(moved) > 1e-4  # the term moved the weights (not the zero-initialized biases)


def test_on_metrics_sees_the_updates_metrics_and_the_data_group_is_sampled(stepped):
    (_, _, plain_metrics), (_, state, metrics) = stepped
    assert float(metrics["l2/seen_loss"]) == float(metrics["loss"])
    assert "l2/seen_loss" not in plain_metrics and "l2/seen_loss" not in metrics.get("l2", {})
    data = np.asarray(state.aux["reference_mean"]["data"])
    np.testing.assert_array_equal(data, user_extra_losses.REFERENCE)
    # 4 rows drawn with replacement: their mean is that of 4 of REFERENCE's rows
    means = user_extra_losses.REFERENCE.mean(1)  # a row's mean, 0.5 + 2 i
    total = float(metrics["reference_mean/rows_mean"]) * 4
    assert total == pytest.approx(round((total - 2) / 2) * 2 + 2, abs=1e-4)
    assert means.min() <= total / 4 <= means.max()


PIXELS_SAC = EnvSpec("vec", (3,), "float32", Box((1,), (-1.0,), (1.0,)), 1, 100)


@pytest.mark.parametrize("agent", ["dqn", "sac"])
@pytest.mark.parametrize(
    "name, fragment",
    [
        ("per_row_loss", "extra loss 'per_row_loss' must return (float scalar loss"),
        ("not_a_loss", "must return a jaxrl.agents.ExtraLoss, got function"),
        ("nothing", "module 'tests.user_extra_losses' has no function 'nothing'"),
        ("l2x", "has no function 'l2x'"),
    ],
)
def test_mistakes_are_one_line_config_errors(agent, name, fragment):
    spec = SPEC if agent == "dqn" else PIXELS_SAC
    with pytest.raises(ConfigError, match="^agent") as e:
        agents.make(agent, spec, hidden_sizes=(8,), extra_losses=(USER + name,))
    assert fragment in str(e.value) and "\n" not in str(e.value)
