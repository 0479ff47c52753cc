"""MBPO: the real/model split of SAC's minibatches, one model phase (the ensemble learns a
known linear system, elites, rollouts of the scheduled length from real states into the
model buffer), SAC's G steps per env step, the termination functions, and the user's
mistakes (one line, exit code 2, nothing written)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.off_policy.mbpo import MBPOConfig, sac_buffers
from jaxrl.agents.off_policy.model_data import (
    TERMINATIONS,
    mixed_buffer,
    scheduled_buffer,
    user_functions,
)
from jaxrl.buffers import make_uniform_replay
from jaxrl.ops.model_based import rollout_length
from jaxrl.types import Box, ConfigError, EnvSpec, Transition
from tests.helpers import one_line_error, train_into

SPEC = EnvSpec("Pendulum-v1", (3,), "float32", Box((1,), (-2.0,), (2.0,)), 1, 200)
T = 256  # real transitions of the first update: learning starts after them
OPTS = dict(
    hidden_sizes=(8,), batch_size=16, buffer_size=1024, learning_starts=T, updates_per_step=2,
    num_members=3, num_elites=2, model_hidden_sizes=(32, 32), model_lr=3e-3,
    model_batch_size=64, model_train_freq=1000, model_train_steps=400, holdout_size=256,
    rollout_batch_size=10, rollout_schedule=(1.0, 5.0, 1.0, 4.0), epoch_length=64,
)  # fmt: skip


def transitions(n: int, value: float) -> Transition:
    z = jnp.full((n, 1, 3), value, jnp.float32)
    return Transition(z, z[..., :1], z[..., 0], z, z[..., 0] > 9, z[..., 0] > 9, {})


@pytest.mark.parametrize("real_ratio", [0.0, 0.05, 1.0])
def test_minibatches_mix_real_and_model_data_by_real_ratio(real_ratio):
    batch = 64
    n_real = int(batch * real_ratio)
    real = make_uniform_replay(100, 1, n_real) if n_real else None
    model = make_uniform_replay(100, 1, batch - n_real) if n_real < batch else None
    ring = make_uniform_replay(100, 1, 1)

    def fill_and_sample(key):  # one program, not one per op
        empty = ring.init(jax.tree.map(lambda x: x[0], transitions(1, 0.0)))
        states = ring.add(empty, transitions(50, 1.0)), ring.add(empty, transitions(60, -1.0))
        return mixed_buffer(real, model).sample(states, key).experience.reward

    reward = jax.jit(fill_and_sample)(jax.random.PRNGKey(0))
    assert reward.shape == (batch, 1)
    assert int((reward == 1.0).sum()) == n_real and int((reward == -1.0).sum()) == batch - n_real


def test_a_real_ratio_schedule_sets_the_real_rows_of_each_minibatch():
    """``real_ratio`` 0.5 -> 0 over 100 env steps: floor(16 * ratio) real rows, the first
    ones of the batch, the rest from the model."""
    cfg = MBPOConfig(**OPTS, real_ratio=0.5, real_ratio_end=0.0, real_ratio_steps=100)
    real, model, view, real_rows = sac_buffers(SPEC, cfg, "mbpo", 64)
    assert real_rows is not None
    steps = np.array([0, 30, 50, 99, 100, 500])
    want = np.floor(16 * (0.5 + (0.0 - 0.5) * np.clip(steps / 100, 0, 1))).astype(int)
    np.testing.assert_array_equal([int(real_rows(jnp.int32(t))) for t in steps], want)
    ring = make_uniform_replay(100, 1, 1)

    def fill_and_sample(key, n_real):
        empty = ring.init(jax.tree.map(lambda x: x[0], transitions(1, 0.0)))
        states = ring.add(empty, transitions(50, 1.0)), ring.add(empty, transitions(60, -1.0))
        both = (make_uniform_replay(100, 1, 16), make_uniform_replay(100, 1, 16))
        return scheduled_buffer(*both).sample((*states, n_real), key).experience.reward

    for n_real in (0, 5, 16):
        reward = np.asarray(jax.jit(fill_and_sample)(jax.random.PRNGKey(0), jnp.int32(n_real)))
        np.testing.assert_array_equal(reward[:, 0], np.where(np.arange(16) < n_real, 1.0, -1.0))


def test_user_termination_and_reward_functions():
    """Emote's ``termination_fn(next_obs)`` and mbrl-lib's ``(action, next_obs)`` form, and a
    ``reward_fn``, against NumPy (the rollouts use them: ``phase``)."""
    one, _ = user_functions(SPEC, "tests.user_model_fns:mbpo_done", None, "mbpo")
    two, reward = user_functions(
        SPEC, "tests.user_model_fns:mbpo_done_of_action", "tests.user_model_fns:mbpo_reward", "mbpo"
    )
    s = jnp.asarray([[0.7, 0.0, 0.0], [0.2, 0.0, 0.0]])
    a = jnp.asarray([[1.5], [-0.5]])
    np.testing.assert_array_equal(one(a, s), [True, False])
    np.testing.assert_array_equal(two(a, s), [True, False])
    np.testing.assert_allclose(reward(a, s), [-0.49 - 0.15, -0.04 + 0.05], rtol=1e-6)


def linear_data(n: int, seed: int) -> Transition:
    """A known system: s' = s + 0.1 a (every dim), r = -|s|^2 / 3; actions in the env's box."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, (n, 1, 3)).astype(np.float32)
    a = rng.uniform(-2, 2, (n, 1, 1)).astype(np.float32)
    zeros = np.zeros((n, 1), bool)
    return Transition(s, a, -(s**2).mean(-1), s + 0.1 * a, zeros, zeros, {})


@pytest.fixture(scope="module")
def phase():
    """Two updates, the first with a model phase; the model's rollouts take a user's
    termination function (never) and reward function (``tests/user_model_fns.py``)."""
    user = dict(
        termination_fn="tests.user_model_fns:mbpo_never",
        reward_fn="tests.user_model_fns:mbpo_reward",
    )
    agent = agents.make("mbpo", SPEC, **OPTS, **user)
    update = jax.jit(agent.update)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    first, m1 = update(state, jax.tree.map(jnp.asarray, linear_data(T, 0)), jax.random.PRNGKey(1))
    # Same shapes (no second compile); steps 256 -> 512 cross no model period (1,000).
    second, m2 = update(first, jax.tree.map(jnp.asarray, linear_data(T, 1)), jax.random.PRNGKey(2))
    return state, first, m1, second, m2


def test_model_phase_learns_the_dynamics_and_picks_elites(phase):
    state, first, m1, _, _ = phase
    elites = np.asarray(first.model.elites)
    assert len(set(elites)) == 2 and set(elites) <= {0, 1, 2}
    # Targets [r, s' - s] have variance ~0.01-0.1; a model that learned them does far better.
    data = linear_data(512, 3)
    target = np.concatenate([data.reward, (data.next_obs - data.obs)[:, 0]], -1)
    assert float(m1["model_holdout_mse"]) < 0.1 * target.var(0).mean()
    assert float(m1["model_loss"]) < float(m1["model_holdout_mse"])  # NLL, with log-variance
    leaves = jax.tree.leaves(
        jax.tree.map(lambda a, b: (a != b).any(), state.model.params, first.model.params)
    )
    assert all(map(bool, leaves))
    np.testing.assert_allclose(first.model.mean[:3], 0.0, atol=0.15)  # inputs' statistics


def test_rollouts_start_from_real_states_and_follow_the_schedule(phase):
    _, first, m1, _, _ = phase
    k = int(rollout_length(T // OPTS["epoch_length"], 1.0, 5.0, 1, 4))  # epoch 4: 1 + 3/4*3 -> 3
    assert k == 3 and float(m1["rollout_length"]) == k
    ring = first.model_buffer
    assert int(ring.size) == k and ring.data.obs.shape == (
        4,
        10,
        3,
    )  # y rows (one period per epoch at least)
    real_obs = np.asarray(linear_data(T, 0).obs[:, 0])
    start = np.asarray(ring.data.obs[0])
    assert all(np.isclose(real_obs, s).all(-1).any() for s in start)  # real start states
    # Each next row starts where the previous ended (Pendulum never terminates).
    np.testing.assert_array_equal(ring.data.obs[1], ring.data.next_obs[0])
    np.testing.assert_array_equal(ring.data.obs[2], ring.data.next_obs[1])
    assert not np.asarray(ring.data.terminated).any()
    # The user's reward function of the env's action (Pendulum's box: [-2, 2]) and s'.
    env_action, next_obs = (
        2.0 * np.asarray(ring.data.action[:k]),
        np.asarray(ring.data.next_obs[:k]),
    )
    want = -(next_obs**2).sum(-1) - 0.1 * env_action[..., 0]
    np.testing.assert_allclose(np.asarray(ring.data.reward[:k]), want, rtol=1e-5, atol=1e-6)
    # The model predicts s' - s = 0.1 a, with a the normalized action times the box's 2.
    step = np.asarray(ring.data.next_obs[0] - ring.data.obs[0])
    np.testing.assert_allclose(
        step, np.broadcast_to(0.2 * np.asarray(ring.data.action[0]), step.shape), atol=0.1
    )


def test_sac_takes_g_steps_per_env_step_and_the_model_waits_for_its_period(phase):
    state, first, m1, second, m2 = phase
    assert int(first.learner.updates) == 2 * T and int(second.learner.updates) == 4 * T
    assert np.isfinite(float(m2["critic_loss"])) and np.isnan(float(m2["model_loss"]))
    same = jax.tree.map(lambda a, b: bool((a == b).all()), first.model, second.model)
    assert all(jax.tree.leaves(same)) and int(second.model_buffer.size) == 3
    assert int(second.step) == 2 * T


def test_termination_functions_by_env():
    s = jnp.asarray([[0.5, 0.0], [0.2, 0.0]])
    np.testing.assert_array_equal(TERMINATIONS["MountainCarContinuous"](s), [True, False])
    assert not TERMINATIONS["Pendulum"](s).any() and not TERMINATIONS["HalfCheetah"](s).any()
    other = dataclasses.replace(SPEC, name="Reacher-v5")
    with pytest.raises(ConfigError, match="no termination function for Reacher-v5"):
        agents.make("mbpo", other, **OPTS)
    agents.make("mbpo", other, **OPTS, termination="never")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--agent.real_ratio", "1.5"], "real_ratio"),
        (["--agent.real_ratio", "-0.1"], "real_ratio"),
        (["--agent.rollout_schedule", "[5, 2, 1, 3]"], "rollout_schedule' needs [a, b, x, y]"),
        (["--agent.rollout_schedule", "[1, 5, 0, 3]"], "rollout_schedule' needs [a, b, x, y]"),
        (["--agent.rollout_schedule", "[1, 5, 2]"], "rollout_schedule"),
        (["--agent.rollout_schedule", "[1, 5, 1.5, 3]"], "integer lengths"),
        (["--agent.num_members", "0"], "num_members"),
        (["--agent.num_elites", "9"], "'num_elites' (9) must be at most 'num_members' (7)"),
        (["--agent.n_step", "3"], "does not take option 'n_step': it is fixed at 1"),
        (["--agent.prioritized", "true"], "does not take option 'prioritized'"),
        (["--agent.termination_fn", "tests.no_such_module:done"], "cannot import module"),
        (["--agent.termination_fn", "tests.user_model_fns:no_such"], "has no function 'no_such'"),
        (["--agent.termination_fn", "done"], "needs package.module:function"),
        (
            ["--agent.reward_fn", "tests.user_model_fns:mbpo_reward_per_dim"],
            "must return one value per state, shape [2]; got (2, 3)",
        ),
        (["--agent.real_ratio_end", "0.5"], "needs both real_ratio_end and real_ratio_steps"),
        (["--agent.target_entropy_end", "-2"], "needs both target_entropy_end and"),
    ],
)  # fmt: skip
def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys, argv, fragment):
    assert train_into(tmp_path / "runs", "--agent", "mbpo", "--env", "Pendulum", *argv) == (2, [])
    one_line_error(capsys, fragment)


def test_a_config_file_naming_a_model_function_needs_import(tmp_path, capsys):
    """A config file is data: its ``termination_fn`` module is imported only when the
    command line names it (``--import``); named there, the run is built."""
    config = tmp_path / "mbpo.yaml"
    config.write_text("agent:\n  name: mbpo\n  termination_fn: tests.user_model_fns:mbpo_never\n")
    argv = ["--config", str(config), "--env", "Pendulum"]
    assert train_into(tmp_path / "runs", *argv) == (2, [])
    one_line_error(capsys, "would import module 'tests.user_model_fns', which the command line")
    wrong = ["--agent.reward_fn", "tests.user_model_fns:mbpo_reward_per_dim"]  # the next mistake
    assert train_into(tmp_path / "runs", *argv, *wrong, "--import", "tests.user_model_fns") == (
        2,
        [],
    )
    one_line_error(capsys, "must return one value per state")
