"""The CLI: runs, the run directory, reproduction from config.yaml, and user mistakes
(one line on stderr, exit code 2, nothing written)."""

import json
import re
import subprocess
import sys

import jax.numpy as jnp
import pytest
import yaml

from jaxrl import agents, envs
from jaxrl.train import main
from jaxrl.types import Agent
from tests.helpers import one_line_error, run_dirs, tensorboard_values, tiny_run, train_into

# The tiny DQN with two updates a rollout and its preset's rollout length, evaluated every
# other row.
TINY = tiny_run("--agent.updates_per_rollout 2 --run.eval_every 512", drop=["--run.rollout_len"])


def scalars(run_dir):
    """{tag: [(step, value)]} of the run's TensorBoard scalars."""
    out = {}
    for step, value in tensorboard_values(run_dir):
        out.setdefault(value.tag, []).append((step, value.simple_value))
    return out


def test_run_directory_and_reproduction(tmp_path, capsys):
    logdir = tmp_path / "runs"
    assert main([*TINY, "--steps", "1024", "--seed", "3", "--logdir", str(logdir)]) == 0
    (first,) = run_dirs(logdir)
    cfg = yaml.safe_load((first / "config.yaml").read_text())
    assert cfg["preset"] == "cartpole-dqn"
    assert cfg["agent"]["hidden_sizes"] == [8] and cfg["env"]["num_envs"] == 4
    assert cfg["run"]["seed"] == 3 and cfg["run"]["stop_return"] is None
    rows = [json.loads(line) for line in (first / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [256 * i for i in range(1, 5)]
    assert [r["eval_return"] is not None for r in rows] == [False, True, False, True]
    header = (first / "metrics.csv").read_text().splitlines()[0].split(",")
    for column in (
        "step",
        "time",
        "sps",
        "episode_return",
        "episode_length",
        "eval_return",
        "loss",
    ):
        assert column in header
    assert "summary" in capsys.readouterr().out
    # TensorBoard events (tensorboardX is a dev dependency) hold the logged scalars under
    # grouped tags, and the final evaluation and the summary at the last step.
    logged = scalars(first)
    steps, returns = zip(*logged["train/episode_return"], strict=True)
    assert list(steps) == [r["step"] for r in rows]
    assert list(returns) == pytest.approx([r["episode_return"] for r in rows], rel=1e-6)
    summary = yaml.safe_load((first / "summary.yaml").read_text())
    assert logged["eval/final_return"] == [(1024, pytest.approx(summary["final_eval_return"]))]
    assert logged["summary/run_time"] == [(1024, pytest.approx(summary["run_time"]))]

    # The saved config alone reproduces the run: same config, same metrics.
    assert main(["--config", str(first / "config.yaml"), "--logdir", str(logdir)]) == 0
    second = next(p for p in run_dirs(logdir) if p != first)
    assert yaml.safe_load((second / "config.yaml").read_text()) == cfg
    again = [json.loads(line) for line in (second / "metrics.jsonl").read_text().splitlines()]
    for a, b in zip(rows, again, strict=True):
        assert a["episode_return"] == pytest.approx(b["episode_return"])
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (
            ["--agent", "nope"],
            "unknown agent 'nope'; available: " + ", ".join(sorted(agents.available())),
        ),
        (["--env", "Pong-v9"], "Pong-v9"),
        (["--agent.learnin_rat", "1"], "unknown option 'learnin_rat'"),
        (["--agent.lr", "fast"], "option 'lr': expected float"),
        (["--agent", "dqn", "--env", "Pendulum"], "discrete action space"),
        (["--config", "missing.yaml"], "does not exist"),
        (["--steps", "many"], "--steps"),
        (["--agent.lr"], "needs a value"),
        (["--agent.buffer_size", "4"], "agent.buffer_size 4 must hold one rollout"),
        (["stray"], "unrecognized argument 'stray'"),
        (["--agent.optimizer", "adagrad"], "'adagrad' is not one of 'adam', 'adamw'"),
        (["--agent", "ppo", "--agent.lr_schedule", "step"], "'step' is not one of 'constant'"),
        (
            ["--agent.lr_schedule", "piecewise", "--agent.lr_boundaries", "[2000, 1000]",
             "--agent.lr_scales", "[0.1, 0.1]"],
            "lr_boundaries must be strictly increasing, got [2000, 1000]",
        ),
        (["--agent", "sac", "--env", "Pendulum", "--agent.lr_schedule", "cosine"],
         "needs lr_decay_steps"),
        (
            ["--agent.epsilon_schedule", "piecewise", "--agent.epsilon_boundaries", "[5, 5]",
             "--agent.epsilon_values", "[1.0, 0.1]"],
            "epsilon_boundaries must be strictly increasing",
        ),
    ],
)  # fmt: skip
def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys, argv, fragment):
    assert train_into(tmp_path / "runs", *argv) == (2, [])
    one_line_error(capsys, fragment)


def make_constant_agent(spec, **overrides) -> Agent:
    """A user's own agent, imported by the CLI as tests.test_train:make_constant_agent."""
    return Agent(
        init=lambda key: {"step": jnp.zeros((), jnp.int32)},
        act=lambda s, obs, carry, key, explore=True: (jnp.ones(obs.shape[0], jnp.int32), carry, {}),
        update=lambda s, rollout, key: (s, {"constant": jnp.float32(1.0)}),
    )


def test_user_agent_by_module_path(tmp_path):
    logdir = tmp_path / "runs"
    argv = ["--agent", "tests.test_train:make_constant_agent", "--env", "CartPole"]
    assert main([*argv, "--steps", "64", "--logdir", str(logdir), "--run.log_every", "32"]) == 0
    (run,) = run_dirs(logdir)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["constant"] for r in rows] == [1.0, 1.0]


def test_process_exit_code_and_help():
    bad = subprocess.run(
        [sys.executable, "-m", "jaxrl.train", "--agent", "nope"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown agent 'nope'")
    assert "Traceback" not in bad.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "jaxrl.train", "--help"], capture_output=True, text=True
    )
    assert shown.returncode == 0
    names = ["dqn", "rainbow", "random", "CartPole-v1", "Acrobot-v1", "MountainCar-v0"]
    for name in [*names, "Pendulum-v1", "MountainCarContinuous-v0", "--agent.KEY"]:
        assert name in shown.stdout
    # One line per env family (issue 13, item 12): not 104 Atari games; gym:ID is listed.
    assert "104 games" in shown.stdout and "Pong" not in shown.stdout
    lines = shown.stdout.splitlines()
    start = lines.index("environments, by family:")
    families = lines[start + 1 : lines.index("", start)]
    assert len(families) == len(envs.groups()) + 1 and "gym:ID" in families[-1]
    start = next(i for i, line in enumerate(lines) if line.startswith("agents ("))
    listed = lines[start + 1 : lines.index("", start)]  # one line per agent: name, meaning
    names = [line.split()[0] for line in listed]
    assert all(re.fullmatch(r"  [a-z0-9_]+ +\S.*", line) for line in listed)
    assert len(set(names)) == len(names) and {"dqn", "rainbow", "r2d2"} <= set(names)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--agent", "sac", "--env", "Pendulum", "--agent.torso", "{init_fn: glorious}"],
         "unknown initializer 'glorious'"),
        (["--agent", "sac", "--env", "Pendulum", "--agent.torso",
          "{channels: [8], kernel_sizes: [3]}"], "not an image"),
        (["--agent", "td3", "--env", "Pendulum", "--env.pixels", "true", "--env.resize", "8",
          "--agent.torso", "{channels: [8], kernel_sizes: [12]}"], "kernel 12 is larger"),
        (["--agent", "dqn", "--agent.torso", "nonesuch"], "unknown torso 'nonesuch'"),
        (["--import", "no_such_module_t20"], "no module named 'no_such_module_t20'"),
        (["--env", "CartPole", "--env.pixels", "true"], "no JAX renderer"),
    ],
)  # fmt: skip
def test_torso_and_pixel_mistakes_exit_2_with_one_line(tmp_path, capsys, argv, fragment):
    assert train_into(tmp_path / "runs", *argv) == (2, [])
    one_line_error(capsys, fragment)
