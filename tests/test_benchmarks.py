"""The benchmark scripts still import: a name a refactor removed from ``jaxrl`` (as
``DQN_FLAGS`` once was from ``jaxrl.agents.q_learning.dqn``) fails here, not in a user's hands."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

IMPORT_ALL = """
import importlib, pathlib, sys, traceback
sys.path.insert(0, "benchmarks")
failed = []
for path in sorted(pathlib.Path("benchmarks").glob("*.py")):
    try:
        importlib.import_module("benchmarks." + path.stem)
    except BaseException:
        failed.append(path.name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_benchmark_script_imports():
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert "atari_throughput.py" in scripts and len(scripts) > 20
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
