"""R2D2: the n-step double-Q sequence targets and loss against a NumPy loop, the burn-in
against an unroll without it, and the priorities an update writes back."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.agents.q_learning.sequence_loss import (
    burn_in_unroll,
    sequence_loss,
    sequence_targets,
)
from jaxrl.buffers import sum_tree
from jaxrl.networks import MLP, QHead
from jaxrl.networks.memory import make_cell
from jaxrl.networks.recurrent import MemoryQNetwork

K, B, A, N_STEP, GAMMA, EPS, ETA = 9, 6, 3, 3, 0.9, 1e-3, 0.9


def h(x):
    return np.sign(x) * (np.sqrt(np.abs(x) + 1) - 1) + EPS * x


def h_inv(x):
    return np.sign(x) * (((np.sqrt(1 + 4 * EPS * (np.abs(x) + 1 + EPS)) - 1) / (2 * EPS)) ** 2 - 1)


def reference_target(q_target, q_select, mask, reward, term, trunc, k, b):
    """The target of step ``k`` of sequence ``b``, walking the steps one by one, or None
    where the step's next observation is not stored (a truncation)."""
    if trunc[k, b] and not term[k, b]:
        return None
    ret, discount, j = 0.0, 1.0, k
    while True:
        ret += discount * reward[j, b]
        discount *= GAMMA
        if term[j, b]:
            return h(ret)  # the episode ended: no bootstrap
        last = j == K - 1 or j - k == N_STEP - 1
        if last or (trunc[j + 1, b] and not term[j + 1, b]):
            row = j + 1  # bootstrap from the next row's observation
            legal = np.flatnonzero(mask[row, b])
            best = legal[np.argmax(q_select[row, b, legal])]
            return h(ret + discount * h_inv(q_target[row, b, best]))
        j += 1


def test_sequence_targets_and_loss_match_a_numpy_loop():
    rng = np.random.default_rng(0)
    q_target = rng.normal(size=(K + 1, B, A)) * 3
    q_select = rng.normal(size=(K + 1, B, A))
    mask = rng.random((K + 1, B, A)) < 0.7
    mask[..., 0] |= ~mask.any(-1)
    reward = rng.normal(size=(K, B)) * 5
    term = rng.random((K, B)) < 0.15
    trunc = rng.random((K, B)) < 0.15
    trunc[3, 0], term[3, 0] = True, False  # a truncation inside a window
    trunc[5, 1], term[5, 1] = True, True  # both flags: a termination
    q_taken = rng.normal(size=(K, B))
    weights = rng.random(B)
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    targets = jax.jit(sequence_targets, static_argnums=(7, 8))
    target, learns = targets(
        f32(q_target), f32(q_select), jnp.asarray(mask), f32(reward),
        jnp.asarray(term), jnp.asarray(trunc), GAMMA, N_STEP, EPS,
    )  # fmt: skip
    want = [[reference_target(q_target, q_select, mask, reward, term, trunc, k, b)
             for b in range(B)] for k in range(K)]  # fmt: skip
    want_learns = np.array([[w is not None for w in row] for row in want])
    np.testing.assert_array_equal(np.asarray(learns), want_learns)
    want_target = np.array([[0.0 if w is None else w for w in row] for row in want])
    got = np.where(want_learns, np.asarray(target), 0.0)
    np.testing.assert_allclose(got, want_target, rtol=2e-5, atol=2e-5)
    loss_fn = jax.jit(sequence_loss, static_argnums=4)
    loss, priorities = loss_fn(f32(q_taken), target, learns, f32(weights), "mse", ETA)
    td = q_taken - want_target
    per_seq, prio = np.zeros(B), np.zeros(B)
    for b in range(B):
        d = td[want_learns[:, b], b]
        per_seq[b] = np.mean(0.5 * d**2)
        prio[b] = ETA * np.abs(d).max() + (1 - ETA) * np.abs(d).mean()
    np.testing.assert_allclose(float(loss), np.mean(weights * per_seq), rtol=2e-5)
    np.testing.assert_allclose(np.asarray(priorities), prio, rtol=2e-5)


def test_burn_in_warms_the_carry_without_gradient():
    T, n, burn_in = 6, 2, 2
    cell = make_cell("mingru", 3)
    net = MemoryQNetwork(torso=MLP((4,)), cell=cell, head=QHead(2))
    obs = jax.random.normal(jax.random.key(0), (T, n, 5))
    starts = jnp.zeros((T, n), bool).at[4, 1].set(True).at[1, 0].set(True)  # resets on both sides
    carry = jax.random.normal(jax.random.key(1), (n, 3))
    params = net.init(jax.random.key(2), carry, obs[0])

    def unroll(params, carry, obs, starts):
        return net.apply(params, carry, obs, starts, method=MemoryQNetwork.unroll)

    @jax.jit
    def run(params):
        q = burn_in_unroll(unroll, params, carry, obs, starts, burn_in)
        full = unroll(params, carry, obs, starts)[1]
        warm = jax.tree.map(
            lambda c: c[-1], unroll(params, carry, obs[:burn_in], starts[:burn_in])[0]
        )
        grad = jax.grad(lambda p: burn_in_unroll(unroll, p, carry, obs, starts, burn_in).sum())
        rest = jax.grad(lambda p: unroll(p, warm, obs[burn_in:], starts[burn_in:])[1].sum())
        through = jax.grad(lambda p: unroll(p, carry, obs, starts)[1][burn_in:].sum())
        return q, full, grad(params), rest(params), through(params)

    q, full, grad, rest, through = run(params)
    np.testing.assert_allclose(np.asarray(q), np.asarray(full[burn_in:]), rtol=1e-5)
    # the gradient is that of the rest of the sequence from a constant warmed-up carry,
    # not the one back-propagated through the burn-in
    leaves = jax.tree.leaves
    for g, r in zip(leaves(grad), leaves(rest), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(g, t) for g, t in zip(leaves(grad), leaves(through), strict=True))


def test_acting_stores_the_carry_that_the_learner_re_runs():
    """The carry ``act`` records at each step is what the unroll of the stored sequence
    reaches there from the first one (reset where an episode starts), and an update
    learns from the sequences and writes their priorities."""
    from jaxrl import agents, envs
    from jaxrl.agents.on_policy.sequence import episode_starts
    from tests.helpers import rollout_after_one_update

    env = envs.make("MemoryChain-v0", num_envs=2, memory_length=3)
    options = dict(cell="mingru", cell_size=4, hidden_sizes=(4,), sequence_length=4, burn_in=1)
    options |= dict(sequence_period=2, buffer_size=2 * 8, batch_size=2, learning_starts=0)
    agent = agents.make("r2d2", env.spec, **options)
    state, rollout, _ = rollout_after_one_update(agent, env, 8)
    leaves = np.asarray(sum_tree.levels(state.buffer.tree)[0])
    written = (leaves > 0) & (leaves != 1.0)  # new starts weigh max_priority ** alpha = 1
    assert int(state.updates) == 1 and written.any()
    parts = agent.init.args[0]
    carry = rollout.extras["carry"]
    starts = episode_starts(rollout.terminated | rollout.truncated)
    carries, _ = parts.network.apply(
        state.params, carry[0], rollout.obs, starts, method=MemoryQNetwork.unroll
    )
    want = np.where(np.asarray(starts[1:])[..., None], 0.0, np.asarray(carries[:-1]))
    np.testing.assert_allclose(np.asarray(carry[1:]), want, rtol=1e-5, atol=1e-6)
    assert np.asarray(starts).any()  # episodes ended inside the rollout
