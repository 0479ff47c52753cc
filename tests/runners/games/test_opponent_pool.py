"""Past selves as self-play opponents (``runners/games/opponent_pool.py``): the ring of
snapshots against a slow reference, the snapshots' moves in their seats of the scripted
game, the counter shared by the members of a vmapped run, and the one-line mistakes."""

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.experiment.sweep import batch_runner
from jaxrl.runners import RunConfig
from jaxrl.runners.games import opponent_pool
from jaxrl.runners.games.self_play import make_self_play_runner
from jaxrl.types import OBS, Agent, ConfigError
from tests.runners.games.scripted_game import make_game

NUM_ENVS, SIZE, ACTIONS, ITERATIONS = 8, 2, 16, 8
ROLLOUT = 3  # env steps per env per iteration
EVERY = 2  # iterations between snapshots


def reference_slots(iterations: int, every: int, size: int) -> list[list[int | None]]:
    """Per iteration ``j`` (at its start, after the snapshot due then): what each slot
    holds, the params value ``j'`` of the iteration that wrote it, or None. The params of
    the counting agent below are the number of updates so far, ``j`` at iteration ``j``."""
    slots: list[int | None] = [None] * size
    out = []
    for j in range(iterations):
        if j > 0 and j % every == 0:
            slots[(j // every - 1) % size] = j
        out.append(list(slots))
    return out


def test_ring_against_reference():
    layout = opponent_pool.PoolLayout(SIZE, 4, EVERY, 2)
    params = {"w": jnp.zeros((3,), jnp.int32)}
    pool = opponent_pool.init(layout, params)
    expected = reference_slots(9, EVERY, SIZE)
    for j in range(9):
        current = {"w": jnp.full((3,), j, jnp.int32)}
        pool = opponent_pool.snapshot(layout, pool, current)
        played = np.asarray(opponent_pool.snapshot_params(layout, pool, current)["w"])
        want = [j if v is None else v for v in expected[j]]
        np.testing.assert_array_equal(played, np.repeat(np.asarray(want)[:, None], 3, 1))
        assert int(opponent_pool.written(layout, pool)) == sum(v is not None for v in expected[j])
        pool = pool.replace(iterations=pool.iterations + 1)


@flax.struct.dataclass
class Counter:
    """A fake learner: ``params`` counts its updates; ``rollout`` is the last one given."""

    params: jax.Array
    rollout: object
    hparams: object = None


def counting_agent(num_envs: int) -> Agent:
    """Plays action ``params % ACTIONS`` in every env and tags each move with ``params``."""

    def act(state, obs, carry, key, explore):
        n = obs[OBS].shape[0]
        action = jnp.full((n,), state.params % ACTIONS, jnp.int32)
        return action, carry, {"tag": jnp.full((n,), state.params, jnp.int32)}

    def init(key):
        zeros = jnp.zeros((ROLLOUT, num_envs), jnp.int32)
        return Counter(
            jnp.zeros((), jnp.int32), (jnp.zeros((ROLLOUT, num_envs, 3), jnp.int32), zeros, zeros)
        )

    def update(state, rollout, key):
        record = (rollout.obs[OBS].astype(jnp.int32), rollout.action, rollout.extras["tag"])
        return Counter(state.params + 1, record), {}

    return Agent(init, act, update)


@pytest.fixture(scope="module")
def pool_run():
    env = make_game(num_envs=NUM_ENVS, num_actions=ACTIONS)
    per_iteration = ROLLOUT * NUM_ENVS
    config = RunConfig(
        steps=ITERATIONS * per_iteration,
        rollout_len=ROLLOUT,
        log_every=per_iteration,  # one iteration per chunk: every rollout is seen
        eval_every=0,
        opponent_pool=SIZE,
        opponent_envs=0.5,
        opponent_every=EVERY * per_iteration,
    )
    runner = make_self_play_runner(counting_agent(NUM_ENVS), env, config)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(runner.run_chunk)
    records = []
    for _ in range(ITERATIONS):
        state, _ = run_chunk(state)
        records.append(jax.device_get(state.agent_state.rollout))
    return runner, state, records


def test_snapshots_play_their_seats(pool_run):
    """Envs 0-3 (half of 8) form two groups of two: env ``e`` has snapshot ``e // 2`` in
    seat ``e % 2``; envs 4-7 are pure self-play. A stitched transition's obs gives the
    move (``t``, the mover is ``t % 2``) and env; its tag gives the learner's params when
    the move was made, so the move expected there is the reference ring's."""
    _, state, records = pool_run
    slots = reference_slots(ITERATIONS, EVERY, SIZE)
    checked = by_snapshot = 0
    for obs, action, tag in records:
        for t in range(ROLLOUT):
            for e in range(NUM_ENVS):
                move, env_index, j = int(obs[t, e, 0]), int(obs[t, e, 2]), int(tag[t, e])
                assert env_index == e
                expected = j
                if e < 4 and move % 2 == e % 2 and slots[j][e // 2] is not None:
                    expected = slots[j][e // 2]
                    by_snapshot += expected != j
                assert int(action[t, e]) == expected % ACTIONS, (t, e, move, j)
                checked += 1
    assert checked == ITERATIONS * ROLLOUT * NUM_ENVS and by_snapshot > 10
    assert int(state.carry.pool.iterations) == ITERATIONS
    assert int(state.carry.pool.params[0]) == 6 and int(state.carry.pool.params[1]) == 4


def test_pool_counter_is_shared_by_members(pool_run):
    runner, _, _ = pool_run
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    state = jax.eval_shape(batch_runner(runner).init, keys)
    assert state.carry.pool.iterations.shape == ()  # unbatched: the copy is a real branch
    assert state.carry.pool.params.shape == (3, SIZE)


def test_layout_mistakes_are_one_line():
    with pytest.raises(ConfigError, match="must split into 3 groups of at least 2 envs"):
        opponent_pool.PoolLayout.of(3, 0.5, 100, 32, 8, 2)  # 4 envs, 3 snapshots
    with pytest.raises(ConfigError, match="groups of at least 2"):
        opponent_pool.PoolLayout.of(4, 0.5, 100, 32, 8, 2)  # 4 groups of 1 env
    layout = opponent_pool.PoolLayout.of(2, 0.5, 100, 32, 8, 2)
    assert layout == opponent_pool.PoolLayout(2, 4, 4, 2)  # 100 steps: 4 iterations of 32


def test_dqn_members_with_a_pool_equal_separate_runs():
    """DQN self-play on tic-tac-toe with a ring of two snapshots, two seeds as one vmapped
    program: each member's params equal its separate run's (the snapshot copy is a real
    branch on the shared counter, the snapshots' moves drawn with each member's keys)."""
    from jaxrl import agents, envs

    env = envs.make("tic_tac_toe", num_envs=8)
    agent = agents.make(
        "dqn", env.spec, hidden_sizes=[8], learning_starts=16, batch_size=8, buffer_size=64
    )
    config = RunConfig(
        steps=6 * 2 * 8,
        rollout_len=2,
        log_every=6 * 2 * 8,
        eval_every=0,
        opponent_pool=2,
        opponent_envs=0.5,
        opponent_every=2 * 2 * 8,
    )
    runner = make_self_play_runner(agent, env, config)
    keys = jax.random.split(jax.random.PRNGKey(7), 2)
    batched = batch_runner(runner)
    state, _ = jax.jit(lambda k: batched.run_chunk(batched.init(k)))(keys)
    run = jax.jit(lambda k: runner.run_chunk(runner.init(k))[0])
    for member, key in enumerate(keys):
        separate = run(key)
        assert int(separate.carry.pool.iterations) == 6
        pairs = zip(
            jax.tree.leaves((separate.agent_state.params, separate.carry.pool.params)),
            jax.tree.leaves((state.agent_state.params, state.carry.pool.params)),
            strict=True,
        )
        for a, b in pairs:
            np.testing.assert_allclose(np.asarray(b[member]), np.asarray(a), rtol=1e-5, atol=1e-6)
    ring = np.asarray(jax.tree.leaves(state.carry.pool.params)[0])  # [members, 2, ...]
    assert not np.allclose(ring[0, 0], ring[0, 1])  # two different snapshots were taken


def test_act_puts_snapshot_and_scripted_moves_in_their_seats():
    """``act`` on 10 envs: envs 0-3 two snapshot groups (params 5 and 7), envs 4-7 the
    scripted opponent (always action 9), envs 8-9 self-play (the learner's 3); the
    opponents move where the player to move is the env's seat ``i % 2``."""
    from jaxrl.runners.games.self_play import act_per_env

    layout = opponent_pool.PoolLayout.of(2, 0.4, 1, 1, 10, 2, scripted_fraction=0.4)
    assert layout == opponent_pool.PoolLayout(2, 4, 1, 2, 4)
    agent = counting_agent(10)
    state = Counter(jnp.asarray(3, jnp.int32), None)
    obs = {OBS: jnp.zeros((10, 3)), "action_mask": jnp.ones((10, ACTIONS), bool)}
    scripted = lambda o, key: jnp.full((o[OBS].shape[0],), 9, jnp.int32)
    for player in (np.zeros(10, np.int32), np.ones(10, np.int32), np.arange(10) % 3 % 2):
        action = opponent_pool.act(
            layout,
            agent,
            state,
            jnp.asarray([5, 7], jnp.int32),
            obs,
            None,
            jnp.asarray(player),
            jnp.full((10,), 3, jnp.int32),
            jax.random.PRNGKey(0),
            act_per_env,
            scripted,
        )
        expected = [3] * 10
        for e in range(8):
            if player[e] == e % 2:
                expected[e] = 9 if e >= 4 else (5, 7)[e // 2]
        np.testing.assert_array_equal(np.asarray(action), expected)


def test_scripted_layout_mistakes_are_one_line():
    with pytest.raises(ConfigError, match="opponent_scripted 0.1 gives 1 of 8 envs; it needs"):
        opponent_pool.PoolLayout.of(0, 0.5, 100, 32, 8, 2, scripted_fraction=0.1)
    with pytest.raises(ConfigError, match="take 4 \\+ 6 envs; there are 8"):
        opponent_pool.PoolLayout.of(2, 0.5, 100, 32, 8, 2, scripted_fraction=0.75)
    env = make_game(num_envs=8)  # no scripted opponent for this game
    config = RunConfig(steps=8, eval_every=0, opponent_scripted=0.5)
    with pytest.raises(ConfigError, match="needs a game with a scripted opponent"):
        make_self_play_runner(counting_agent(8), env, config)
