"""MADDPG: the centralized critic's inputs and target against NumPy, decentralized greedy
actions, one learning step (targets moved by Polyak averaging, warm-up storing only), and
bad envs refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import make
from jaxrl.agents.multi_agent.maddpg_parts import Head, critic_target, joint_input, with_action
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, Transition

P, N, D, A, T = 2, 3, 4, 3, 5
SPEC = EnvSpec("fake", (D,), "float32", Discrete(A), N, 10, num_players=P)


def test_joint_input_with_action_and_target_against_numpy():
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(2, P, D)).astype(np.float32)
    acts = rng.random(size=(2, P, A)).astype(np.float32)
    expected = np.concatenate([obs.reshape(2, -1), acts.reshape(2, -1)], -1)
    np.testing.assert_array_equal(joint_input(jnp.asarray(obs), jnp.asarray(acts)), expected)
    mine = rng.random(size=(2, A)).astype(np.float32)
    replaced = acts.copy()
    replaced[:, 1] = mine
    np.testing.assert_array_equal(with_action(jnp.asarray(acts), 1, jnp.asarray(mine)), replaced)
    reward = rng.normal(size=(2, P)).astype(np.float32)
    next_q = rng.normal(size=(2, P)).astype(np.float32)
    term = np.array([True, False])
    y = reward + 0.95 * (1 - term[:, None]) * next_q
    np.testing.assert_allclose(critic_target(reward, jnp.asarray(term), next_q, 0.95), y, rtol=1e-6)


@pytest.fixture(scope="module")
def stepped():
    agent = make(
        "maddpg", SPEC, hidden_sizes=[8], batch_size=8, buffer_size=64, learning_starts=2 * T * N
    )
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    rng = np.random.default_rng(1)
    rollout = Transition(
        jnp.asarray(rng.normal(size=(T, N, P, D)), jnp.float32),
        jnp.asarray(rng.integers(0, A, size=(T, N, P)), jnp.int32),
        jnp.asarray(rng.normal(size=(T, N, P)), jnp.float32),
        jnp.asarray(rng.normal(size=(T, N, P, D)), jnp.float32),
        jnp.zeros((T, N), bool),
        jnp.zeros((T, N), bool),
        {},
    )
    update = jax.jit(agent.update)
    warm, warm_metrics = update(state, rollout, jax.random.PRNGKey(2))
    learned, metrics = update(warm, rollout, jax.random.PRNGKey(3))
    obs = rollout.obs[0]
    both = lambda s, o: [agent.act(s, o, (), jax.random.PRNGKey(4), e) for e in (False, True)]
    greedy, explore = jax.jit(both)(state, obs)
    return agent, state, warm, warm_metrics, learned, metrics, obs, greedy, explore


def test_warm_up_stores_then_learns(stepped):
    _, state, warm, warm_metrics, learned, metrics, *_ = stepped
    assert int(warm.step) == T * N and int(learned.step) == 2 * T * N
    assert np.isnan(warm_metrics["critic_loss"]) and np.isfinite(metrics["critic_loss"])
    assert np.isfinite(metrics["actor_loss"])
    same = jax.tree.map(np.array_equal, state.actor, warm.actor)
    assert all(jax.tree.leaves(same))  # nothing learned during warm-up
    tau = float(state.hparams["tau"])
    for old, online, new in zip(
        jax.tree.leaves(warm.target_critic),
        jax.tree.leaves(learned.critic),
        jax.tree.leaves(learned.target_critic),
        strict=True,
    ):
        np.testing.assert_allclose(
            new, (1 - tau) * np.asarray(old) + tau * np.asarray(online), rtol=1e-5, atol=1e-7
        )
    moved = jax.tree.map(lambda a, b: not np.array_equal(a, b), warm.actor, learned.actor)
    assert all(jax.tree.leaves(moved))


def test_actions_are_decentralized(stepped):
    agent, state, *_, obs, greedy, explore = stepped
    action, _, extras = greedy
    assert action.shape == (N, P) and explore[0].shape == (N, P)

    head = Head((8,), A)
    for i in range(P):
        params = jax.tree.map(lambda x, i=i: x[i], state.actor)
        logits = head.apply(params, obs[:, i])  # agent i's actor sees only its observation
        np.testing.assert_array_equal(action[:, i], np.argmax(logits, -1))
        np.testing.assert_allclose(extras["action_probs"][:, i], jax.nn.softmax(logits), rtol=1e-5)


def test_refuses_single_agent_turn_based_and_masked_envs():
    single = EnvSpec("one", (D,), "float32", Discrete(A), N, 10)
    with pytest.raises(ConfigError, match="simultaneous-move env of 2\\+ players"):
        make("maddpg", single)
    turns = EnvSpec("turns", (D,), "float32", Discrete(A), N, 10, num_players=2, turn_based=True)
    with pytest.raises(ConfigError, match="turns"):
        make("maddpg", turns)


BOX = Box((2,), (0.0, -1.0), (1.0, 3.0))  # a box that is not [-1, 1]
CSPEC = EnvSpec("fake", (D,), "float32", BOX, 4, 10, num_players=P)


def squash_np(out):
    low, high = np.array(BOX.low), np.array(BOX.high)
    return low + (np.tanh(out) + 1.0) * (high - low) / 2


@pytest.mark.parametrize("visible", [None, ((0,), (1,)), ((0, 1), (1, 0))])
def test_continuous_gradient_step_against_numpy(visible):
    """Continuous actions: one step's critic loss (targets from the target actors' squashed
    actions) and actor loss (the deterministic policy gradient's objective, each player's
    own action replaced in the joint its critic sees) against NumPy from the networks'
    outputs; ``critic_visible_actors`` picks what each critic sees, in its order."""

    gamma, B = 0.9, 4
    opts = dict(hidden_sizes=[8], batch_size=B, buffer_size=8, learning_starts=B, gamma=gamma)
    agent = make("maddpg", CSPEC, **opts, critic_visible_actors=visible)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    rng = np.random.default_rng(2)
    one = lambda *shape: np.repeat(rng.normal(size=(1, 1, *shape)), B, 1).astype(np.float32)
    action = squash_np(one(P, 2))
    rollout = Transition(one(P, D), action, one(P), one(P, D), np.zeros((1, B), bool),
                         np.zeros((1, B), bool), {})  # fmt: skip
    new, metrics = jax.jit(agent.update)(
        state, jax.tree.map(jnp.asarray, rollout), jax.random.PRNGKey(1)
    )
    actor, critic = Head((8,), 2), Head((8,), 1)
    pick = lambda tree, i: jax.tree.map(lambda x: x[i], tree)
    seen = [list(range(P)) if visible is None else list(visible[i]) for i in range(P)]
    obs, next_obs, reward = rollout.obs[0, :1], rollout.next_obs[0, :1], rollout.reward[0, 0]

    def q(params, o, acts, i):  # critic i on the players it sees, o [1, P, D], acts [1, P, 2]
        x = np.concatenate([o[:, seen[i]].reshape(1, -1), acts[:, seen[i]].reshape(1, -1)], -1)
        return float(np.asarray(critic.apply(params, x))[0, 0])

    next_act = np.stack(
        [squash_np(np.asarray(actor.apply(pick(state.target_actor, j), next_obs[:, j])))
         for j in range(P)], 1)  # fmt: skip
    critic_losses, actor_losses = [], []
    for i in range(P):
        y = reward[i] + gamma * q(pick(state.target_critic, i), next_obs, next_act, i)
        critic_losses.append((q(pick(state.critic, i), obs, action[0, :1], i) - y) ** 2)
        out = np.asarray(actor.apply(pick(state.actor, i), obs[:, i]), np.float64)
        mine = action[0, :1].copy()
        mine[:, i] = squash_np(out)
        pi = -q(pick(new.critic, i), obs, mine, i) + 1e-3 * np.mean(out**2)
        actor_losses.append(pi)
    np.testing.assert_allclose(float(metrics["critic_loss"]), np.mean(critic_losses), rtol=1e-4)
    np.testing.assert_allclose(float(metrics["actor_loss"]), np.mean(actor_losses), rtol=1e-4)


def test_continuous_actions_stay_in_the_box():
    agent = make("maddpg", CSPEC, hidden_sizes=[8], exploration_noise=0.5)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(4, P, D)), jnp.float32)
    greedy = np.asarray(agent.act(state, obs, (), jax.random.PRNGKey(1), False)[0])
    explore = np.asarray(agent.act(state, obs, (), jax.random.PRNGKey(1), True)[0])
    for a in (greedy, explore):
        assert a.shape == (4, P, 2) and (a >= np.array(BOX.low)).all()
        assert (a <= np.array(BOX.high)).all()
    assert not np.array_equal(greedy, explore)


@pytest.mark.parametrize("visible", [((0,),), ((1,), (0,)), ((0, 1), (1,)), ((0, 2), (1, 0))])
def test_critic_visible_actors_are_checked(visible):
    with pytest.raises(ConfigError, match="'critic_visible_actors' needs 2 lists of players"):
        make("maddpg", CSPEC, critic_visible_actors=visible)
