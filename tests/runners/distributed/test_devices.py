"""Data parallelism over devices (``runners/distributed/devices.py``): on 4 fake CPU devices, PPO,
DQN and IMPALA with their envs split over the devices compute what one device computes (same
episodes, parameters within rtol 1e-5), with the per-env state really split; a device
count that does not fit is one line.

The 4-device program runs in a subprocess: the CPU device count is fixed when JAX starts
(``--xla_force_host_platform_device_count``)."""

import json
import subprocess
import sys
import textwrap

import pytest

from jaxrl.runners.distributed.devices import env_mesh
from jaxrl.types import ConfigError
from tests.device_script import fake_devices_env, run_script
from tests.helpers import one_line_error

# The runner of each case, shared by the one-process and the two-process programs.
CASES = textwrap.dedent(
    """
    import jax, numpy as np
    from jaxrl import agents, envs
    from jaxrl.runners import RunConfig, make_runner
    from jaxrl.runners.distributed.devices import data_parallel, env_mesh

    N = 8
    CASES = {
        "ppo": ({"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": [16]}, 16),
        "dqn": ({"learning_starts": 64, "batch_size": 16, "buffer_size": 512,
                 "hidden_sizes": [16], "updates_per_rollout": 2}, 4),
        "impala": ({"hidden_sizes": [16]}, 16),
    }

    def make(name):
        overrides, rollout_len = CASES[name]
        env = envs.make("CartPole", num_envs=N)
        agent = agents.make(name, env.spec, **overrides)
        return make_runner(agent, env, RunConfig(
            steps=N * rollout_len * 10, rollout_len=rollout_len,
            log_every=N * rollout_len * 5, eval_every=0))

    def train(runner):
        state = jax.jit(runner.init)(jax.random.PRNGKey(0))
        chunk = jax.jit(runner.run_chunk)
        rows = []
        for _ in range(2):  # 10 iterations: 10 updates of PPO and IMPALA, 20 of DQN
            state, metrics = chunk(state)
            rows.append(float(np.sum(np.asarray(metrics["episode_return_sum"]))))
        return state, rows

    def fingerprint(state):
        \"\"\"Per-leaf float64 sums of the agent state, from this process's first shard.\"\"\"
        return [float(np.asarray(x.addressable_data(0), np.float64).sum())
                for x in jax.tree.leaves(state.agent_state)]
    """
)

SCRIPT = (
    """
import json, os
"""
    + CASES
    + textwrap.dedent(
        """
    from jaxrl.types import ConfigError

    out = {"devices": len(jax.devices())}
    for name in CASES:
        runner = make(name)
        one, rows_one = train(runner)
        four, rows_four = train(data_parallel(runner, env_mesh(4, N), N))
        leaves = zip(jax.tree.leaves(one.agent_state), jax.tree.leaves(four.agent_state))
        out[name] = {
            "rows": [rows_one, rows_four],
            "close": all(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
                         for a, b in leaves),
            "obs_spec": list(jax.tree.leaves(four.obs)[0].sharding.spec),
            "obs_devices": len(jax.tree.leaves(four.obs)[0].sharding.device_set),
            "params_replicated": jax.tree.leaves(four.agent_state)[0].sharding.is_fully_replicated,
            "fingerprint": fingerprint(four),
        }
    try:
        env_mesh(4, 6)
    except ConfigError as e:
        out["indivisible"] = str(e)
    from jaxrl.train import main as train
    from tests.helpers import tiny_run
    tiny = tiny_run("--num-envs 8 --steps 512 --agent.hidden_sizes [16] --agent.batch_size 16"
                    " --log ''")
    for count in ("1", "4"):
        logdir = os.path.join(os.environ["OUT_DIR"], count)
        code = train([*tiny, "--devices", count, "--logdir", logdir])
        (run,) = os.listdir(logdir)
        with open(os.path.join(logdir, run, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        out["cli_" + count] = [code, [(r["step"], r["episode_return"], r["eval_return"])
                                      for r in rows]]
    print("RESULT " + json.dumps(out))
    """
    )
)

# Two processes of 2 CPU devices each, joined by jax.distributed into one 4-device mesh.
TWO_PROCESSES = (
    """
import json, os, sys
import jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(os.environ["COORDINATOR"], 2, int(sys.argv[1]),
                           initialization_timeout=120)
"""
    + CASES
    + textwrap.dedent(
        """
    from jax.sharding import Mesh
    mesh = Mesh(np.array(jax.devices()), ("envs",))
    state, rows = train(data_parallel(make("dqn"), mesh, N))
    print("RESULT " + json.dumps({"devices": len(jax.devices()),
                                  "local": len(jax.local_devices()),
                                  "rows": rows, "fingerprint": fingerprint(state)}))
    """
    )
)


@pytest.fixture(scope="module")
def four_devices(tmp_path_factory):
    return run_script(SCRIPT, tmp_path_factory.mktemp("devices"), "four.py", devices=4)[0]


@pytest.mark.parametrize("agent", ["ppo", "dqn", "impala"])
def test_four_devices_compute_what_one_device_computes(four_devices, agent):
    assert four_devices["devices"] == 4
    result = four_devices[agent]
    rows_one, rows_four = result["rows"]
    assert rows_one == rows_four and sum(rows_one) > 0
    assert result["close"]
    assert result["obs_spec"] == ["envs"] and result["obs_devices"] == 4
    assert result["params_replicated"]


def test_train_with_devices_logs_what_one_device_logs(four_devices):
    code_one, rows_one = four_devices["cli_1"]
    code_four, rows_four = four_devices["cli_4"]
    assert code_one == code_four == 0
    assert rows_one == rows_four and len(rows_one) == 2


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--devices", "2"], "this process has 1 CPU device"),
        (["--devices", "two"], "--devices must be a positive integer or 'all'"),
        (["--devices", "0"], "--devices must be >= 1"),
        (["--devices", "all", "--seeds", "2"], "--seeds and --sweep already spread"),
    ],
)
def test_bad_devices_flags_write_nothing(tmp_path, capsys, flags, message):
    from jaxrl.train import main as train

    code = train(["--agent", "dqn", "--env", "CartPole", *flags, "--logdir", str(tmp_path)])
    one_line_error(capsys, message)
    assert code == 2
    assert not list(tmp_path.iterdir())


def test_device_counts_that_do_not_fit_are_one_line(four_devices):
    assert "does not divide the 6 envs" in four_devices["indivisible"]
    with pytest.raises(ConfigError, match="this process has 1 CPU device"):
        env_mesh(2, 8)
    with pytest.raises(ConfigError, match="positive integer or 'all'"):
        env_mesh(0, 8)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_of_two_devices_equal_one_process_of_four(four_devices, tmp_path):
    script = tmp_path / "two.py"
    script.write_text(TWO_PROCESSES)
    env = fake_devices_env(2, COORDINATOR=f"127.0.0.1:{free_port()}")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    outputs = [p.communicate() for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-3000:]
    want = four_devices["dqn"]
    for stdout, _ in outputs:
        line = next(li for li in stdout.splitlines() if li.startswith("RESULT "))
        got = json.loads(line.removeprefix("RESULT "))
        assert (got["devices"], got["local"]) == (4, 2)
        assert got["rows"] == want["rows"][1]
        assert got["fingerprint"] == pytest.approx(want["fingerprint"], rel=1e-6, abs=1e-9)
