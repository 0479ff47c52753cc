"""``python -m jaxrl.train`` as one run over a job of several processes
(``python -m jaxrl.launch``, ``runners/distributed/topology.py``): 2 processes of 2 fake CPU devices
each train what 1 process of 4 devices trains, process 0 alone writes the run directory,
every process saves the checkpoints with Orbax, and a resume as 2 processes goes on from
them as the one-process run went on."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.device_script import fake_devices_env, run_script

TINY = [
    *("--agent", "ppo", "--env", "CartPole", "--num-envs", "8", "--agent.hidden_sizes", "[16]"),
    *("--agent.num_minibatches", "2", "--agent.update_epochs", "2", "--run.rollout_len", "16"),
    *("--run.log_every", "512", "--run.eval_every", "512", "--run.eval_episodes", "2"),
    *("--run.stop_return", "null", "--log", "", "--checkpoint-every", "512"),
    *("--agent.anneal_lr", "false"),  # the same learning rates over 1024 and 1536 steps
]

# One process of 4 devices trains 1536 steps (checkpoints 512, 1024, 1536), then reads
# every checkpoint of both runs and the two-process run's rows.
ONE_PROCESS = textwrap.dedent(
    """
    import json, os
    import jax, numpy as np
    from jaxrl.experiment.run import restore
    from jaxrl.train import main as train

    out_dir = os.environ["OUT_DIR"]
    code = train([*json.loads('TINY_JSON'), "--steps", "1536", "--devices", "4",
                  "--logdir", os.path.join(out_dir, "one")])
    (one,) = [os.path.join(out_dir, "one", d) for d in os.listdir(os.path.join(out_dir, "one"))]
    (two,) = [os.path.join(out_dir, "two", d) for d in os.listdir(os.path.join(out_dir, "two"))]

    def rows(run):
        with open(os.path.join(run, "metrics.jsonl")) as f:
            return [(r["step"], r["episode_return"], r["eval_return"]) for r in map(json.loads, f)]

    def close(step):
        a, b = restore(one, step)[1], restore(two, step)[1]
        return all(np.allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)
                   for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))

    print("RESULT " + json.dumps({
        "code": code, "rows": [rows(one), rows(two)],
        "close": {step: close(step) for step in (1024, 1536)},
    }))
    """
)


def _launch(argv: list[str], logdir: Path) -> subprocess.CompletedProcess:
    env = fake_devices_env(2)
    command = [sys.executable, "-m", "jaxrl.launch", "--processes", "2", "--timeout", "120"]
    command += ["--", sys.executable, "-m", "jaxrl.train", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=logdir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("processes")
    first = _launch([*TINY, "--steps", "1024", "--logdir", "two"], out)
    assert first.returncode == 0, first.stderr[-3000:]
    (run,) = (out / "two").iterdir()
    written = sorted(p.name for p in run.iterdir())
    resumed = _launch(["--resume", str(run), "--steps", "1536"], out)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    one_process = ONE_PROCESS.replace("TINY_JSON", json.dumps(TINY))
    result, _ = run_script(one_process, out, "one.py", devices=4)
    return out, written, first, resumed, result


def test_two_processes_train_what_one_process_of_four_devices_trains(runs):
    """Same metric rows (episode returns and evaluations), and agent states within rtol
    1e-5 at the end of the first launch (1024 steps) and after the resume (1536)."""
    _, _, _, _, result = runs
    assert result["code"] == 0
    one, two = result["rows"]
    assert len(one) == 3 and one == two
    assert result["close"] == {"1024": True, "1536": True}


def test_process_zero_alone_writes_the_run(runs):
    """One run directory, written once (its rows not doubled), with the files of a
    one-process run; both processes' shards in each checkpoint; one summary printed."""
    out, written, first, _, _ = runs
    (run,) = (out / "two").iterdir()
    assert written == [
        ".lock",
        "checkpoints",
        "config.yaml",
        "launch.yaml",
        "metrics.csv",
        "metrics.jsonl",
        "summary.yaml",
    ]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["1024", "1536", "512"]
    state = run / "checkpoints" / "1024" / "state"
    assert {"ocdbt.process_0", "ocdbt.process_1"} <= {p.name for p in state.iterdir()}
    assert first.stdout.count("final evaluation") == 1
    assert sorted(os.listdir(out)) == ["one", "one.py", "two"]


def test_what_a_job_of_processes_cannot_run_is_one_line(monkeypatch):
    """Seen from a process of a 2-process job (``jax.process_count`` patched): a device
    count other than the job's, or an option that is not one run over the job's devices,
    is a ConfigError naming it; a job of one process broadcasts nothing."""
    import jax

    from jaxrl.experiment.modes import check_job
    from jaxrl.experiment.setup import Launch
    from jaxrl.runners.distributed.devices import env_mesh
    from jaxrl.runners.distributed.topology import broadcast_text
    from jaxrl.types import ConfigError

    assert broadcast_text("runs/x") == "runs/x"
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    with pytest.raises(
        ConfigError, match="--devices 4: a job of 2 processes .* give --devices all"
    ):
        env_mesh(4, 8)
    assert env_mesh("all", 8).devices.size == len(jax.devices())
    for launch, flag in (
        (Launch(devices=1), "give --devices all"),
        (Launch(devices="all", seeds=2), "drop --seeds/--sweep"),
        (Launch(devices="all", actor_threads=2), "drop --actor-threads"),
        (Launch(devices="all", callbacks=["export"]), "drop --callback"),
    ):
        with pytest.raises(ConfigError, match=flag):
            check_job(launch)
    check_job(Launch(devices="all"))
