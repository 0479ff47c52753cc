"""The package as a user installs it: the wheel built from this tree, installed into a
fresh virtual environment with no access to the source tree, trains from a preset with
the ``jaxrl`` command and evaluates the run."""

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("jaxrl", "pyproject.toml", "README.md", "LICENSE")


def _run(*argv, cwd, env=None):
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the package's sources (the build writes beside them)."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        copy = shutil.copytree if path.is_dir() else shutil.copy2
        copy(path, src / name, **({"ignore": ignore} if path.is_dir() else {}))
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    _run(*pip, "--no-index", "-w", str(tmp / "dist"), str(src), cwd=tmp)
    (built,) = (tmp / "dist").glob("jaxrl-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed; its dependencies are this
    environment's (a path file), the source tree is not on its path."""
    home = tmp_path_factory.mktemp("venv")
    _run(sys._base_executable, "-m", "venv", "--without-pip", str(home), cwd=home)
    (packages,) = (home / "lib").glob("python3*/site-packages")
    (packages / "_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install"]
    _run(*pip, "-q", "--no-deps", "--no-index", str(wheel), cwd=home)
    return home


def test_the_wheel_holds_the_presets_and_the_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    presets = {p.name for p in (ROOT / "jaxrl" / "presets").glob("*.yaml")}
    assert {Path(n).name for n in names if n.startswith("jaxrl/presets/")} == presets
    spaces = {p.name for p in (ROOT / "jaxrl" / "tune" / "spaces").glob("*.yaml")}
    assert {Path(n).name for n in names if n.startswith("jaxrl/tune/spaces/")} == spaces
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert any(n.endswith("entry_points.txt") for n in names)


def test_the_installed_command_trains_from_a_preset_and_evaluates(venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = _run(str(venv / "bin" / "python"), "-c", "import jaxrl; print(jaxrl.__file__)",
                 cwd=tmp_path, env=env)  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv)
    jaxrl = str(venv / "bin" / "jaxrl")
    argv = ["--agent", "dqn", "--env", "CartPole", "--steps", "1000", "--run.eval_every", "0"]
    out = _run(jaxrl, "train", *argv, "--logdir", "runs", cwd=tmp_path, env=env)
    assert "preset: cartpole-dqn" in out
    (run_dir,) = (tmp_path / "runs").iterdir()
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["preset"] == "cartpole-dqn"
    assert saved["agent"]["learning_starts"] != 10_000  # the preset's, not the default
    out = _run(jaxrl, "evaluate", str(run_dir), "--episodes", "2", cwd=tmp_path, env=env)
    assert "return" in out.lower()
    done = subprocess.run([jaxrl, "fly"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "unknown command 'fly'" in done.stderr


def test_every_extra_the_docs_install_exists():
    import re
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = set()
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for line in page.read_text().splitlines():
            if "pip install" in line:
                for group in re.findall(r"\[([a-z0-9_,-]+)\]", line):
                    named.update(group.split(","))
    assert named and named <= set(extras["optional-dependencies"]), named
