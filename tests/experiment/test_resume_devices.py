"""A checkpoint restores on a different device count (``--resume RUN --devices K``): a
run trained on 4 fake CPU devices is read back on 4, 2 and 1 devices leaf for leaf equal
to what was saved, laid out on the new devices; resumed on 2 it goes on and logs what a
run trained on 1 device and resumed on 4 logs; a count that does not divide the envs is
one line. The CPU device count is fixed when JAX starts: the runs are in a subprocess."""

import textwrap

import pytest

from tests.device_script import run_script

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import jax, numpy as np
    from jaxrl.experiment import checkpoint
    from jaxrl.experiment.run import build
    from jaxrl.runners.distributed import devices
    from jaxrl.train import main as train
    from tests.helpers import tiny_run

    out_dir = os.environ["OUT_DIR"]
    tiny = tiny_run("--num-envs 8 --agent.hidden_sizes [16] --agent.batch_size 16 --log ''")

    def run_dir(name):
        (run,) = os.listdir(os.path.join(out_dir, name))
        return os.path.join(out_dir, name, run)

    def rows(name):
        with open(os.path.join(run_dir(name), "metrics.jsonl")) as f:
            return [(r["step"], r["episode_return"], r["eval_return"]) for r in map(json.loads, f)]

    out = {}
    for name, first, then in (("a", "4", "2"), ("b", "1", "4")):
        logdir = os.path.join(out_dir, name)
        out[name] = [train([*tiny, "--steps", "256", "--devices", first, "--logdir", logdir])]
        if name == "a":  # the saved state read back on 4, 2 and 1 devices
            setup = build(run_dir("a"))
            shape, n = setup.saved_shape(), 8
            loaded = {}
            for count in (4, 2, 1):
                shardings = devices.env_shardings(devices.env_mesh(count, n), shape, n)
                state = checkpoint.load(run_dir("a"), shape, 256, shardings).state
                loaded[count] = state
                obs = jax.tree.leaves(state.obs)[0]
                out[f"obs_devices_{count}"] = len(obs.sharding.device_set)
            leaves = [jax.tree.leaves(loaded[c]) for c in (4, 2, 1)]
            out["equal"] = all(
                np.array_equal(np.asarray(x), np.asarray(y))
                and np.array_equal(np.asarray(x), np.asarray(z))
                for x, y, z in zip(*leaves, strict=True)
            )
            out["leaves"] = len(leaves[0])
        out[name].append(train(["--resume", run_dir(name), "--steps", "512", "--devices", then]))
        out[name + "_rows"] = rows(name)
        with open(os.path.join(run_dir(name), "launch.yaml")) as f:
            out[name + "_launch"] = f.read()
    out["bad"] = train(["--resume", run_dir("a"), "--steps", "768", "--devices", "3"])
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    return run_script(SCRIPT, tmp_path_factory.mktemp("resume_devices"), "resume.py", devices=4)


def test_a_checkpoint_reads_back_equal_on_another_device_count(resumed):
    out, _ = resumed
    assert out["equal"] and out["leaves"] > 10
    assert (out["obs_devices_4"], out["obs_devices_2"], out["obs_devices_1"]) == (4, 2, 1)


def test_a_run_resumed_on_another_device_count_goes_on(resumed):
    out, _ = resumed
    assert out["a"] == [0, 0] and out["b"] == [0, 0]
    assert [r[0] for r in out["a_rows"]] == [256, 512]
    assert out["a_rows"] == out["b_rows"]  # 4 -> 2 devices logs what 1 -> 4 logs
    assert "devices: 2" in out["a_launch"] and "devices: 4" in out["b_launch"]


def test_a_device_count_that_does_not_divide_the_envs_is_one_line(resumed):
    out, stderr = resumed
    assert out["bad"] == 2
    assert "--devices 3 does not divide the 8 envs" in stderr
