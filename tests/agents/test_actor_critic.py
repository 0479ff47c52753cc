"""The shared off-policy skeleton: warm-up actions, exploration noise in normalized units,
replay insertion, the learning gate, updates per step and the carried OU state."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.ops.noise import ou_step
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, Transition

LOW, HIGH = np.array([-1.0, -2.0], np.float32), np.array([1.0, 4.0], np.float32)
CENTRE, HALF = (HIGH + LOW) / 2, (HIGH - LOW) / 2
SPEC = EnvSpec("Box2", (3,), "float32", Box((2,), tuple(LOW), tuple(HIGH)), 2, 10)
TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=32)
OBS = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3)), jnp.float32)


def rollout(rng, t=1, n=2, done=None):
    flags = np.zeros((t, n), bool) if done is None else done
    return Transition(
        obs=jnp.asarray(rng.normal(size=(t, n, 3)), jnp.float32),
        action=jnp.asarray(rng.uniform(LOW, HIGH, size=(t, n, 2)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=(t, n)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(t, n, 3)), jnp.float32),
        terminated=jnp.asarray(flags),
        truncated=jnp.zeros((t, n), bool),
        extras={},
    )


def policy_action(agent_name, state):
    from jaxrl.networks.continuous import DeterministicActor

    return DeterministicActor(2, (8,)).apply(state.learner.actor_params, OBS)


def test_warm_up_is_uniform_in_the_box_then_the_policy():
    agent = agents.make("td3", SPEC, **TINY, learning_starts=5, exploration_noise="none")
    state = agent.init(jax.random.PRNGKey(0))
    act = jax.jit(agent.act, static_argnums=4)
    keys = jax.random.split(jax.random.PRNGKey(1), 2000)
    warm = np.asarray(jax.vmap(lambda k: act(state, OBS, (), k, True)[0])(keys))
    want = CENTRE + HALF * np.asarray(policy_action("td3", state))
    assert (warm >= LOW).all() and (warm <= HIGH).all()
    np.testing.assert_allclose(warm.reshape(-1, 2).mean(0), CENTRE, atol=0.1)
    np.testing.assert_allclose(warm.reshape(-1, 2).std(0), HALF / np.sqrt(3), rtol=0.05)
    # Greedy actions never warm up; after learning_starts exploring acts by the policy.
    np.testing.assert_allclose(act(state, OBS, (), keys[0], False)[0], want, rtol=1e-6)
    later = state.replace(step=jnp.asarray(5, jnp.int32))
    np.testing.assert_allclose(act(later, OBS, (), keys[0], True)[0], want, rtol=1e-6)


def test_gaussian_noise_is_added_in_normalized_units_per_dimension():
    sigma = (0.1, 0.3)
    agent = agents.make("td3", SPEC, **TINY, learning_starts=0, noise_sigma=sigma)
    state = agent.init(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(7)
    action, _, extras = agent.act(state, OBS, (), key, True)
    noise_key = jax.random.split(key, 3)[1]
    eps = np.asarray(jax.random.normal(noise_key, (2, 2)))
    pi = np.asarray(policy_action("td3", state))
    want = CENTRE + HALF * np.clip(pi + np.array(sigma) * eps, -1, 1)
    np.testing.assert_allclose(action, want, rtol=1e-5, atol=1e-6)
    assert extras == {}


def test_update_stores_normalized_actions_and_gates_learning():
    agent = agents.make("sac", SPEC, **TINY, learning_starts=4, updates_per_step=3)
    state = agent.init(jax.random.PRNGKey(0))
    update = jax.jit(agent.update)
    rng = np.random.default_rng(0)
    data = rollout(rng)
    new, metrics = update(state, data, jax.random.PRNGKey(1))
    assert int(new.step) == 2 and int(new.learner.updates) == 0
    assert all(np.isnan(float(v)) for v in metrics.values())
    chex_equal = jax.tree.map(np.array_equal, new.learner.actor_params, state.learner.actor_params)
    assert all(jax.tree.leaves(chex_equal))
    stored = np.asarray(new.buffer.data.action[0])
    np.testing.assert_allclose(stored, (np.asarray(data.action[0]) - CENTRE) / HALF, rtol=1e-6)
    new, metrics = update(new, rollout(rng), jax.random.PRNGKey(2))  # step 4: learns
    assert int(new.step) == 4 and int(new.learner.updates) == 3  # updates_per_step * T
    assert all(np.isfinite(float(v)) for v in metrics.values())


def test_ou_state_is_the_carry():
    opts = dict(exploration_noise="ou", noise_sigma=(0.3, 0.5), noise_theta=0.2, noise_dt=0.1)
    agent = agents.make("ddpg", SPEC, **TINY, learning_starts=100, **opts)
    state = agent.init(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(agent.init_carry(3), np.zeros((3, 2), np.float32))
    carry = jnp.array([[0.5, -0.5], [1.0, 2.0]])
    key = jax.random.PRNGKey(3)
    _, new_carry, extras = agent.act(state, OBS, carry, key, True)
    want, _ = ou_step(carry, jax.random.split(key, 3)[1], 0.0, jnp.array([0.3, 0.5]), 0.2, 0.1)
    np.testing.assert_allclose(new_carry, want, rtol=1e-6)
    assert extras == {}
    # Greedy acting leaves the noise alone; the stateless noises carry nothing.
    np.testing.assert_array_equal(agent.act(state, OBS, carry, key, False)[1], carry)
    assert agents.make("td3", SPEC, **TINY).init_carry(2) == ()


@pytest.mark.parametrize("name", ["sac", "td3", "ddpg"])
def test_user_mistakes_raise_config_error(name):
    discrete = EnvSpec("CartPole-v1", (4,), "float32", Discrete(2), 1, 500)
    with pytest.raises(ConfigError, match="continuous"):
        agents.make(name, discrete)
    with pytest.raises(ConfigError, match="noise_sigma"):
        agents.make(name, SPEC, noise_sigma=(0.1, 0.2, 0.3))
    with pytest.raises(ConfigError, match="unknown option"):
        agents.make(name, SPEC, learning_rate=1e-3)


IMAGE_SPEC = EnvSpec("img", (8, 8, 2), "uint8", Box((1,), (-1.0,), (1.0,)), 1, 10)
CONV = dict(
    torso={"channels": [4], "kernel_sizes": [3], "strides": [2]},
    feature_dim=6,
    hidden_sizes=(8,),
    batch_size=4,
    buffer_size=4,
    learning_starts=0,
)


@pytest.mark.parametrize("name", ["sac", "td3", "ddpg"])
def test_conv_encoders_of_actor_and_each_critic_are_trained(name):
    agent = agents.make(name, IMAGE_SPEC, **CONV, **({"policy_delay": 1} if name == "td3" else {}))
    state = agent.init(jax.random.PRNGKey(0))
    lr = state.learner
    actor_enc = lr.actor_params["params"]["SpecTorso_0"]
    critic_enc = lr.critic_params["params"]["critics"]["SpecTorso_0"]
    k = 1 if name == "ddpg" else 2
    assert actor_enc["Conv_0"]["kernel"].shape == (3, 3, 2, 4)
    assert critic_enc["Conv_0"]["kernel"].shape == (k, 3, 3, 2, 4)  # one per critic
    assert lr.actor_params["params"]["MLP_0"]["Dense_0"]["kernel"].shape == (6, 8)
    rng = np.random.default_rng(0)
    frames = lambda: jnp.asarray(rng.integers(0, 256, (1, 1, 8, 8, 2)), jnp.uint8)  # noqa: E731
    data = Transition(
        obs=frames(),
        action=jnp.full((1, 1, 1), 0.5, jnp.float32),
        reward=jnp.ones((1, 1)),
        next_obs=frames(),
        terminated=jnp.zeros((1, 1), bool),
        truncated=jnp.zeros((1, 1), bool),
        extras={},
    )
    new, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(1))
    assert all(np.isfinite(v).all() for v in jax.tree.leaves(metrics))
    moved = lambda a, b: not np.array_equal(a["Conv_0"]["kernel"], b["Conv_0"]["kernel"])  # noqa: E731
    assert moved(new.learner.actor_params["params"]["SpecTorso_0"], actor_enc)
    assert moved(new.learner.critic_params["params"]["critics"]["SpecTorso_0"], critic_enc)


def test_vector_observations_keep_the_encoderless_networks():
    agent = agents.make("sac", EnvSpec("v", (3,), "float32", Box((1,), (-1.0,), (1.0,)), 1, 10))
    params = agent.init(jax.random.PRNGKey(0)).learner.actor_params["params"]
    assert sorted(params) == ["MLP_0", "log_std", "mean"]
