"""MADDPG's policy ensembles (``--agent.sub_policies S``, ``maddpg_ensemble.py``): the draw
of one sub-policy per player and episode and its action, and one gradient step (the
critics' targets through the target ensembles, sub-policy ``k``'s actor step on batch
``k``) against NumPy from the networks' outputs."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl.agents import make
from jaxrl.agents.multi_agent.maddpg import MADDPGConfig, visible_players
from jaxrl.agents.multi_agent.maddpg_actions import box_actions
from jaxrl.agents.multi_agent.maddpg_ensemble import drawn, ensemble_step, pick
from jaxrl.agents.multi_agent.maddpg_parts import Head
from jaxrl.types import Box, Discrete, EnvSpec, Transition

P, D, S = 2, 4, 3
BOX = Box((2,), (0.0, -1.0), (1.0, 3.0))
LOW, HIGH = np.array(BOX.low), np.array(BOX.high)


def squash_np(out):
    return LOW + (np.tanh(out) + 1.0) * (HIGH - LOW) / 2


def at(tree, *index):
    return jax.tree.map(lambda x: x[index], tree)


def test_draws_are_uniform_kept_and_picked():
    carry = -np.ones((30_000, P), np.int32)
    carry[:10, 0] = 2  # episodes under way keep their sub-policy
    got = np.asarray(drawn(jnp.asarray(carry), jax.random.PRNGKey(0), S))
    assert (got[:10, 0] == 2).all() and ((got >= 0) & (got < S)).all()
    np.testing.assert_allclose(np.bincount(got[10:].ravel(), minlength=S) / got[10:].size,
                               np.full(S, 1 / S), atol=0.01)  # fmt: skip
    outputs = np.random.default_rng(0).normal(size=(5, P, S, 2)).astype(np.float32)
    index = np.random.default_rng(1).integers(0, S, size=(5, P))
    expected = np.stack([[outputs[n, i, index[n, i]] for i in range(P)] for n in range(5)])
    np.testing.assert_array_equal(pick(jnp.asarray(outputs), jnp.asarray(index)), expected)


def test_each_env_acts_with_its_drawn_sub_policy_until_reset():
    N = 6
    spec = EnvSpec("fake", (D,), "float32", BOX, N, 10, num_players=P)
    agent = make("maddpg", spec, hidden_sizes=[8], sub_policies=S)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    assert jax.tree.leaves(state.actor)[0].shape[:2] == (P, S)
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(N, P, D)), jnp.float32)
    act = jax.jit(agent.act, static_argnums=4)
    action, carry, _ = act(state, obs, agent.init_carry(N), jax.random.PRNGKey(1), False)
    carry = np.asarray(carry)
    head = Head((8,), 2)
    for n in range(N):
        for i in range(P):
            out = np.asarray(head.apply(at(state.actor, i, carry[n, i]), obs[n, i]))
            np.testing.assert_allclose(action[n, i], squash_np(out), rtol=1e-5, atol=1e-6)
    kept = np.asarray(act(state, obs, jnp.asarray(carry), jax.random.PRNGKey(2), True)[1])
    np.testing.assert_array_equal(kept, carry)  # the same sub-policies all episode long
    restarted = carry.copy()
    restarted[0] = -1  # env 0's episode ended: the runner reset its carry
    again = np.asarray(act(state, obs, jnp.asarray(restarted), jax.random.PRNGKey(3), False)[1])
    np.testing.assert_array_equal(again[1:], carry[1:])
    assert ((again[0] >= 0) & (again[0] < S)).all()


def test_ensemble_gradient_step_against_numpy():
    """Critic ``i``'s loss on all ``S`` batches, each target action from the target
    sub-policy drawn for its sample; actor loss of sub-policy ``k`` of player ``i`` on batch
    ``k`` through the stepped critic ``i``; each sub-policy moved down its own gradient; the
    targets averaged."""
    B, gamma, tau, visible = 3, 0.9, 0.05, None
    spec = EnvSpec("fake", (D,), "float32", BOX, B, 10, num_players=P)
    opts = dict(hidden_sizes=[8], sub_policies=S, gamma=gamma, tau=tau)
    state = make("maddpg", spec, **opts, critic_visible_actors=visible).init(jax.random.PRNGKey(0))
    rng = np.random.default_rng(3)
    f32 = lambda *shape: rng.normal(size=shape).astype(np.float32)
    batch = Transition(f32(S, B, P, D), squash_np(f32(S, B, P, 2)).astype(np.float32),
                       f32(S, B, P), f32(S, B, P, D), rng.random((S, B)) < 0.3,
                       np.zeros((S, B), bool), {})  # fmt: skip
    cfg = MADDPGConfig(critic_visible_actors=visible)
    optimizer = optax.chain(optax.clip_by_global_norm(0.5), optax.scale_by_adam())
    actor, critic = Head((8,), 2), Head((8,), 1)
    step = ensemble_step(actor, critic, optimizer, box_actions(LOW, HIGH),
                         visible_players(cfg, P), S)  # fmt: skip
    key = jax.random.PRNGKey(7)
    new, metrics = jax.jit(step)(state, jax.tree.map(jnp.asarray, batch), key)

    seen = [list(range(P)) if visible is None else list(visible[i]) for i in range(P)]

    def q(params, o, a, i):  # critic i on the players it sees, in its order
        x = np.concatenate(
            [o[:, seen[i]].reshape(len(o), -1), a[:, seen[i]].reshape(len(o), -1)], -1
        )
        return np.asarray(critic.apply(params, x))[:, 0]

    flat = jax.tree.map(lambda x: np.asarray(x).reshape(S * B, *np.shape(x)[2:]), batch)
    draw = np.asarray(jax.random.randint(jax.random.split(key, 3)[0], (S * B, P), 0, S))
    every = np.stack([[squash_np(np.asarray(actor.apply(at(state.target_actor, j, k),
                      flat.next_obs[:, j]))) for k in range(S)] for j in range(P)])  # fmt: skip
    next_act = np.stack([every[j, draw[:, j], np.arange(S * B)] for j in range(P)], 1)
    critic_losses = []
    for i in range(P):
        y = flat.reward[:, i] + gamma * (1 - flat.terminated) * q(
            at(state.target_critic, i), flat.next_obs, next_act, i
        )
        critic_losses.append(np.mean((q(at(state.critic, i), flat.obs, flat.action, i) - y) ** 2))
    np.testing.assert_allclose(metrics["critic_loss"], np.mean(critic_losses), rtol=1e-4)

    seen_ = jnp.asarray(seen)

    @jax.jit
    @jax.value_and_grad
    def actor_loss(params, i, k):  # sub-policy k of player i on batch k, a jnp reference
        obs, others = jnp.asarray(batch.obs)[k], jnp.asarray(batch.action)[k]
        out = actor.apply(params, obs[:, i])
        mine = others.at[:, i].set(LOW + (jnp.tanh(out) + 1.0) * (HIGH - LOW) / 2)
        x = jnp.concatenate([obs[:, seen_[i]].reshape(B, -1), mine[:, seen_[i]].reshape(B, -1)], -1)
        return -critic.apply(at(new.critic, i), x).mean() + 1e-3 * jnp.mean(out**2)

    losses = []
    for i in range(P):
        for k in range(S):
            loss, grad = actor_loss(at(state.actor, i, k), i, k)
            losses.append(float(loss))
            for old, moved, g in zip(jax.tree.leaves(at(state.actor, i, k)),
                                     jax.tree.leaves(at(new.actor, i, k)),
                                     jax.tree.leaves(grad), strict=True):  # fmt: skip
                big = np.abs(np.asarray(g)) > 1e-5  # Adam's first step: -lr sign(g)
                np.testing.assert_array_equal(np.sign(np.asarray(old - moved))[big],
                                              np.sign(np.asarray(g))[big])  # fmt: skip
    np.testing.assert_allclose(metrics["actor_loss"], np.mean(losses), rtol=1e-4)
    for old, online, target in zip(jax.tree.leaves(state.target_actor),
                                   jax.tree.leaves(new.actor),
                                   jax.tree.leaves(new.target_actor), strict=True):  # fmt: skip
        np.testing.assert_allclose(target, (1 - tau) * old + tau * online, rtol=1e-5, atol=1e-7)


def test_discrete_ensemble_trains_every_sub_policy():
    N, T, A = 4, 4, 3
    spec = EnvSpec("fake", (D,), "float32", Discrete(A), N, 10, num_players=P)
    agent = make("maddpg", spec, hidden_sizes=[8], sub_policies=2, batch_size=8,
                 buffer_size=64, learning_starts=T * N)  # fmt: skip
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
    learned, metrics = jax.jit(agent.update)(state, rollout, jax.random.PRNGKey(2))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    for i in range(P):
        for k in range(2):
            moved = jax.tree.map(lambda a, b: not np.array_equal(a, b),
                                 at(state.actor, i, k), at(learned.actor, i, k))  # fmt: skip
            assert all(jax.tree.leaves(moved)), (i, k)
    action, carry, extras = agent.act(
        learned, rollout.obs[0], agent.init_carry(N), jax.random.PRNGKey(3), False
    )
    assert action.dtype == jnp.int32 and carry.shape == (N, P)
    np.testing.assert_allclose(np.asarray(extras["action_probs"]).sum(-1), 1.0, rtol=1e-5)
