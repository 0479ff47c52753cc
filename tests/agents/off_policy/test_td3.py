"""TD3 and DDPG: the critic target (with and without target policy smoothing) against a
NumPy computation from the networks' outputs, the delayed actor and target updates, and
training on Pendulum through the fused runner."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.networks.continuous import CriticEnsemble, DeterministicActor
from jaxrl.ops.noise import clipped_gaussian_noise
from jaxrl.runners.base import RunConfig
from jaxrl.runners.scan import make_train
from jaxrl.types import Box, EnvSpec, Transition
from tests.helpers import one_line_error, train_into

LOW, HIGH = np.array([-1.0, -2.0], np.float32), np.array([1.0, 4.0], np.float32)
SPEC = EnvSpec("Box2", (3,), "float32", Box((2,), tuple(LOW), tuple(HIGH)), 1, 10)
# A one-transition buffer: every sampled row is that transition.
TINY = dict(hidden_sizes=(8,), batch_size=5, buffer_size=1, learning_starts=0)


def one_transition(seed, terminated):
    rng = np.random.default_rng(seed)
    return Transition(
        obs=jnp.asarray(rng.normal(size=(1, 1, 3)), jnp.float32),
        action=jnp.asarray(rng.uniform(LOW, HIGH, size=(1, 1, 2)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=(1, 1)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(1, 1, 3)), jnp.float32),
        terminated=jnp.full((1, 1), terminated),
        truncated=jnp.zeros((1, 1), bool),
        extras={},
    )


def step_key(update_key):
    """The key of the first gradient step inside ``update`` (the skeleton's split order)."""
    return jax.random.split(jax.random.split(update_key, 1)[0])[1]


@pytest.mark.parametrize(
    "name, options, terminated",
    [
        ("td3", dict(policy_noise=0.0, reward_scale=2.0), True),
        ("td3", dict(policy_noise=0.5, noise_clip=0.3), False),  # smoothing on, clip active
        ("ddpg", dict(), False),
    ],
)
def test_critic_loss_matches_numpy(name, options, terminated):
    gamma = 0.9
    agent = agents.make(name, SPEC, **TINY, gamma=gamma, **options)
    cfg = agents.entry(name).config(**TINY, gamma=gamma, **options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    data = one_transition(1, terminated)
    key = jax.random.PRNGKey(2)
    _, metrics = jax.jit(agent.update)(state, data, key)

    actor = DeterministicActor(2, (8,))
    critic = CriticEnsemble(cfg.num_critics, (8,))
    lr = state.learner
    b = TINY["batch_size"]
    obs, next_obs = jnp.repeat(data.obs[0], b, 0), jnp.repeat(data.next_obs[0], b, 0)
    action = np.repeat(np.asarray(data.action[0]), b, 0)
    action = (action - (HIGH + LOW) / 2) / ((HIGH - LOW) / 2)
    next_action = np.asarray(actor.apply(lr.target_actor_params, next_obs), np.float64)
    noise = clipped_gaussian_noise(
        step_key(key), (b, 2), 0.0, cfg.policy_noise, -cfg.noise_clip, cfg.noise_clip
    )
    noise = np.asarray(noise, np.float64)
    assert (np.abs(noise) <= cfg.noise_clip + 1e-7).all()
    if cfg.policy_noise > 0:
        assert np.isclose(np.abs(noise), cfg.noise_clip).any() and (noise != 0).all()
    next_action = np.clip(next_action + noise, -1, 1)
    next_q = np.asarray(critic.apply(lr.target_critic_params, next_obs, next_action), np.float64)
    assert next_q.shape == (cfg.num_critics, b)
    y = cfg.reward_scale * float(data.reward[0, 0]) + gamma * (1 - terminated) * next_q.min(0)
    q = np.asarray(critic.apply(lr.critic_params, obs, jnp.asarray(action)), np.float64)
    want = ((q - y) ** 2).mean(-1).sum()
    np.testing.assert_allclose(float(metrics["critic_loss"]), want, rtol=1e-5)


def test_policy_and_target_updates_are_delayed():
    agent = agents.make("td3", SPEC, **TINY, policy_delay=3, tau=0.5)
    update = jax.jit(agent.update)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    changed = lambda a, b: not all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))
    actor_steps, critic_steps = [], []
    for i in range(1, 7):
        new, metrics = update(state, one_transition(i, False), jax.random.PRNGKey(i))
        old, cur = state.learner, new.learner
        moved = changed(old.actor_params, cur.actor_params)
        assert moved == changed(old.target_actor_params, cur.target_actor_params)
        assert moved == changed(old.target_critic_params, cur.target_critic_params)
        assert moved == bool(np.isfinite(metrics["actor_loss"]))
        actor_steps.append(moved)
        critic_steps.append(changed(old.critic_params, cur.critic_params))
        state = new
    assert actor_steps == [False, False, True, False, False, True]
    assert all(critic_steps) and int(state.learner.updates) == 6


@pytest.mark.parametrize("name", ["td3", "ddpg"])
def test_trains_on_pendulum_in_the_fused_runner(name):
    env = envs.make("Pendulum", num_envs=2)
    agent = agents.make(name, env.spec, hidden_sizes=(16,), batch_size=16, learning_starts=100)
    run = RunConfig(steps=300, log_every=20, eval_every=300, eval_episodes=2)
    state, metrics = jax.jit(make_train(agent, env, run))(jax.random.PRNGKey(0))
    learned = np.asarray(metrics["step"]) >= 100
    assert np.isnan(metrics["critic_loss"][~learned]).all()
    assert np.isfinite(metrics["critic_loss"][learned]).all()
    assert int(state.agent_state.learner.updates) == learned.sum()
    assert np.isfinite(metrics["eval_return"][-1])


@pytest.mark.parametrize("agent", ["ddpg", "td3"])
def test_discrete_actions_are_refused_with_machins_equivalent_named(tmp_path, capsys, agent):
    """machin's DDPG acts in discrete spaces through a softmax actor (``act_discrete``);
    jaxrl's acts in boxes: one line naming the agents for discrete actions, exit code 2."""
    assert train_into(tmp_path, "--agent", agent, "--env", "CartPole") == (2, [])
    one_line_error(capsys, "for discrete actions use dqn, rainbow, ppo or a2c", "act_discrete")
