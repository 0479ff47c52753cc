"""A config file or a run directory is data: a ``module:attr`` name read from one imports
nothing unless the command line named its module (``jaxrl.trust``)."""

import shutil
import sys
import textwrap

import pytest

from jaxrl import agents, trust
from jaxrl.evaluate import main as evaluate
from jaxrl.export.__main__ import main as export
from jaxrl.train import main as train

# A short run of an agent without options.
TINY = ["--steps", "512", "--num-envs", "2", "--run.log_every", "256", "--run.eval_episodes", "2"]
TINY += ["--log="]

# A module that records being imported (a file beside it) and would register a factory.
EVIL = """
import pathlib
pathlib.Path(__file__).with_name("imported.txt").write_text("imported")

def make(spec, **options):
    from jaxrl.agents import make
    return make("random", spec)
"""


def test_module_of_and_allows():
    assert trust.module_of("pkg.mod:make") == "pkg.mod"
    assert trust.module_of("gym:pkg.mod:Env-v0") == "pkg.mod"
    assert trust.module_of("CartPole") is None and trust.module_of("gym:CartPole-v1") is None
    assert trust.allows("anything")  # the Python API: unrestricted
    with trust.trusted(["pkg"]):
        assert trust.allows("pkg") and trust.allows("pkg.mod") and not trust.allows("pkgx")
        assert not trust.allows("logging")
    assert trust.allows("logging")


@pytest.fixture
def shared_dir(tmp_path, monkeypatch):
    """A folder a colleague shared: ``evil.py`` beside a config naming it, the current
    directory of the command."""
    (tmp_path / "evil.py").write_text(textwrap.dedent(EVIL))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    _forget("evil")


def _forget(module: str) -> None:
    """Un-imports ``module`` and drops the agent it registered as ``module:make``."""
    sys.modules.pop(module, None)
    agents._REGISTRY.pop(f"{module}:make", None)


@pytest.mark.parametrize(
    "config, what",
    [
        ("agent: {name: 'evil:make'}\nenv: {name: CartPole}\n", "agent 'evil:make'"),
        ("agent: {name: dqn}\nenv: {name: 'evil:make'}\n", "env 'evil:make'"),
        ("agent: {name: dqn}\nenv: {name: 'gym:evil:Env-v0'}\n", "env 'gym:evil:Env-v0'"),
    ],
)
def test_config_file_names_import_nothing(shared_dir, config, what, capsys):
    (shared_dir / "exp.yaml").write_text(config)
    assert train(["--config", "exp.yaml", "--logdir", "runs"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and what in err and "--import evil" in err, err
    assert not (shared_dir / "imported.txt").exists() and "evil" not in sys.modules
    assert not (shared_dir / "runs").exists()


def test_config_calling_a_library_function_is_refused(tmp_path, monkeypatch, capsys):
    """``logging:basicConfig`` with ``filemode: w`` would truncate ``victim.txt``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "victim.txt").write_text("precious")
    (tmp_path / "exp.yaml").write_text(
        "agent: {name: dqn}\nenv: {name: 'logging:basicConfig', force: true, "
        "filename: victim.txt, filemode: w}\n"
    )
    assert train(["--config", "exp.yaml", "--logdir", "runs"]) == 2
    assert "module 'logging'" in capsys.readouterr().err
    assert (tmp_path / "victim.txt").read_text() == "precious"


def test_run_directory_names_need_import(shared_dir, capsys):
    """A run trained with ``--agent evil:make`` (named on its command line) is evaluated
    and exported elsewhere only with ``--import evil``; without it nothing is imported."""
    assert train(["--agent", "evil:make", "--env", "CartPole", *TINY, "--logdir", "runs"]) == 0
    (run,) = (shared_dir / "runs").iterdir()
    shared = shared_dir / "shared"
    shared.mkdir()
    shutil.copytree(run, shared / "run")
    shutil.copy(shared_dir / "evil.py", shared / "run")
    (shared_dir / "imported.txt").unlink()
    _forget("evil")  # as a new process on another machine would start
    capsys.readouterr()
    for command in (evaluate, lambda a: export([*a, "--format", "stablehlo"])):
        assert command([str(shared / "run")]) == 2
        err = capsys.readouterr().err.strip()
        assert "give --import evil" in err and len(err.splitlines()) == 1, err
        assert "evil" not in sys.modules and not (shared / "run" / "imported.txt").exists()
    assert train(["--resume", str(shared / "run"), "--steps", "512"]) == 2
    assert "give --import evil" in capsys.readouterr().err
    assert evaluate([str(shared / "run"), "--import", "evil", "--episodes", "2"]) == 0
    assert (shared_dir / "imported.txt").exists()  # evil.py of the current directory


def test_callback_in_launch_yaml_needs_import(shared_dir, capsys):
    """A ``MODULE:ATTR`` callback saved in ``launch.yaml`` is imported on ``--resume`` only
    with ``--import``."""
    (shared_dir / "cb.py").write_text(
        "import pathlib\npathlib.Path('cb-imported.txt').write_text('x')\n"
        "def on_chunk(event):\n    pass\n"
    )
    argv = ["--agent", "random", "--env", "CartPole", *TINY, "--callback", "cb:on_chunk"]
    assert train([*argv, "--logdir", "runs"]) == 0
    (run,) = (shared_dir / "runs").iterdir()
    (shared_dir / "cb-imported.txt").unlink()
    sys.modules.pop("cb", None)
    assert train(["--resume", str(run), "--steps", "1024"]) == 2
    assert "--callback 'cb:on_chunk' would import module 'cb'" in capsys.readouterr().err
    assert not (shared_dir / "cb-imported.txt").exists()
    assert train(["--resume", str(run), "--steps", "1024", "--import", "cb"]) == 0
    sys.modules.pop("cb", None)
