"""Sebulba's actor threads and learner (runners/distributed/sebulba.py)."""

import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.runners.base import RunConfig
from jaxrl.runners.distributed.sebulba import ParameterStore, make_sebulba_runner
from jaxrl.types import ConfigError

CONFIG = RunConfig(steps=256, rollout_len=8, log_every=128, eval_every=128, eval_episodes=2)


def _runner(actor_threads, synchronous, queue_size=2):
    env = envs.make("CartPole-v1", num_envs=4)
    agent = agents.make("impala", env.spec, hidden_sizes=(8,), lr=1e-2)
    eval_env = envs.make("CartPole-v1", num_envs=2)
    return agent, make_sebulba_runner(
        agent, env, CONFIG, eval_env, actor_threads, queue_size, synchronous
    )


def _train(runner, seed=0):
    state = runner.init(jax.random.PRNGKey(seed))
    rows = []
    for _ in range(runner.num_chunks):
        state, metrics = runner.run_chunk(state)
        rows.append(metrics)
    return state, {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}


@pytest.fixture(scope="module")
def sync_runs():
    _, runner = _runner(actor_threads=3, synchronous=True)
    return runner, _train(runner), _train(runner)


def test_synchronous_mode_is_repeatable_bit_for_bit(sync_runs):
    runner, (a, ma), (b, mb) = sync_runs
    jax.tree.map(np.testing.assert_array_equal, a.agent_state, b.agent_state)
    for k in ma:
        if k != "queue_wait_s":  # a wall-clock time
            np.testing.assert_array_equal(ma[k], mb[k], err_msg=k)
    assert (ma["policy_lag"] == 0).all()
    # 2 chunks x 4 iterations: one update per rollout of 8 steps x 4 envs.
    assert runner.num_chunks == 2 and len(ma["step"]) == 8
    assert int(a.agent_state.updates) == 8 == a.version
    assert int(a.agent_state.step) == 256 and ma["step"][-1] == 256
    assert np.isnan(ma["eval_return"][:3]).all() and np.isfinite(ma["eval_return"][3])


def test_actors_keep_their_own_envs(sync_runs):
    """Each actor's episodes continue across its rollouts and chunks: the episode
    lengths summed over all finished episodes add up to at most the steps taken, and
    every actor's env batch has moved (three different env states)."""
    _, (state, metrics), _ = sync_runs
    assert metrics["episode_length_sum"].sum() <= 256
    assert metrics["episodes"].sum() > 0
    leaves = [jax.tree.leaves(actor.env_state)[0] for actor in state.actors]
    assert len(state.actors) == 3
    assert not np.array_equal(leaves[0], leaves[1]) and not np.array_equal(leaves[1], leaves[2])


def test_asynchronous_mode_bounds_its_lag():
    """Rollouts lag the learner by at most what the queue and the other actors hold."""
    threads, queue_size = 2, 1
    _, runner = _runner(threads, synchronous=False, queue_size=queue_size)
    state, metrics = _train(runner, seed=1)
    lag = metrics["policy_lag"]
    assert (lag >= 0).all() and (lag <= queue_size + threads).all()
    assert int(state.agent_state.updates) == 8 and (metrics["queue_wait_s"] >= 0).all()
    assert np.isfinite(metrics["policy_loss"]).all()


def test_parameter_store_waits_for_a_version():
    store = ParameterStore("v0", 0)
    assert store.read() == (0, "v0")
    import threading

    got = []
    reader = threading.Thread(target=lambda: got.append(store.read(at_least=2)))
    reader.start()
    store.publish("v1", 1)
    reader.join(timeout=0.2)
    assert not got  # still waiting for version 2
    store.publish("v2", 2)
    reader.join()
    assert got == [(2, "v2")]


def test_bad_actor_options_are_config_errors():
    env = envs.make("CartPole-v1", num_envs=4)
    agent = agents.make("impala", env.spec, hidden_sizes=(8,))
    with pytest.raises(ConfigError, match="actor_threads"):
        make_sebulba_runner(agent, env, CONFIG, None, 0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "CartPole", "--seeds", "2"], "one seed on one device"),
        (["--env", "gym:CartPole-v1"], "needs a JAX-native env"),
        (["--env", "CartPole", "--queue-size", "0"], "--queue-size must be >= 1"),
    ],
)
def test_cli_refuses_what_actor_threads_cannot_run(tmp_path, capsys, argv, message):
    from jaxrl.train import main

    base = ["--agent", "impala", "--actor-threads", "2", "--logdir", str(tmp_path)]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not any(tmp_path.iterdir())  # nothing written


def test_cli_trains_with_actor_threads(tmp_path):
    from jaxrl.train import main

    argv = ["--agent", "impala", "--env", "CartPole", "--actor-threads", "2", "--num-envs", "4"]
    argv += ["--steps", "128", "--run.rollout_len", "8", "--run.log_every", "64"]
    argv += ["--agent.hidden_sizes", "[8]", "--logdir", str(tmp_path), "--log", ""]
    assert main(argv) == 0
    (run,) = tmp_path.iterdir()
    import json

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 128 and "policy_lag" in rows[-1]
    assert "actor_threads: 2" in (run / "launch.yaml").read_text()
