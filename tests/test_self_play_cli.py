"""``python -m jaxrl.train --self-play``: bad input is one line, exit code 2, nothing written."""

import pytest

from jaxrl.train import main

pytest.importorskip("pgx")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agent", "dqn", "--env", "CartPole", "--self-play"], "needs a turn-based game"),
        (["--agent", "dqn", "--env", "connect_four"], "train it with --self-play"),
        (["--agent", "ppo", "--env", "tic_tac_toe", "--self-play"], "not 'ppo'"),
        (["--agent", "rainbow", "--env", "tic_tac_toe", "--self-play"], "--agent.n_step 1"),
    ],
)
def test_bad_self_play_input(argv, message, tmp_path, capsys):
    assert main([*argv, "--logdir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()
