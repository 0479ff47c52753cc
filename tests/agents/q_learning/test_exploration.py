"""The Q-learning agent's exploration (``agents/q_learning/exploration.py``): epsilon-greedy's
epsilon in each case, and one adaptation of DQN's parameter-space noise against a NumPy
reference of the KL, the epsilon-greedy threshold and the scale's rule (the noise draws
are ``ops.param_noise.perturb_params``', tested in ``tests/ops/test_param_noise.py``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents.q_learning.config import Exploration, QHparams
from jaxrl.agents.q_learning.dqn import DQNConfig
from jaxrl.agents.q_learning.exploration import adapt_param_noise, current_epsilon
from jaxrl.ops.param_noise import perturb_params

CFG = DQNConfig(epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=100, param_noise=True)
H = QHparams(*(jnp.float32(x) for x in (1e-3, 0.99, 1.0, 1.0, 0.1, 0.05)))


def test_current_epsilon_evaluates_schedules_and_turns_off():
    eps = lambda x, step, explore: float(current_epsilon(CFG, x, H, jnp.int32(step), 4, explore))
    assert eps(Exploration(), 40, False) == pytest.approx(0.05)  # eval_epsilon
    assert eps(Exploration(by_epsilon=False), 40, True) == 0.0
    assert eps(Exploration(), 40, True) == pytest.approx(1.0 - 0.9 * 40 / 100)
    assert eps(Exploration(), 400, True) == pytest.approx(0.1)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("epsilon, grows", [(1.0, True), (0.0, False)])
def test_adapt_param_noise_matches_numpy(epsilon, grows):
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(6, 4)).astype(np.float32)
    params = {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32)}
    q_values = lambda p: jnp.asarray(obs) @ p["w"]
    sigma = jnp.float32(0.1)
    noise = {"params": params, "sigma": sigma, "distance": jnp.float32(0)}
    probe_key, acting_key = jax.random.PRNGKey(1), jax.random.PRNGKey(2)
    out = adapt_param_noise(CFG, noise, params, q_values, epsilon, 3, probe_key, acting_key)

    probe = np.asarray(perturb_params(probe_key, params, sigma)["w"], np.float64)
    p, q = _softmax(obs @ np.asarray(params["w"], np.float64)), _softmax(obs @ probe)
    kl = np.mean(np.sum(p * (np.log(p) - np.log(q)), -1))
    threshold = -np.log(1 - epsilon + epsilon / 3)
    assert (kl <= threshold) == grows
    new_sigma = 0.1 * 1.01 if grows else 0.1 / 1.01
    np.testing.assert_allclose(float(out["distance"]), kl, rtol=1e-4)
    np.testing.assert_allclose(float(out["sigma"]), new_sigma, rtol=1e-6)
    expected = perturb_params(acting_key, params, out["sigma"])["w"]
    np.testing.assert_array_equal(np.asarray(out["params"]["w"]), np.asarray(expected))


def test_an_explorer_chooses_the_exploring_actions_and_evaluation_stays_greedy():
    """``make_q_agent(explorer=...)``: the strategy's ``select`` picks every exploring
    action (here always the last legal one, from the values and the mask it is given);
    ``explore=False`` is epsilon-greedy at ``eval_epsilon`` (0: the argmax)."""
    from jaxrl import envs
    from jaxrl.agents.common.param_noise import no_param_noise
    from jaxrl.agents.common.replay_choice import make_replay
    from jaxrl.agents.q_learning.core import make_q_agent
    from jaxrl.agents.q_learning.exploration import Explorer
    from jaxrl.agents.q_learning.value_heads import expected_value_head

    seen = {}

    def last_action(key, q_values, epsilon, mask):
        seen["shape"], seen["mask"] = q_values.shape, mask
        return jnp.full(q_values.shape[:1], q_values.shape[-1] - 1, jnp.int32)

    env = envs.make("CartPole-v1", num_envs=3)
    cfg = DQNConfig(eval_epsilon=0.0)
    buffer = make_replay(env.spec, cfg, "dqn", "auto", prioritized=False)
    agent = make_q_agent(
        env.spec, cfg, expected_value_head(), buffer,
        explorer=Explorer(noise=no_param_noise(), select=last_action),
    )  # fmt: skip
    state = agent.init(jax.random.PRNGKey(0))
    obs = env.reset(jax.random.PRNGKey(1))[1].obs
    explored, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(2))
    greedy, _, extras = agent.act(state, obs, (), jax.random.PRNGKey(2), explore=False)
    np.testing.assert_array_equal(explored, [1, 1, 1])
    assert seen == {"shape": (3, 2), "mask": None}
    np.testing.assert_array_equal(greedy, np.argmax(np.asarray(extras["q_values"]), -1))
