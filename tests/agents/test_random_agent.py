import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.types import ConfigError, Transition


def act_on_zeros(env: str, n: int):
    """The random agent's ``act`` on ``n`` all-zero observations of ``env``."""
    spec = envs.make(env, num_envs=n).spec
    agent = agents.make("random", spec)
    obs = np.zeros((n, *spec.obs_shape), np.float32)
    return agent.act(jax.jit(agent.init)(jax.random.PRNGKey(0)), obs, (), jax.random.PRNGKey(1))


def test_discrete_actions_uniform_over_all_actions():
    action, _, extras = act_on_zeros("Acrobot", 3000)
    counts = np.bincount(np.asarray(action), minlength=3)
    assert action.shape == (3000,) and extras == {} and counts.size == 3
    assert (np.abs(counts - 1000) < 120).all()  # ~4 standard deviations


def test_box_actions_cover_the_bounds():
    action, _, _ = act_on_zeros("Pendulum", 2000)
    action = np.asarray(action)
    assert action.shape == (2000, 1)
    assert action.min() >= -2.0 and action.max() <= 2.0
    assert action.min() < -1.9 and action.max() > 1.9 and abs(action.mean()) < 0.1


def test_update_counts_steps_and_rejects_options():
    env = envs.make("CartPole", num_envs=4)
    agent = agents.make("random", env.spec)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    ts = jax.tree.map(
        lambda x: np.zeros((5, *x.shape), x.dtype), env.reset(jax.random.PRNGKey(0))[1]
    )
    batch = Transition(ts.obs, ts.reward, ts.reward, ts.obs, ts.terminated, ts.truncated, {})
    state, metrics = agent.update(state, batch, jax.random.PRNGKey(1))
    assert int(state.step) == 20 and metrics == {}
    with pytest.raises(ConfigError, match="unknown option 'lr'"):
        agents.make("random", env.spec, lr=1.0)
