"""A user's torso, env and agent through every command (issue 55 part 6): a run made with
them is evaluated and exported with ``--import``, without it the commands say which
``--import`` to give, and ``--agent NAME --help`` lists a user agent's options."""

import pytest

from jaxrl.evaluate import main as evaluate
from jaxrl.export.__main__ import main as export
from jaxrl.train import main as train
from tests.helpers import one_line_error

IMPORT = ["--import", "tests.user_code"]
TINY = ["--steps", "256", "--num-envs", "2", "--log=", "--run.eval_episodes", "2"]
TINY += ["--agent.hidden_sizes", "[8]", "--agent.batch_size", "8", "--agent.learning_starts", "64"]


def _forget() -> None:
    """Undoes ``--import tests.user_code`` (imported only by the commands under test, so
    that no test collected elsewhere sees its agent)."""
    import sys

    if "tests.user_code" in sys.modules:
        sys.modules["tests.user_code"].forget()


@pytest.fixture
def forget_user_code():
    yield
    _forget()


def test_a_run_of_a_user_torso_and_env_is_evaluated_and_exported_with_import(
    tmp_path, capsys, forget_user_code
):
    argv = [*IMPORT, "--agent", "dqn", "--env", "Chain-v0", "--agent.torso", "user_mlp", *TINY]
    assert train([*argv, "--logdir", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    _forget()  # as a new process starts
    capsys.readouterr()
    for command in (evaluate, lambda a: export([*a, "--format", "stablehlo"])):
        assert command([str(run)]) == 2
        one_line_error(capsys, "was trained with --import tests.user_code", "give --import")
    assert evaluate([str(run), *IMPORT, "--episodes", "2"]) == 0
    assert "dqn on Chain-v0" in capsys.readouterr().out
    out = tmp_path / "policy"
    assert export([str(run), *IMPORT, "--format", "stablehlo", "--out", str(out)]) == 0
    assert any(out.parent.glob("policy*"))


def test_help_of_a_user_agent_after_import(capsys, forget_user_code):
    with pytest.raises(SystemExit) as exit_:
        train([*IMPORT, "--agent", "always_right", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "agent always_right: always one action" in out and "action" in out.splitlines()[2]
