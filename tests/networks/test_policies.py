"""Actor-critic networks: output shapes, shared and separate torsos, log-std parameter."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.networks.policies import ActorCritic


def count(params):
    return sum(x.size for x in jax.tree.leaves(params))


def test_discrete_separate_torsos():
    net = ActorCritic(action_dim=3, discrete=True, hidden_sizes=(8, 8))
    obs = jnp.ones((5, 4))
    params = net.init(jax.random.PRNGKey(0), obs)
    logits, value = net.apply(params, obs)
    assert logits.shape == (5, 3) and value.shape == (5,)
    # Two torsos (4*8+8 + 8*8+8 each), a policy head (8*3+3) and a value head (8+1).
    assert count(params) == 2 * (40 + 72) + 27 + 9
    np.testing.assert_allclose(net.apply(params, obs, method=ActorCritic.actor), logits)
    np.testing.assert_allclose(net.apply(params, obs, method=ActorCritic.critic), value)


def test_continuous_shared_torso_with_state_independent_log_std():
    net = ActorCritic(
        action_dim=2, discrete=False, hidden_sizes=(8,), shared=True, log_std_init=-0.5
    )
    obs = jax.random.normal(jax.random.PRNGKey(1), (5, 3))
    params = net.init(jax.random.PRNGKey(0), obs)
    (mean, log_std), value = net.apply(params, obs)
    assert mean.shape == (5, 2) and value.shape == (5,)
    np.testing.assert_allclose(log_std, [-0.5, -0.5])
    assert count(params) == (3 * 8 + 8) + (8 * 2 + 2) + (8 + 1) + 2
    np.testing.assert_allclose(net.apply(params, obs, method=ActorCritic.critic), value)
    # The policy head starts near zero (orthogonal init with gain 0.01).
    assert np.abs(np.asarray(mean)).max() < 0.1


def test_image_observations_use_the_nature_cnn():
    net = ActorCritic(action_dim=4, discrete=True, hidden_sizes=(16,), shared=True, torso="nature")
    obs = jnp.zeros((2, 84, 84, 4), jnp.uint8)
    params = net.init(jax.random.PRNGKey(0), obs)
    logits, value = net.apply(params, obs)
    assert logits.shape == (2, 4) and value.shape == (2,)
    assert "Conv_0" in params["params"]["actor_torso"]
