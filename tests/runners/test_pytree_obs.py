"""Dictionary observations with a legal-action mask through the env contract, the fused
runner, its evaluation and a checkpoint round-trip."""

import jax
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.experiment.checkpoint import CheckpointWriter, load
from jaxrl.runners import RunConfig, make_runner, make_train
from jaxrl.types import ACTION_MASK
from tests.masked_env import LENGTH, NUM_ACTIONS, make_masked_env

CONFIG = RunConfig(steps=3 * 2 * 40, rollout_len=2, log_every=3 * 2 * 20, eval_every=120)


@pytest.fixture(scope="module")
def random_run():
    env = make_masked_env(num_envs=3)
    agent = agents.make("random", env.spec)
    runner = make_runner(agent, env, CONFIG)
    state, metrics = jax.jit(make_train(agent, env, CONFIG))(jax.random.PRNGKey(0))
    return env, runner, state, jax.tree.map(np.asarray, metrics)


def test_env_gives_dict_observations_with_masks():
    env = make_masked_env(num_envs=3)
    assert env.spec.has_action_mask
    _, ts = env.reset(jax.random.PRNGKey(0))
    assert set(ts.obs) == {"obs", ACTION_MASK} and set(ts.info["final_obs"]) == set(ts.obs)
    assert ts.obs[ACTION_MASK].shape == (3, NUM_ACTIONS) and ts.obs[ACTION_MASK].dtype == bool
    assert np.asarray(ts.obs[ACTION_MASK]).any(-1).all()


def test_masked_random_agent_never_acts_illegally(random_run):
    _, _, state, metrics = random_run
    assert metrics["episodes"].sum() >= 40
    # Every episode pays +1 per step: no illegal action was ever taken.
    np.testing.assert_array_equal(
        metrics["episode_return_sum"], LENGTH * metrics["episodes"].astype(np.float32)
    )
    evals = metrics["eval_return"][~np.isnan(metrics["eval_return"])]
    np.testing.assert_array_equal(evals, [LENGTH, LENGTH])
    assert state.obs[ACTION_MASK].shape == (3, NUM_ACTIONS)


def test_runner_state_with_dict_obs_survives_a_checkpoint(random_run, tmp_path):
    _, runner, state, _ = random_run
    with CheckpointWriter(tmp_path) as writer:
        writer.save(240, state, {"note": "pytree obs"})
    abstract = jax.eval_shape(runner.init, jax.random.PRNGKey(0))
    restored = load(tmp_path, abstract).state
    assert jax.tree.structure(restored) == jax.tree.structure(state)
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(state), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


class PythonSteppedMaskedEnv:
    """The masked env behind the host runner's interface (``reset(seed)``, ``step(action)``
    from Python with NumPy in and out, ``spawn``), as a Gymnasium env would be."""

    def __init__(self, num_envs: int):
        self.env = make_masked_env(num_envs=num_envs)
        self.spec = self.env.spec
        self._reset, self._step = jax.jit(self.env.reset), jax.jit(self.env.step)
        self._key = jax.random.PRNGKey(0)

    def reset(self, seed: int):
        self._state, ts = self._reset(jax.random.PRNGKey(seed))
        return jax.tree.map(np.asarray, ts)

    def step(self, action):
        self._key, key = jax.random.split(self._key)
        self._state, ts = self._step(self._state, jax.numpy.asarray(action), key)
        return jax.tree.map(np.asarray, ts)

    def spawn(self, num_envs: int):
        return PythonSteppedMaskedEnv(num_envs)


def test_host_runner_carries_dict_observations():
    from jaxrl.runners.host import make_host_runner

    env = PythonSteppedMaskedEnv(3)
    runner = make_host_runner(agents.make("random", env.spec), env, CONFIG)
    state = runner.init(jax.random.PRNGKey(0))
    state, metrics = runner.run_chunk(state)
    state, metrics = runner.run_chunk(state)
    assert metrics["episodes"].sum() > 0 and set(state.obs) == {"obs", ACTION_MASK}
    np.testing.assert_array_equal(
        metrics["episode_return_sum"], LENGTH * metrics["episodes"].astype(np.float32)
    )
    assert metrics["eval_return"][-1] == LENGTH


TINY = {
    "dqn": dict(hidden_sizes=(8,), batch_size=8, buffer_size=128, learning_starts=32),
    "rainbow": dict(
        hidden_sizes=(8,), batch_size=8, buffer_size=128, learning_starts=32, num_atoms=5
    ),
    "ppo": dict(hidden_sizes=(8,), num_minibatches=2, update_epochs=1),
    "a2c": dict(hidden_sizes=(8,)),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_masked_agents_never_act_illegally_while_training(name):
    """Exploring (epsilon-greedy, noisy, sampled) and greedy acting of every discrete agent,
    trained in the fused runner: every episode pays +1 per step, so no illegal action."""
    env = make_masked_env(num_envs=3)
    agent = agents.make(name, env.spec, **TINY[name])
    config = RunConfig(steps=3 * 4 * 20, rollout_len=4, log_every=3 * 4 * 10, eval_every=120)
    _, metrics = jax.jit(make_train(agent, env, config))(jax.random.PRNGKey(0))
    metrics = jax.tree.map(np.asarray, metrics)
    assert metrics["episodes"].sum() >= 40
    np.testing.assert_array_equal(
        metrics["episode_return_sum"], LENGTH * metrics["episodes"].astype(np.float32)
    )
    evals = metrics["eval_return"][~np.isnan(metrics["eval_return"])]
    np.testing.assert_array_equal(evals, [LENGTH, LENGTH])
