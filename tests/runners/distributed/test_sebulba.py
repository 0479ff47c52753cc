"""Sebulba's actor threads and learner (runners/distributed/sebulba.py)."""

import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.runners.base import RunConfig
from jaxrl.runners.distributed.sebulba import ParameterStore, end_streams, make_sebulba_runner
from jaxrl.types import ConfigError, Transition

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


def test_end_streams_truncates_the_last_step_unless_an_episode_ended_there():
    rng = np.random.default_rng(0)
    terminated, truncated = rng.random((2, 5, 16)) < 0.3
    batch = Transition(
        np.zeros((5, 16)),
        np.zeros((5, 16)),
        np.zeros((5, 16)),
        np.zeros((5, 16)),
        terminated,
        truncated,
        {},
    )
    out = jax.jit(end_streams)(batch)
    expected = truncated.copy()
    for env in range(16):  # the stream of each env column ends at the rollout's end
        if not terminated[-1, env]:
            expected[-1, env] = True
    np.testing.assert_array_equal(out.truncated, expected)
    np.testing.assert_array_equal(out.terminated, terminated)
    assert terminated[-1].any() and not terminated[-1].all()  # both cases are covered


@pytest.mark.parametrize("threads", [1, 2])
def test_learner_ends_each_rollouts_streams_when_actors_take_turns(threads):
    """With two actors, the learner's next rollout holds other envs: every rollout it
    updates on ends truncated or terminated in each env; one actor's rollouts are its
    envs' continuing streams, updated on as collected."""
    agent, _ = _runner(1, synchronous=True)
    seen = []

    def spy(state, transitions, key):
        jax.debug.callback(
            lambda t, d: seen.append((np.asarray(t), np.asarray(d))),
            transitions.truncated,
            transitions.terminated,
        )
        return agent.update(state, transitions, key)

    env = envs.make("CartPole-v1", num_envs=4)
    runner = make_sebulba_runner(agent._replace(update=spy), env, CONFIG, None, threads, 2, True)
    runner.run_chunk(runner.init(jax.random.PRNGKey(0)))
    jax.effects_barrier()
    assert len(seen) == CONFIG.log_every // (CONFIG.rollout_len * 4)
    ends = np.stack([(t | d)[-1] for t, d in seen])
    assert ends.all() if threads == 2 else not ends.all()


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
