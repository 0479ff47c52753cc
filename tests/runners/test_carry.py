"""The per-env carry in the fused runner: a recurrent agent trains with it and sees it
reset to ``init_carry`` exactly where an episode ended; DDPG's Ornstein-Uhlenbeck noise
(its carry) works with ``rollout_len > 1``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.runners import RunConfig, make_train
from jaxrl.types import Agent, main_obs, masked_argmax

HIDDEN = 3


def recurrent_agent(obs_dim: int, num_actions: int) -> Agent:
    """A tiny recurrent Q-learner: ``h' = tanh(h W + x U)``, values ``h' V``, trained by
    SGD to predict the reward of the action taken. ``update`` recomputes the hidden
    states of the rollout from its first carry, resetting where an episode ended, and
    reports how far they are from those ``act`` used (0 when the runner's resets match)."""

    def init(key):
        k1, k2, k3 = jax.random.split(key, 3)
        params = {
            "W": 0.5 * jax.random.normal(k1, (HIDDEN, HIDDEN)),
            "U": 0.5 * jax.random.normal(k2, (obs_dim, HIDDEN)),
            "V": 0.1 * jax.random.normal(k3, (HIDDEN, num_actions)),
        }
        return {"params": params}

    def cell(params, h, x):
        return jnp.tanh(h @ params["W"] + x @ params["U"])

    def act(state, obs, carry, key, explore=True):
        h = cell(state["params"], carry, main_obs(obs))
        action = masked_argmax(h @ state["params"]["V"], None)
        return action, h, {"carry": carry, "hidden": h}

    def update(state, rollout, key):
        done = rollout.terminated | rollout.truncated  # [T, N]
        carry_in = rollout.extras["carry"]
        after_done = jnp.concatenate([jnp.zeros_like(done[:1]), done[:-1]])
        params = state["params"]

        def hidden_states(params):
            def step(h, inputs):
                x, restart = inputs
                h = jnp.where(restart[:, None], 0.0, h)
                h = cell(params, h, x)
                return h, h

            return jax.lax.scan(step, carry_in[0], (rollout.obs, after_done))[1]

        def loss_fn(params):
            q = hidden_states(params) @ params["V"]
            q_taken = jnp.take_along_axis(q, rollout.action[..., None], -1)[..., 0]
            return jnp.mean((q_taken - rollout.reward) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        params = jax.tree.map(lambda p, g: p - 0.5 * g, params, grads)
        return {"params": params}, {
            "loss": loss,
            "carry_error": jnp.abs(hidden_states(state["params"]) - rollout.extras["hidden"]).max(),
            "carry_after_done": jnp.abs(jnp.where(after_done[..., None], carry_in, 0.0)).max(),
            "carry_size": jnp.abs(carry_in).mean(),
            "restarts": after_done.sum().astype(jnp.float32),
        }

    return Agent(init, act, update, init_carry=lambda n: jnp.zeros((n, HIDDEN)))


@pytest.fixture(scope="module")
def recurrent_run():
    env = envs.make("CartPole-v1", num_envs=3, max_episode_steps=7)
    agent = recurrent_agent(4, 2)
    config = RunConfig(steps=3 * 4 * 30, rollout_len=4, log_every=3 * 4 * 10, eval_every=0)
    state, metrics = jax.jit(make_train(agent, env, config))(jax.random.PRNGKey(0))
    return agent, state, jax.tree.map(np.asarray, metrics)


def test_recurrent_agent_sees_its_carry_reset_at_episode_ends(recurrent_run):
    _, _, metrics = recurrent_run
    assert metrics["restarts"].sum() > 10  # episodes of at most 7 steps ended
    np.testing.assert_array_equal(metrics["carry_after_done"], 0.0)
    assert (metrics["carry_size"] > 0.01).all()  # the carry is really carried
    np.testing.assert_allclose(metrics["carry_error"], 0.0, atol=1e-6)


def test_recurrent_agent_trains_in_the_fused_runner(recurrent_run):
    agent, state, metrics = recurrent_run
    assert metrics["loss"][-5:].mean() < 0.5 * metrics["loss"][:5].mean()
    assert state.carry.shape == (3, HIDDEN)


def test_ou_noise_with_rollout_len_above_one():
    env = envs.make("Pendulum-v1", num_envs=2, max_episode_steps=5)
    agent = agents.make(
        "ddpg", env.spec, hidden_sizes=(8,), batch_size=8, buffer_size=64, learning_starts=16
    )

    def final_carry(env_steps_per_env):
        config = RunConfig(steps=2 * env_steps_per_env, rollout_len=4, log_every=8, eval_every=0)
        state, metrics = jax.jit(make_train(agent, env, config))(jax.random.PRNGKey(1))
        assert np.isfinite(np.asarray(metrics["critic_loss"])[-1])
        return np.asarray(state.carry)

    # 20 steps per env: the 4th episode has just ended, so the OU state is back at 0;
    # 24 steps: 4 steps into the 5th episode, it has moved.
    np.testing.assert_array_equal(final_carry(20), 0.0)
    assert np.abs(final_carry(24)).min() > 0
