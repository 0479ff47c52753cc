"""``python -m jaxrl.train --self-play``, ``--agents`` and the several-player agents: bad
input is one line, exit code 2, nothing written; ``--agent ippo`` runs to its end."""

import os
import subprocess
import sys

import pytest

from jaxrl.train import main
from tests.device_script import ROOT
from tests.helpers import tensorboard_values

pytest.importorskip("pgx")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agent", "dqn", "--env", "CartPole", "--self-play"], "needs a turn-based game"),
        (["--agent", "dqn", "--env", "connect_four"], "train it with --self-play"),
        (["--agent", "ppo", "--env", "tic_tac_toe", "--self-play"], "not 'ppo'"),
        (["--agent", "rainbow", "--env", "tic_tac_toe", "--self-play"], "--agent.n_step 1"),
        (["--agent", "dqn", "--env", "CartPole", "--run.opponent_pool", "2"], "--self-play only"),
        (
            ["--agent", "rainbow", "--env", "connect_four", "--self-play", "--num-envs", "8"],
            "give more envs (--num-envs) or a smaller --run.opponent_pool",
        ),
    ],
)
def test_bad_self_play_input(argv, message, tmp_path, capsys):
    assert main([*argv, "--logdir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agents", "dqn,dqn,dqn", "--env", "tic_tac_toe"], "give 2 agents, not 3"),
        (["--agents", "dqn,dqn", "--env", "CartPole"], "needs a turn-based game"),
        (["--agents", "ppo,dqn", "--env", "tic_tac_toe"], "not 'ppo'"),
        (["--agents", "rainbow,dqn", "--env", "tic_tac_toe"], "--agent.n_step 1"),
        (["--agents", "dqn,dqn", "--env", "tic_tac_toe", "--self-play"], "drop --agents"),
        (["--agent", "dqn", "--agents", "dqn,dqn", "--env", "tic_tac_toe"], "either --agent"),
        (["--agents", "dqn,nope", "--env", "tic_tac_toe"], "unknown agent 'nope'"),
        (
            ["--agents", "dqn,dqn", "--env", "tic_tac_toe", "--sweep", "agent.lr=1e-3,3e-4"],
            "--seeds only",
        ),
        (["--agents", "dqn,dqn", "--env", "tic_tac_toe", "--devices", "2"], "--seeds only"),
        (
            ["--agent", "dqn", "--env", "tic_tac_toe", "--self-play", "--devices", "2"],
            "has players",
        ),
        (["--agent", "dqn", "--env", "mpe:simple_spread", "--env.shared", "false"], "maddpg"),
        (["--agent", "maddpg", "--env", "mpe:simple_spread", "--env.shared", "true"], "2+ players"),
        (["--agent", "maddpg", "--env", "tic_tac_toe"], "train it with --self-play"),
    ],
)
def test_bad_independent_agents_input(argv, message, tmp_path, capsys):
    """``--agents`` (independent agents) and the simultaneous-move games: bad input is one
    line, exit code 2, nothing written."""
    assert main([*argv, "--logdir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_ippo_cli_runs_to_the_end(tmp_path):
    """``--agent ippo`` from the CLI in a fresh process (the regression test of its hang:
    the init of one PPO per player, vmapped, was a batched LAPACK QR that waited forever
    on XLA:CPU's thread pool; ``networks.initializers.orthogonal``). Exit 0, a summary."""
    pytest.importorskip("jaxmarl")
    argv = "--agent ippo --env mpe:simple_spread --num-envs 2 --steps 32 --run.rollout_len 16"
    argv += " --run.log_every 32 --run.eval_every 0 --run.eval_episodes 2"
    argv += " --agent.update_epochs 1 --agent.num_minibatches 1 --log="
    root = str(ROOT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "jaxrl.train", *argv.split(), "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "summary.yaml").exists()


def test_independent_agents_train_evaluate_export_and_resume(tmp_path, capsys):
    """A run of independent agents (``--agents dqn,dqn``) evaluates (with TensorBoard's
    evaluation histograms, per agent), checkpoints, resumes, and is evaluated and exported
    per agent (each agent's state, not the tuple of them: the crash of
    ``'tuple' object has no attribute 'params'``)."""
    pytest.importorskip("tensorboardX")
    from jaxrl.checkpoint import restore
    from jaxrl.evaluate import main as evaluate
    from jaxrl.export.__main__ import main as export

    small = "--num-envs 4 --run.rollout_len 2 --run.log_every 64 --run.eval_every 64"
    small += " --run.eval_episodes 4 --agent.learning_starts 16 --agent.batch_size 8"
    small += " --agent.buffer_size 256 --agent.hidden_sizes [16] --log tensorboard"
    argv = ["--agents", "dqn,dqn", "--env", "tic_tac_toe", "--steps", "128", *small.split()]
    assert main([*argv, "--logdir", str(tmp_path)]) == 0
    (run,) = tmp_path.iterdir()
    tags = {value.tag for _, value in tensorboard_values(run) if value.HasField("histo")}
    assert tags == {f"eval/a{p}/{k}" for p in (0, 1) for k in ("q_values", "actions")}, tags

    capsys.readouterr()
    assert evaluate([str(run), "--episodes", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("dqn,dqn on tic_tac_toe, checkpoint 128")
    assert [line.split(":")[0] for line in lines[1:]] == ["a0", "a1"]

    assert export([str(run), "--format", "stablehlo"]) == 0
    assert export([str(run), "--format", "stablehlo", "--player", "1"]) == 0
    written = sorted(p.name for p in (run / "export").iterdir())
    assert written == ["policy_128_a0.stablehlo", "policy_128_a1.stablehlo"]
    assert export([str(run), "--format", "stablehlo", "--player", "2"]) == 2
    assert "the run has agents 0-1" in capsys.readouterr().err

    agents, states, _ = restore(run)
    assert len(agents) == len(states) == 2
    assert hasattr(states[1], "params")

    assert main(["--resume", str(run), "--steps", "256"]) == 0
    assert max(int(p.name) for p in (run / "checkpoints").iterdir()) == 256
