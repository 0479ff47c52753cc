"""Observations of several inputs end to end (issue 57, part 2): the multi-input envs
against NumPy drawings and CartPole's own dynamics; DQN, PPO and SAC on them in the fused
scan runner; a replay buffer storing and sampling the dict; an Orbax checkpoint resumed
exactly; the exported policy with one input per key; and the agents that cannot take the
``multi`` torso refusing it in one line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.buffers import make_uniform_replay
from jaxrl.checkpoint import restore
from jaxrl.export import greedy_policy, to_stablehlo
from jaxrl.networks.torsos import MULTI_AGENTS
from jaxrl.runners import RunConfig, make_train
from jaxrl.train import main
from jaxrl.types import ConfigError, Transition
from tests.helpers import collect_rollout, tiny_run, train_run

# DQN with the multi torso on 8x8 frames, 2 envs.
TINY_MULTI = tiny_run(
    "--env MultiInputCartPole --env.size 8 --agent.torso multi --num-envs 2"
    " --agent.buffer_size 256 --agent.updates_per_rollout 2 --run.log_every 128"
    " --run.eval_every 0 --run.eval_episodes 1"
)


def np_segment(size, x0, y0, tx, ty, half_width):
    """The anti-aliased segment of ``envs.multi_input._segment``, pixel by pixel."""
    out = np.zeros((size, size))
    for r in range(size):
        for c in range(size):
            px, py = c + 0.5 - x0, size - (r + 0.5) - y0
            t = min(max((px * tx + py * ty) / (tx * tx + ty * ty + 1e-12), 0.0), 1.0)
            d = np.hypot(px - t * tx, py - t * ty)
            out[r, c] = min(max(half_width + 0.5 - d, 0.0), 1.0)
    return out


def np_cartpole_frame(state, size):
    x, theta = state[0], state[2]
    cx = size / 2 + x / 2.4 * (size / 2 - size / 8)
    cart = np_segment(size, cx - size / 8, size / 4, size / 4, 0.0, size / 32)
    a, length = 4 * theta, 0.6 * size
    pole = np_segment(size, cx, size / 4, length * np.sin(a), length * np.cos(a), size / 32)
    return np.round(np.maximum(cart, pole) * 255).astype(np.uint8)


def test_cartpole_image_draws_the_positions_and_velocity_holds_the_velocities():
    plain, multi = envs.make("CartPole-v1", num_envs=3), envs.make("MultiInputCartPole", num_envs=3)
    spec = multi.spec
    assert spec.obs_shape == (16, 16, 1) and spec.obs_dtype == "uint8"
    assert [(e.name, e.shape, e.dtype) for e in spec.obs_extras] == [("velocity", (2,), "float32")]
    key = jax.random.PRNGKey(0)
    (s0, p), (s1, m) = plain.reset(key), multi.reset(key)
    step0, step1 = jax.jit(plain.step), jax.jit(multi.step)
    for t in range(4):  # the same dynamics, step by step, through an episode's start
        action = jnp.asarray([0, 1, t % 2])
        key = jax.random.fold_in(key, t)
        s0, p = step0(s0, action, key)
        s1, m = step1(s1, action, key)
        state = np.asarray(p.obs, np.float64)
        np.testing.assert_array_equal(m.obs["velocity"], p.obs[:, [1, 3]])
        for i in range(3):
            got = np.asarray(m.obs["obs"][i, ..., 0], np.int64)
            assert np.abs(got - np_cartpole_frame(state[i], 16)).max() <= 1  # float rounding
        assert (m.reward == p.reward).all() and (m.terminated == p.terminated).all()


def test_pendulum_velocity_is_the_angular_velocity():
    plain, multi = envs.make("Pendulum-v1", num_envs=2), envs.make("MultiInputPendulum", num_envs=2)
    key = jax.random.PRNGKey(1)
    (_, p), (_, m) = plain.reset(key), multi.reset(key)
    np.testing.assert_array_equal(m.obs["velocity"], p.obs[:, 2:])
    assert m.obs["obs"].shape == (2, 16, 16, 1) and m.obs["obs"].dtype == jnp.uint8
    assert int(m.obs["obs"].max()) == 255  # the rod is drawn


def test_replay_stores_and_samples_the_dict_whole():
    env = envs.make("MultiInputCartPole", num_envs=2, size=8)
    agent = agents.make("random", env.spec)  # the dict as the env gives it
    state = agent.init(jax.random.PRNGKey(0))
    rollout = collect_rollout(agent, state, env, jax.random.PRNGKey(1), T=8)
    buffer = make_uniform_replay(64, 2, batch_size=32)
    buffer_state = buffer.add(buffer.init(jax.tree.map(lambda x: x[0], rollout)), rollout)
    batch = buffer.sample(buffer_state, jax.random.PRNGKey(2)).experience
    assert batch.obs["obs"].dtype == jnp.uint8 and batch.obs["velocity"].dtype == jnp.float32
    # every sampled (image, velocity, next image, action) is one step of the rollout
    flat = jax.tree.map(lambda x: np.asarray(x).reshape(16, -1), rollout)
    for b in range(32):
        row = jax.tree.map(lambda x, b=b: np.asarray(x[b]).reshape(-1), batch)
        same = [
            np.array_equal(flat.obs["obs"][i], row.obs["obs"])
            and np.array_equal(flat.obs["velocity"][i], row.obs["velocity"])
            and np.array_equal(flat.next_obs["obs"][i], row.next_obs["obs"])
            and flat.action[i] == row.action
            for i in range(16)
        ]
        assert any(same), b


@pytest.mark.parametrize(
    "agent_name, env_name, options",
    [
        (
            "ppo",
            "MultiInputCartPole",
            {"num_minibatches": 2, "update_epochs": 1, "shared_encoder": True},
        ),
        (
            "sac",
            "MultiInputPendulum",
            {"batch_size": 8, "learning_starts": 16, "feature_dim": 8, "shared_encoder": True},
        ),
    ],
)
def test_fused_runner_trains_every_family_on_both_inputs(agent_name, env_name, options):
    """PPO and SAC with their shared encoders (DQN: the checkpoint test's CLI runs)."""
    env = envs.make(env_name, num_envs=2, size=8)
    agent = agents.make(agent_name, env.spec, torso="multi", hidden_sizes=(8,), **options)
    train = make_train(agent, env, RunConfig(steps=64, rollout_len=8, eval_every=0))
    state0 = jax.jit(agent.init)(jax.random.PRNGKey(0))
    state, metrics = jax.jit(train)(jax.random.PRNGKey(0))
    learner = state.agent_state
    params = learner.params if agent_name == "ppo" else learner.learner.critic_params
    before = state0.params if agent_name == "ppo" else state0.learner.critic_params
    for key in ("encoder_obs", "encoder_velocity"):  # both inputs were learned from
        moved = jax.tree.map(lambda a, b: bool((a != b).any()), params, before)
        leaves = [v for path, v in jax.tree_util.tree_leaves_with_path(moved) if key in str(path)]
        assert leaves and any(leaves), key
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(params))
    if agent_name == "sac" and options.get("shared_encoder"):  # the actor reads the critics'
        actor = learner.learner.actor_params["params"]
        critic = learner.learner.critic_params["params"]
        (enc,) = [k for k in critic if k != "critics"]
        for a, c in zip(jax.tree.leaves(actor[enc]), jax.tree.leaves(critic[enc]), strict=True):
            np.testing.assert_array_equal(a, c)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    return train_run(tmp_path_factory.mktemp("straight"), *TINY_MULTI, "--steps", "512")


def test_checkpoint_resumes_exactly_and_the_export_takes_each_key(tmp_path, straight):
    half = train_run(tmp_path, *TINY_MULTI, "--steps", "256")
    assert main(["--resume", str(half), "--steps", "512"]) == 0
    agent, resumed, config = restore(half)
    _, direct, _ = restore(straight)
    assert config.agent.option("torso") == "multi"
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(direct), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    stored = resumed.buffer.data.obs if hasattr(resumed.buffer, "data") else None
    if stored is not None:  # the replay holds the dict, image as uint8
        assert stored["obs"].dtype == jnp.uint8 and "velocity" in stored
    spec = envs.make("MultiInputCartPole", num_envs=3, size=8).spec
    fn, inputs = greedy_policy(agent, direct, spec, batch_size=3)
    assert list(inputs) == ["obs", "velocity"]
    rng = np.random.default_rng(0)
    feed = {
        "obs": rng.integers(0, 256, (3, 8, 8, 1)).astype(np.uint8),
        "velocity": rng.normal(size=(3, 2)).astype(np.float32),
    }
    exported = jax.export.deserialize(bytearray(to_stablehlo(fn, inputs)))
    got = np.asarray(exported.call(*feed.values())[0])
    obs = {k: jnp.asarray(v) for k, v in feed.items()}
    want, _, _ = jax.jit(agent.act, static_argnums=4)(direct, obs, (), jax.random.PRNGKey(3), False)
    np.testing.assert_array_equal(got, np.asarray(want))
    # the greedy action reads the velocities: some change of them changes an action
    moved = {**obs, "velocity": -10 * obs["velocity"]}
    other = np.asarray(exported.call(moved["obs"], moved["velocity"])[0])
    assert not np.array_equal(other, got) or not np.array_equal(
        np.asarray(exported.call(obs["obs"], 10 * obs["velocity"])[0]), got
    )


@pytest.mark.parametrize(
    "agent_name, options, message",
    [
        ("pqn", {}, "agent 'pqn' cannot take torso 'multi' (dict observations); agents that can: "),
        ("r2d2", {}, "cannot take torso 'multi'"),
        ("impala", {}, "agent 'impala' cannot take torso 'multi'"),
        ("a3c", {}, "agent 'a3c' cannot take torso 'multi'"),
        ("ppo", {"cell": "gru"}, "a recurrent actor-critic"),
        ("dqn", {"curl": True}, "agent 'dqn' with auxiliary learners or demonstrations"),
    ],
)
def test_families_that_cannot_take_it_refuse_in_one_line(agent_name, options, message):
    spec = envs.make("MultiInputCartPole", num_envs=4, size=8).spec
    with pytest.raises(ConfigError) as e:
        agents.make(agent_name, spec, torso="multi", **options)
    assert message in str(e.value) and "\n" not in str(e.value)


# The cores the others share are traced once each: QR-DQN's and M-DQN's are IQN's and DQN's.
TRACED = sorted(set(MULTI_AGENTS) - {"dqn", "ppo", "sac", "qrdqn", "mdqn"})


@pytest.mark.parametrize("agent_name", TRACED)
def test_every_agent_that_takes_it_inits_acts_and_updates_on_the_dict(agent_name):
    """Traced only (``jax.eval_shape``): DQN, PPO and SAC train above."""
    continuous = agent_name in ("td3", "ddpg", "apex_ddpg")
    env = envs.make(
        "MultiInputPendulum" if continuous else "MultiInputCartPole", num_envs=2, size=8
    )
    agent = agents.make(agent_name, env.spec, torso="multi", hidden_sizes=(8,))
    zeros = lambda tree: jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), tree)
    state = jax.eval_shape(agent.init, jax.random.PRNGKey(0))
    obs = env.reset(jax.random.PRNGKey(0))[1].obs
    act = lambda s, o, k: agent.act(s, o, agent.init_carry(2), k, True)
    action, _, extras = zeros(jax.eval_shape(act, state, obs, jax.random.PRNGKey(1)))
    steps = lambda tree: jax.tree.map(lambda x: jnp.stack([x] * 4), tree)
    false = jnp.zeros((4, 2), bool)
    rollout = Transition(
        steps(obs), steps(action), jnp.zeros((4, 2)), steps(obs), false, false, steps(extras)
    )
    new_state, _ = jax.eval_shape(agent.update, state, rollout, jax.random.PRNGKey(2))
    assert jax.tree.structure(new_state) == jax.tree.structure(state)
