"""Actor processes (``--actor-processes P``, ``runners/distributed/actor_processes.py``):
Ape-X's epsilon ladder split over processes against NumPy, the link's packing, the
refusals as one line, and a learner with two actor processes (``python -m jaxrl.launch
--processes 3``) whose final state, replay included, is the one a single process computes
from the same actors' rollouts."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxrl.agents.common.apex_actors import actor_epsilons, env_epsilons, process_options
from jaxrl.types import ConfigError, Transition
from tests.device_script import fake_devices_env

TINY = [
    *("--agent", "apex_dqn", "--env", "CartPole", "--num-envs", "4"),
    *("--agent.num_actors", "4", "--agent.hidden_sizes", "[16]", "--agent.batch_size", "16"),
    *("--agent.buffer_size", "256", "--agent.learning_starts", "32"),
    *("--agent.updates_per_rollout", "2", "--agent.actor_update_period", "8"),
    *("--run.rollout_len", "8", "--run.log_every", "64", "--steps", "192"),
    *("--run.eval_every", "0", "--run.eval_episodes", "1", "--log", ""),
]


@pytest.mark.parametrize("actors, processes", [(8, 1), (8, 2), (8, 4), (6, 3), (4, 4)])
def test_each_process_explores_with_its_share_of_the_ladder(actors, processes):
    """Process ``i``'s ladder (its options' epsilons over its ``N / P`` envs) is the slice
    ``[i k, (i + 1) k)`` of the run's, ``epsilon^(1 + alpha j / (K - 1))`` in NumPy."""
    eps, alpha, num_envs = 0.4, 7.0, 2 * actors
    options = {"num_actors": actors, "actor_epsilon": eps, "actor_epsilon_alpha": alpha}
    want = eps ** (1.0 + alpha * np.arange(actors) / (actors - 1))
    got = []
    for index in range(processes):
        own = process_options(options, num_envs, processes, index)
        k, e, a = own["num_actors"], own["actor_epsilon"], own["actor_epsilon_alpha"]
        got.append(env_epsilons(num_envs // processes, k, e, a))
    np.testing.assert_allclose(np.concatenate(got), np.repeat(want, 2), rtol=1e-5)
    np.testing.assert_allclose(actor_epsilons(actors, eps, alpha), want, rtol=1e-6)


def test_one_actor_per_env_and_counts_that_do_not_divide():
    options = {"num_actors": None, "actor_epsilon": 0.4, "actor_epsilon_alpha": 7.0}
    own = process_options(options, 8, 2, 1)
    assert own["num_actors"] is None  # one actor per env in each process too
    want = 0.4 ** (1.0 + 7.0 * np.arange(4, 8) / 7)
    got = env_epsilons(4, 4, own["actor_epsilon"], own["actor_epsilon_alpha"])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(ConfigError, match="--actor-processes 3 must divide the 8 Ape-X actors"):
        process_options(options, 8, 3, 0)


def test_a_rollout_travels_as_bytes_with_its_own_shapes():
    from jaxrl.runners.distributed.link import concat_envs, pack, unpack

    rng = np.random.default_rng(0)
    t = Transition(*(rng.normal(size=(3, 2, 4)).astype(np.float32) for _ in range(6)), {})
    template = jax.tree.map(lambda x: np.zeros((3, 8, 4), x.dtype), t)  # the learner's
    back = unpack(template, pack(t))
    pairs = zip(jax.tree.leaves(t), jax.tree.leaves(back), strict=True)
    assert all(np.array_equal(a, b) for a, b in pairs)
    joined = concat_envs([t, back])
    assert joined.obs.shape == (3, 4, 4) and np.array_equal(joined.obs[:, 2:], t.obs)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agent", "dqn"], "agent 'dqn' has no actors; actor processes feed apex_ddpg"),
        (["--agent", "apex_dqn"], "--actor-processes 2 runs a learner and 2 actor processes"),
        (["--agent", "apex_dqn", "--actor-processes", "-1"], "--actor-processes must be >= 0"),
    ],
)
def test_cli_refuses_as_one_line(tmp_path, capsys, argv, message):
    from jaxrl.experiment.actors import check
    from jaxrl.experiment.config import resolve
    from jaxrl.experiment.launch import Launch
    from jaxrl.train import main

    base = ["--env", "CartPole", "--logdir", str(tmp_path), "--actor-processes", "2"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not any(tmp_path.iterdir())
    for launch, what in (
        (Launch(actor_processes=3), "must divide env.num_envs 4"),
        (Launch(actor_processes=2, seeds=2), "one seed on one device"),
    ):
        config = resolve(agent="apex_dqn", env="CartPole", num_envs=4)
        with pytest.raises(ConfigError, match=what):
            check(config, launch)


def _launch(tmp_path, *extra):
    command = [sys.executable, "-m", "jaxrl.launch", "--processes", "3", "--timeout", "120"]
    command += ["--", sys.executable, "-m", "jaxrl.train", *TINY, *extra]
    command += ["--logdir", str(tmp_path)]
    return subprocess.run(command, capture_output=True, text=True, env=fake_devices_env(1))


def test_learner_replays_exactly_what_the_actor_processes_collected(tmp_path):
    """With ``--sync-actors``, rollout ``g`` of each actor process is collected with
    version ``g``: the learner's final state (its replay, parameters and actors' copy) is
    the one of a single process that joins the same actors' rollouts and updates on them."""
    done = _launch(tmp_path, "--actor-processes", "2", "--sync-actors")
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = tmp_path.iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["policy_lag"] for r in rows] == [0.0] * 3 and rows[-1]["step"] == 192
    from jaxrl.checkpoint import restore

    _, saved, config = restore(run)
    want = _one_process(config, processes=2, iterations=6, per_chunk=2)
    assert np.array_equal(saved.buffer.storage.data.obs, want.buffer.storage.data.obs)
    assert np.array_equal(saved.buffer.storage.data.action, want.buffer.storage.data.action)
    for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _one_process(config, processes: int, iterations: int, per_chunk: int):
    """The learner's state after ``iterations`` updates on the rollouts the actor
    processes of ``config`` collect, computed here in one process."""
    from jaxrl import agents
    from jaxrl.experiment.actors import actor_key, actor_parts
    from jaxrl.runners.distributed.actor_processes import acting_view
    from jaxrl.runners.distributed.link import concat_envs
    from jaxrl.runners.distributed.sebulba import ActorState, collect_rollout, learner_update
    from jaxrl.runners.scan import make_rollout

    env = config.env.make()
    learner = agents.build(config.agent, env.spec)
    key, agent_key = jax.random.split(jax.random.split(jax.random.PRNGKey(config.run.seed))[0])
    state = jax.jit(learner.init)(agent_key)
    actors = []
    for p in range(1, processes + 1):
        agent, actor_env = actor_parts(config, processes, p - 1)
        a_key, e_key, own_key = jax.random.split(actor_key(config.run.seed, p), 3)
        env_state, ts = jax.jit(actor_env.reset)(e_key)
        actor = ActorState(env_state, ts.obs, agent.init_carry(actor_env.spec.num_envs), own_key)
        collect = jax.jit(make_rollout(agent, actor_env, config.run.rollout_len))
        actors.append((jax.jit(agent.init)(a_key), actor, collect))

    update = learner_update(learner)
    for g in range(iterations):
        rollouts = []
        for local, actor, collect in actors:
            local = local.replace(**acting_view(state))
            rollouts.append(collect_rollout(collect, actor, local)[0])
        state, _, key = update(state, concat_envs(jax.device_get(rollouts)), key)
        if (g + 1) % per_chunk == 0:
            key, _ = jax.random.split(key)  # the chunk's evaluation key
    return state
