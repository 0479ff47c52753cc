"""Process groups (``runners/distributed/topology.py``, ``jaxrl.launch``): the rendezvous lets a job
through when every process comes and turns a missing peer, a silent coordinator or an id
given twice into one line within the deadline; ``jaxrl.train`` with a peer that never
joins exits 2 writing nothing; two launched processes form one JAX runtime."""

import subprocess
import sys
import threading

import pytest

from jaxrl.launch import environments, free_port
from jaxrl.runners.distributed.topology import Topology, rendezvous
from jaxrl.types import ConfigError
from tests.device_script import fake_devices_env
from tests.helpers import one_line_error


def run_all(ids, num_processes, timeout=5.0):
    """``rendezvous`` of each id in ``ids`` on its own thread; ``{id: exception or None}``
    (a repeated id is keyed ``(id, k)``)."""
    address = f"127.0.0.1:{free_port()}"
    out = {}

    def one(key, i):
        try:
            rendezvous(Topology(address, num_processes, i, timeout))
            out[key] = None
        except ConfigError as e:
            out[key] = e

    keys = [(i, k) if ids.count(i) > 1 else i for k, i in enumerate(ids)]
    threads = [
        threading.Thread(target=one, args=(key, i)) for key, i in zip(keys, ids, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_every_process_passes_the_rendezvous():
    assert run_all([2, 0, 1], 3) == {0: None, 1: None, 2: None}


def test_a_peer_that_never_joins_is_one_line():
    out = run_all([0], 2, timeout=1.0)
    assert "1 of 2 processes joined" in str(out[0]) and "missing process ids 1" in str(out[0])
    out = run_all([1], 2, timeout=1.0)
    assert "did not answer within 1 s" in str(out[1])


def test_an_id_given_twice_is_one_line():
    out = run_all([0, 1, 1], 3, timeout=3.0)
    assert "process id 1 joined" in str(out[0]) and "twice" in str(out[0])


@pytest.mark.parametrize(
    "args,message",
    [
        (("localhost", 2, 0), "--coordinator must be HOST:PORT"),
        (("127.0.0.1:70000", 2, 0), "--coordinator must be HOST:PORT"),
        (("127.0.0.1:1234", 0, 0), "--num-processes must be >= 1"),
        (("127.0.0.1:1234", 2, 2), r"--process-id must be in \[0, 2\)"),
        (("127.0.0.1:1234", 2, 0, 0.0), "--init-timeout must be > 0"),
    ],
)
def test_bad_topologies_are_config_errors(args, message):
    with pytest.raises(ConfigError, match=message):
        Topology(*args)


def test_topology_from_the_launchers_environment():
    (env0, env1) = environments(Topology("10.0.0.1:99", 2, 0, 7.0))
    assert Topology.from_env(env1) == Topology("10.0.0.1:99", 2, 1, 7.0)
    assert env0["JAXRL_PROCESS_ID"] == "0" and Topology.from_env({}) is None


def test_train_with_a_peer_that_never_joins_exits_2_writing_nothing(tmp_path, capsys):
    from jaxrl.train import main as train

    flags = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2"]
    flags += ["--process-id", "0", "--init-timeout", "1"]
    code = train(["--agent", "dqn", "--env", "CartPole", *flags, "--logdir", str(tmp_path)])
    one_line_error(capsys, "missing process ids 1")
    assert code == 2
    assert not list(tmp_path.iterdir())
    code = train(["--agent", "dqn", "--env", "CartPole", "--num-processes", "2"])
    assert code == 2 and "together" in capsys.readouterr().err


JOIN = """
import os, sys
import jax
from jaxrl.runners.distributed.topology import Topology, join
topology = Topology.from_env()
join(topology)
total = jax.numpy.sum(jax.numpy.ones(4))  # a program on the joined runtime
line = f"JOINED {topology.process_id} {jax.process_count()} {len(jax.devices())} {float(total)}\\n"
os.write(1, line.encode())  # one write: the two processes share the launcher's stdout
jax.distributed.shutdown()
sys.stdout.flush()
os._exit(0)  # the runtime's own teardown at exit takes seconds more
"""
FAIL = "import os, sys; sys.exit(3 if os.environ['JAXRL_PROCESS_ID'] == '1' else 0)"


def test_launched_processes_form_one_runtime_and_a_failure_is_passed_on(tmp_path):
    script = tmp_path / "join.py"
    script.write_text(JOIN)
    env = fake_devices_env(2)
    launch = [sys.executable, "-m", "jaxrl.launch", "--processes", "2", "--timeout", "60"]
    done = subprocess.run(
        [*launch, "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted(li for li in done.stdout.splitlines() if li.startswith("JOINED"))
    assert lines == ["JOINED 0 2 4 4.0", "JOINED 1 2 4 4.0"]
    failed = subprocess.run(
        [*launch, "--", sys.executable, "-c", FAIL],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert failed.returncode == 3
    bad = subprocess.run([*launch], capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "after '--'" in bad.stderr
