"""The shared off-policy skeleton: warm-up actions, exploration noise in normalized units,
replay insertion, the learning gate, updates per step and the carried OU state."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.ops.noise import ou_step
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, Transition
from tests.helpers import TINY_CONV

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
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
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
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
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
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
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
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
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
        agents.make(name, SPEC, learning_rte=1e-3)


IMAGE_SPEC = EnvSpec("img", (8, 8, 2), "uint8", Box((1,), (-1.0,), (1.0,)), 1, 10)
CONV = dict(TINY_CONV, buffer_size=4, learning_starts=0)


# DDPG is TD3's skeleton with one critic (its encoder code is TD3's): SAC and TD3 stand for it.
@pytest.mark.parametrize("name", ["sac", "td3"])
def test_conv_encoders_of_actor_and_each_critic_are_trained(name):
    agent = agents.make(name, IMAGE_SPEC, **CONV, **({"policy_delay": 1} if name == "td3" else {}))
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
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
    params = jax.jit(agent.init)(jax.random.PRNGKey(0)).learner.actor_params["params"]
    assert sorted(params) == ["MLP_0", "log_std", "mean"]


# The options of issue 17 part 4: n-step, prioritized replay, hard target updates, HDDPG.


def n_step_reference(r, term, trunc, next_v, gamma):
    """The n-step target of each window by a plain loop."""
    out = np.zeros(len(r))
    for b in range(len(r)):
        g, k = 0.0, 0
        while True:
            g += gamma**k * r[b, k]
            if term[b, k]:
                break
            if trunc[b, k] or k == r.shape[1] - 1:
                g += gamma ** (k + 1) * next_v[b, k]
                break
            k += 1
        out[b] = g
    return out


def test_n_step_batch_gives_the_n_step_target():
    from jaxrl.agents.off_policy.core import OffPolicyConfig
    from jaxrl.agents.off_policy.critics import td_target
    from jaxrl.agents.off_policy.parts import replay_batch
    from jaxrl.buffers.base import ReplaySample

    rng = np.random.default_rng(0)
    b, n, gamma, scale = 6, 3, 0.9, 2.0
    term = np.zeros((b, n), bool)
    trunc = np.zeros((b, n), bool)
    term[1, 0], term[2, 1], trunc[3, 0], trunc[4, 1], term[5, 2] = True, True, True, True, True
    window = Transition(
        obs=jnp.asarray(rng.normal(size=(b, n, 3)), jnp.float32),
        action=jnp.asarray(rng.normal(size=(b, n, 2)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=(b, n)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(b, n, 3)), jnp.float32),
        terminated=jnp.asarray(term),
        truncated=jnp.asarray(trunc),
        extras={},
    )
    zeros = jnp.zeros((b,), jnp.int32)
    sample = ReplaySample(window, zeros, zeros, zeros, jnp.full((b,), 1 / b))
    h = {"gamma": jnp.float32(gamma), "reward_scale": jnp.float32(scale)}
    batch = replay_batch(OffPolicyConfig(n_step=n), sample, jnp.int32(b), h)
    # The critic's value of a next observation: a fixed function of it, here its sum.
    next_v = np.asarray(window.next_obs).sum(-1)
    y = td_target(batch, batch.next_obs.sum(-1), h)
    want = n_step_reference(scale * np.asarray(window.reward), term, trunc, next_v, gamma)
    np.testing.assert_allclose(y, want, rtol=1e-5)
    np.testing.assert_array_equal(batch.obs, window.obs[:, 0])
    np.testing.assert_array_equal(batch.action, window.action[:, 0])
    # n_step 1 is the plain one-step batch (no discount in extras).
    one = replay_batch(OffPolicyConfig(), sample, jnp.int32(b), h)
    assert one.extras == {}
    np.testing.assert_array_equal(one.next_obs, window.next_obs[:, 0])


def test_critic_regression_weights_and_hysteresis_against_numpy():
    from jaxrl.agents.off_policy.critics import critic_regression

    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 5)).astype(np.float32)
    y = rng.normal(size=(5,)).astype(np.float32)
    w = rng.uniform(size=(5,)).astype(np.float32)
    batch = rollout(rng)._replace(extras={"weight": jnp.asarray(w)})
    loss, td = critic_regression(jnp.asarray(q), jnp.asarray(y), batch, scale=0.5)
    np.testing.assert_allclose(loss, 0.5 * (w * (q - y) ** 2).mean(-1).sum(), rtol=1e-5)
    np.testing.assert_allclose(td, np.abs(y - q).mean(0), rtol=1e-6)
    assert critic_regression(jnp.asarray(q), jnp.asarray(y), rollout(rng))[1] is None
    # Hysteresis (machin's HDDPG): the gradient is the rate times the plain one, per side.
    plain = rollout(rng)
    rates = (0.7, 0.2)
    grad = jax.grad(lambda q: critic_regression(q, jnp.asarray(y), plain, 1.0, rates)[0])
    delta = y - q
    want = -2 * np.where(delta > 0, rates[0], rates[1]) * delta / q.shape[1]
    np.testing.assert_allclose(grad(jnp.asarray(q)), want, rtol=1e-5, atol=1e-7)


def test_critic_step_is_a_gradient_step_on_the_critic_loss_against_numpy():
    """A linear ensemble ``q_k = w_k x`` and a plain gradient step (``optax.identity``):
    ``w - lr (dL/dw + added)`` with ``L = 0.5 sum_k mean_b (q_kb - y_b)^2`` towards
    ``y = reward_scale r + gamma (1 - terminated) next_value``."""
    from types import SimpleNamespace

    import optax

    from jaxrl.agents.off_policy.critics import critic_step

    rng = np.random.default_rng(2)
    f32 = lambda *shape: rng.normal(size=shape).astype(np.float32)
    b, k = 6, 2
    obs, action, reward, next_value = f32(b, 3), f32(b, 2), f32(b), f32(b)
    term = np.array([0, 1, 0, 0, 1, 0], bool)
    batch = Transition(
        *map(jnp.asarray, (obs, action, reward, f32(b, 3), term, np.zeros(b, bool))), {}
    )
    w, added = f32(k, 5), f32(k, 5)
    critic = SimpleNamespace(apply=lambda p, o, a: p["w"] @ jnp.concatenate([o, a], -1).T)
    learner = SimpleNamespace(critic_params={"w": jnp.asarray(w)}, critic_opt_state=())
    h = {"gamma": 0.9, "reward_scale": 2.0, "critic_lr": 0.1}
    args = (critic, optax.identity(), learner, batch, jnp.asarray(next_value), h)
    out = critic_step(*args, {"w": jnp.asarray(added)}, scale=0.5)
    x = np.concatenate([obs, action], -1)
    y = 2.0 * reward + 0.9 * (1.0 - term) * next_value
    q = w @ x.T
    np.testing.assert_allclose(out.params["w"], w - 0.1 * ((q - y) @ x / b + added), rtol=1e-5)
    np.testing.assert_allclose(out.loss, 0.5 * ((q - y) ** 2).mean(-1).sum(), rtol=1e-5)
    np.testing.assert_allclose(out.q_mean, q.mean(), rtol=1e-5, atol=1e-6)
    assert out.td_error is None
    plain = critic_step(*args)  # no added gradient, scale 1
    np.testing.assert_allclose(plain.params["w"], w - 0.1 * 2 * (q - y) @ x / b, rtol=1e-5)


def learned(name, steps, **options):
    """The state after ``steps`` updates of one env step each (learning from step 4)."""
    spec = EnvSpec("Box2", (3,), "float32", Box((2,), tuple(LOW), tuple(HIGH)), 1, 10)
    agent = agents.make(name, spec, **TINY, learning_starts=4, **options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    update = jax.jit(agent.update)
    rng, states = np.random.default_rng(3), []
    for i in range(steps):
        state, _ = update(state, rollout(rng, n=1), jax.random.PRNGKey(i))
        states.append(state)
    return states


def test_prioritized_replay_sets_priorities_from_td_errors():
    states = learned("sac", 6, prioritized=True, priority_alpha=0.5)
    leaves = lambda state: np.asarray(state.buffer.tree.nodes[: state.buffer.tree.capacity])
    # Before learning every stored item has the insertion weight max_priority ** alpha = 1.
    np.testing.assert_array_equal(leaves(states[2])[:3], 1.0)
    # Three learning steps of batch 4 rewrote at most 12 items with (|delta| + eps) ** 0.5,
    # and the running maximum is the largest written |delta| + eps (or the initial 1).
    final = leaves(states[-1])
    changed = final[:6][final[:6] != 1.0]
    assert 0 < changed.size <= 12 and (changed > 0).all()
    assert float(states[-1].buffer.max_priority) >= max(1.0, changed.max() ** 2 * (1 - 1e-6))
    assert int(states[-1].learner.updates) == 3


def test_hard_target_updates_copy_every_period_exactly():
    # (With TD3's prioritized n-step replay on, which the copies do not depend on.)
    states = learned("td3", 10, target_update_period=3, prioritized=True, n_step=2)
    previous = states[2].learner  # step 3: no learning yet, targets = init
    for state in states[3:]:
        lr = state.learner
        same = lambda a, b: all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))
        if int(lr.updates) % 3 == 0:
            assert same(lr.target_critic_params, lr.critic_params)
            assert same(lr.target_actor_params, lr.actor_params)
        else:
            assert not same(lr.target_critic_params, lr.critic_params)
            assert same(lr.target_critic_params, previous.target_critic_params)
            assert same(lr.target_actor_params, previous.target_actor_params)
        previous = lr


def test_hddpg_zero_rates_freeze_the_critic():
    states = learned("ddpg", 6, q_increase_rate=0.0, q_decrease_rate=0.0)
    first, last = states[2].learner, states[-1].learner
    assert int(last.updates) == 3
    same = jax.tree.map(np.array_equal, first.critic_params, last.critic_params)
    assert all(jax.tree.leaves(same))
    moved = jax.tree.map(np.array_equal, first.actor_params, last.actor_params)
    assert not all(jax.tree.leaves(moved))


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(prioritized=True, n_step=20, buffer_size=32), "capacity"),
        (dict(q_increase_rate=1.5), "q_increase_rate"),
        (dict(q_decrease_rate=-0.1), "q_decrease_rate"),
        (dict(priority_alpha=-1.0), "priority_alpha"),
        (dict(target_update_period=-1), "target_update_period"),
    ],
)
def test_off_policy_option_mistakes_raise_config_error(options, match):
    with pytest.raises(ConfigError, match=match):
        agents.make("ddpg", SPEC, **{**TINY, **options})


@pytest.mark.parametrize("target, factor", [(1e3, 1.01), (1e-9, 1 / 1.01)])
def test_ddpg_param_noise_scale_rises_and_falls_against_the_distance(target, factor):
    opts = dict(param_noise=True, param_noise_target=target, exploration_noise="none")
    states = learned("ddpg", 4, **opts)
    sigmas = [float(s.param_noise["sigma"]) for s in states]
    np.testing.assert_allclose(sigmas, 0.1 * factor ** np.arange(1, 5), rtol=1e-5)
    assert all(float(s.param_noise["distance"]) > 0 for s in states[2:])
    # Exploring acts with the perturbed actor, greedy acting with the actor itself.
    from jaxrl.networks.continuous import DeterministicActor

    spec = EnvSpec("Box2", (3,), "float32", Box((2,), tuple(LOW), tuple(HIGH)), 1, 10)
    agent = agents.make("ddpg", spec, **TINY, learning_starts=4, **opts)
    state, actor = states[-1], DeterministicActor(2, (8,))
    obs = OBS[:1]
    for explore, params in ((True, state.param_noise["params"]), (False, None)):
        params = state.learner.actor_params if params is None else params
        got = agent.act(state, obs, (), jax.random.PRNGKey(0), explore)[0]
        want = CENTRE + HALF * np.asarray(actor.apply(params, obs))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
