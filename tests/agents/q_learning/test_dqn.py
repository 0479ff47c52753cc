"""DQN: the update pipeline (replay windows, n-step targets, learning start, target
updates) checked against values computed by hand from the network's outputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.q_learning.dqn import make_q_network
from jaxrl.types import ConfigError, Transition

TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, max_grad_norm=None)


def spec(num_envs=1):
    return envs.make("CartPole-v1", num_envs=num_envs).spec


def rollout(rng, t, n, terminated=None, truncated=None):
    obs = rng.normal(size=(t, n, 4)).astype(np.float32)
    zeros = np.zeros((t, n), bool)
    return Transition(
        obs=jnp.asarray(obs),
        action=jnp.asarray(rng.integers(0, 2, size=(t, n)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(t, n)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(t, n, 4)), jnp.float32),
        terminated=jnp.asarray(zeros if terminated is None else terminated),
        truncated=jnp.asarray(zeros if truncated is None else truncated),
        extras={},
    )


def huber(x):
    return np.where(abs(x) <= 1, 0.5 * x**2, abs(x) - 0.5)


@pytest.mark.parametrize(
    "done_at, kind",
    [(None, None), (1, "terminated"), (1, "truncated"), (0, "terminated")],
)
@pytest.mark.parametrize("double", [False, True])
def test_n_step_loss_matches_hand_computation(done_at, kind, double):
    # One env, 3 steps, a 3-step window and a 3-row buffer: every sample is the window
    # starting at row 0, so the reported loss is that window's TD loss at the initial params.
    gamma, n = 0.9, 3
    agent = agents.make(
        "dqn",
        spec(),
        **TINY | dict(n_step=n, buffer_size=3, learning_starts=0, double=double, gamma=gamma),
    )
    rng = np.random.default_rng(0)
    flags = np.zeros((n, 1), bool)
    if done_at is not None:
        flags[done_at, 0] = True
    data = rollout(rng, n, 1, **({kind: flags} if kind else {}))
    state = jax.jit(agent.init)(jax.random.PRNGKey(1))
    _, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(2))

    net = make_q_network(spec(), (8,), False)
    q = lambda o: np.asarray(net.apply(state.params, jnp.asarray(o)))
    r = np.asarray(data.reward)[:, 0]
    m = n if done_at is None else done_at + 1
    target = sum(gamma**k * r[k] for k in range(m))
    if kind != "terminated":
        boot_obs = np.asarray(data.next_obs)[m - 1, 0][None]
        q_next = q(boot_obs)[0]  # target params == params at init
        target += gamma**m * q_next[np.argmax(q(boot_obs)[0] if double else q_next)]
    q_taken = q(np.asarray(data.obs)[0, 0][None])[0, int(data.action[0, 0])]
    np.testing.assert_allclose(float(metrics["loss"]), huber(q_taken - target), rtol=1e-4)


def test_learning_starts_and_hard_target_update():
    agent = agents.make(
        "dqn", spec(2), **TINY | dict(learning_starts=16, target_update_period=24, lr=1e-2)
    )
    rng = np.random.default_rng(1)
    update = jax.jit(agent.update)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    init_params = state.params
    same = lambda a, b: all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))

    state, m = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(1))  # 8 env steps
    assert int(state.step) == 8 and np.isnan(float(m["loss"]))
    assert same(state.params, init_params) and int(state.updates) == 0

    state, m = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(2))  # 16: learning
    assert np.isfinite(float(m["loss"])) and int(state.updates) == 1
    assert not same(state.params, init_params)
    assert same(state.target_params, init_params)  # 24 not crossed yet

    state, m = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(3))  # 24: crossed
    assert same(state.target_params, state.params)
    state, m = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(4))  # 32: not crossed
    assert not same(state.target_params, state.params)


def test_soft_target_update():
    agent = agents.make(
        "dqn", spec(2), **TINY | dict(learning_starts=0, target_update_period=8, tau=0.25)
    )
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    old_target = state.target_params
    state, _ = jax.jit(agent.update)(
        state, rollout(np.random.default_rng(2), 4, 2), jax.random.PRNGKey(1)
    )
    want = jax.tree.map(lambda t, p: 0.75 * t + 0.25 * p, old_target, state.params)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), state.target_params, want
    )


def test_act_greedy_and_epsilon_schedule():
    agent = agents.make(
        "dqn", spec(), **TINY | dict(epsilon_start=1.0, epsilon_end=0.0, epsilon_decay_steps=100)
    )
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(512, 4)), jnp.float32)
    greedy = np.argmax(np.asarray(make_q_network(spec(), (8,), False).apply(state.params, obs)), 1)
    act = jax.jit(agent.act, static_argnums=4)
    np.testing.assert_array_equal(
        np.asarray(act(state, obs, (), jax.random.PRNGKey(1), False)[0]), greedy
    )
    explore = np.asarray(act(state, obs, (), jax.random.PRNGKey(1), True)[0])
    assert 0.35 < (explore != greedy).mean() < 0.65  # epsilon 1 at step 0: half differ
    decayed = state.replace(step=jnp.int32(100))
    np.testing.assert_array_equal(
        np.asarray(act(decayed, obs, (), jax.random.PRNGKey(2), True)[0]), greedy
    )


def test_dueling_option_selects_the_dueling_head():
    shapes = lambda **kw: jax.tree.map(
        jnp.shape, agents.make("dqn", spec(), **TINY | kw).init(jax.random.PRNGKey(0)).params
    )["params"]["head"]
    assert shapes(dueling=True) == {
        "Dense_0": {"bias": (1,), "kernel": (8, 1)},  # value stream
        "Dense_1": {"bias": (2,), "kernel": (8, 2)},  # advantage stream
    }
    assert shapes(dueling=False) == {"Dense_0": {"bias": (2,), "kernel": (8, 2)}}


def test_continuous_env_and_bad_options_are_config_errors():
    pendulum = envs.make("Pendulum", num_envs=1).spec
    with pytest.raises(ConfigError, match="discrete action space.*Pendulum-v1"):
        agents.make("dqn", pendulum)
    with pytest.raises(ConfigError, match="unknown option 'learning_rte'.*valid options: .*lr"):
        agents.make("dqn", spec(), learning_rte=1e-3)
    with pytest.raises(ConfigError, match="option 'n_step': expected int"):
        agents.make("dqn", spec(), n_step="three")
    with pytest.raises(ConfigError, match="tau must be in"):
        agents.make("dqn", spec(), tau=0.0)


def test_param_noise_scale_follows_the_kl_threshold_and_perturbed_greedy_acting():
    # A high epsilon (a loose threshold) lets sigma grow; epsilon 0 (threshold 0) shrinks it.
    for eps, factor in ((1.0, 1.01), (0.0, 1 / 1.01)):
        opts = dict(param_noise=True, epsilon_start=eps, epsilon_end=eps, learning_starts=2)
        agent = agents.make("dqn", spec(2), **TINY, **opts)
        state = jax.jit(agent.init)(jax.random.PRNGKey(0))
        update, rng = jax.jit(agent.update), np.random.default_rng(0)
        sigmas = []
        for i in range(3):
            state, metrics = update(state, rollout(rng, 2, 2), jax.random.PRNGKey(i))
            sigmas.append(float(metrics["param_noise_sigma"]))
        np.testing.assert_allclose(sigmas, 0.01 * factor ** np.arange(1, 4), rtol=1e-5)
    assert float(metrics["param_noise_distance"]) > 0  # the KL of two different nets
    net = make_q_network(spec(2), (8,), False)
    # Exploring is greedy in the perturbed network (epsilon 0), evaluation in the online one.
    obs = jnp.asarray(rng.normal(size=(64, 4)), jnp.float32)
    noisy_q = net.apply(state.param_noise["params"], obs)
    explored = agent.act(state, obs, (), jax.random.PRNGKey(5), True)[0]
    np.testing.assert_array_equal(explored, np.argmax(noisy_q, -1))
    greedy = agent.act(state, obs, (), jax.random.PRNGKey(5), False)[0]
    np.testing.assert_array_equal(greedy, np.argmax(net.apply(state.params, obs), -1))
