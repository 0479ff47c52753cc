"""Ape-X DQN (``agents/q_learning/apex.py``): the actors' epsilons are Horgan et al.'s formula; the
priorities new items enter with are a NumPy n-step double-Q TD error from the actors'
parameters; the learner's update is prioritized DQN's (Rainbow with its distributional and
noisy parts off) on the same buffer; actors act with their stale copy, refreshed on
schedule; bad layouts are one line."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.common import apex_actors
from jaxrl.agents.q_learning import apex
from jaxrl.agents.q_learning import core as q_learning
from jaxrl.buffers import sum_tree
from tests.helpers import one_line_error, random_transitions, tiny_run, train_into

N, T, GAMMA, ALPHA, EPS = 4, 5, 0.9, 0.6, 1e-6
CFG = dict(num_actors=2, hidden_sizes=(8,), batch_size=8, buffer_size=N * 16, n_step=3,
           learning_starts=0, gamma=GAMMA, alpha=ALPHA, priority_eps=EPS, lr=1e-2,
           actor_update_period=8, target_update_period=1000, updates_per_rollout=2)  # fmt: skip


def rollout(rng, flags=True):
    actions = lambda rng, shape: jnp.asarray(rng.integers(0, 2, size=shape), jnp.int32)
    return random_transitions(rng, (T, N), (4,), actions, ends=flags)


@pytest.fixture(scope="module")
def setup():
    spec = envs.make("CartPole-v1", num_envs=N).spec
    agent = agents.make("apex_dqn", spec, **CFG)
    p = agent.update.args[0]
    return spec, agent, p


def test_actor_epsilons_follow_the_paper():
    for k in (1, 2, 4, 8):
        i = np.arange(k)
        expected = 0.4 ** (1 + 7 * i / max(k - 1, 1))
        np.testing.assert_allclose(apex_actors.actor_epsilons(k), expected, rtol=1e-6)
    np.testing.assert_allclose(apex_actors.actor_epsilons(3, 0.5, 2.0), 0.5 ** np.array([1, 2, 3]))
    by_env = np.asarray(apex_actors.env_epsilons(8, 4, 0.4, 7.0))
    np.testing.assert_array_equal(by_env, np.repeat(np.asarray(apex_actors.actor_epsilons(4)), 2))


def numpy_priorities(q_online, q_target, stored, rows, envs_):
    """``|delta|`` of the 3-step double-Q target, by loops: ``q_*(obs)`` give the values
    ``[A]`` of one observation under the actors' params and target params."""
    out = []
    for r, e in zip(rows, envs_, strict=True):
        steps = [(r + k) % (CFG["buffer_size"] // N) for k in range(3)]
        g, m, term = 0.0, 3, False
        for k, t in enumerate(steps):
            g += GAMMA**k * stored["reward"][t, e]
            if stored["terminated"][t, e] or stored["truncated"][t, e]:
                m, term = k + 1, bool(stored["terminated"][t, e])
                break
        boot = stored["next_obs"][steps[m - 1], e]
        a_star = int(np.argmax(q_online(boot)))
        target = g + (0.0 if term else GAMMA**m * q_target(boot)[a_star])
        out.append(abs(target - q_online(stored["obs"][r, e])[stored["action"][r, e]]))
    return np.asarray(out)


@pytest.fixture(scope="module")
def inserted(setup):
    """Two inserts of random rollouts by actors whose params differ from the learner's."""
    _, agent, p = setup
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    noise = jax.jit(functools.partial(jax.tree.map, lambda x: x + 0.3 * jnp.sin(7.0 * x + 1.0)))
    state = state.replace(actors={"params": noise(state.params), "target_params": state.params})
    rng = np.random.default_rng(0)
    rollouts = [rollout(rng), rollout(rng)]
    insert = jax.jit(functools.partial(apex.insert, p))
    for r in rollouts:
        state = state.replace(buffer=insert(state, r), step=state.step + T * N)
    stored = jax.tree.map(lambda *x: np.concatenate(x), *rollouts)._asdict()
    return p, state, stored


def test_new_items_enter_with_the_actors_td_errors(inserted):
    p, state, stored = inserted
    apply = jax.jit(lambda params, x: p.network.apply(params, x[None])[0])
    q_online = lambda x: np.asarray(apply(state.actors["params"], x))  # noqa: E731
    q_target = lambda x: np.asarray(apply(state.actors["target_params"], x))  # noqa: E731
    rows = np.repeat(np.arange(2 * T - 2), N)  # every valid item: rows 0..7 of 10 written
    envs_ = np.tile(np.arange(N), 2 * T - 2)
    expected = (numpy_priorities(q_online, q_target, stored, rows, envs_) + EPS) ** ALPHA
    leaves = sum_tree.get(state.buffer.tree, rows * N + envs_)
    np.testing.assert_allclose(leaves, expected, rtol=2e-5, atol=1e-6)
    assert int(p.buffer.num_items(state.buffer)) == rows.size
    # Not the learner's priorities, and not max priority.
    q_learner = lambda x: np.asarray(apply(state.params, x))  # noqa: E731
    learner = (numpy_priorities(q_learner, q_learner, stored, rows, envs_) + EPS) ** ALPHA
    assert not np.allclose(leaves, learner, rtol=1e-3)
    assert len(np.unique(np.round(np.asarray(leaves), 5))) > rows.size // 2


def test_learner_update_is_prioritized_dqn(setup, inserted):
    """After the actors' insert, Ape-X's update is ``q_learning.learn_from_replay`` of a
    Rainbow with distributional and noisy parts off (prioritized double dueling 3-step
    DQN): the same params, optimizer state and buffer priorities, bit for bit."""
    spec, agent, p = setup
    rainbow = agents.make(
        "rainbow", spec, distributional=False, noisy=False, use_eps_greedy=True,
        storage="full", adam_eps=1e-8, max_grad_norm=40.0, beta_decay_steps=10**9,
        **{k: v for k, v in CFG.items() if k not in ("num_actors", "actor_update_period")},
    )  # fmt: skip
    r = rainbow.update.args[0]
    state = jax.jit(agent.init)(jax.random.PRNGKey(1))
    batch = rollout(np.random.default_rng(1), flags=False)
    key = jax.random.PRNGKey(2)
    after, _ = jax.jit(agent.update)(state, batch, key)
    ref = jax.jit(rainbow.init)(jax.random.PRNGKey(1))
    buffer = jax.jit(functools.partial(apex.insert, p))(state, batch)
    ref = ref.replace(buffer=buffer, step=ref.step + T * N)
    ref, _ = jax.jit(functools.partial(q_learning.learn_from_replay, r), static_argnums=2)(
        ref, key, T * N
    )
    for a, b in [(after.params, ref.params), (after.opt_state, ref.opt_state),
                 (after.buffer.tree.nodes, ref.buffer.tree.nodes)]:  # fmt: skip
        assert jax.tree.all(jax.tree.map(np.array_equal, a, b))
    assert not jax.tree.all(jax.tree.map(np.array_equal, after.params, state.params))


def test_actors_act_with_their_copy_refreshed_every_period(setup):
    """Rows 5 (no refresh: period 8), then 10 (crossed 8: refreshed); acting with epsilon
    0 is greedy in the actors' copy, not the learner's parameters."""
    spec, agent, _ = setup
    state = jax.jit(agent.init)(jax.random.PRNGKey(3))
    update = jax.jit(agent.update)
    rng = np.random.default_rng(3)
    same = lambda a, b: jax.tree.all(jax.tree.map(np.array_equal, a, b))  # noqa: E731
    one, _ = update(state, rollout(rng), jax.random.PRNGKey(4))
    assert same(one.actors["params"], state.params) and not same(one.params, state.params)
    two, metrics = update(one, rollout(rng), jax.random.PRNGKey(5))
    assert same(two.actors["params"], two.params) and same(
        two.actors["target_params"], two.target_params
    )
    np.testing.assert_allclose(
        metrics["epsilon"], np.mean(apex_actors.actor_epsilons(2)), rtol=1e-6
    )
    greedy = one.replace(hparams=one.hparams.replace(actor_epsilon=jnp.float32(0.0)))
    obs = jnp.asarray(rng.normal(size=(N, 4)), jnp.float32)
    action, _, _ = agent.act(greedy, obs, (), jax.random.PRNGKey(6), True)
    q = one.actors["params"], one.params
    actor_q, learner_q = (np.asarray(agent.update.args[0].network.apply(x, obs)) for x in q)
    np.testing.assert_array_equal(action, actor_q.argmax(-1))
    assert (actor_q.argmax(-1) != learner_q.argmax(-1)).any() or not same(one.params, state.params)


TINY_RUN = tiny_run(
    "--agent apex_dqn --num-envs 8 --steps 256 --agent.hidden_sizes [16] --agent.batch_size 16"
    " --agent.num_actors 2 --run.log_every 128 --run.eval_every 128 --log ''"
)


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--agent.num_actors", "0"], "num_actors"),
        (["--agent.num_actors", "3"], "num_actors 3 does not divide the 8 envs"),
        (["--agent.replay_shards", "3"], "replay_shards 3 does not divide the 8 envs"),
    ],
)
def test_bad_layouts_are_one_line_and_write_nothing(tmp_path, capsys, flags, message):
    assert train_into(tmp_path, *TINY_RUN, *flags) == (2, [])
    one_line_error(capsys, message)
    assert not list(tmp_path.iterdir())
