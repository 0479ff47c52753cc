"""Runs a test's Python source in a fresh interpreter and returns what it printed as
``RESULT <json>``: programs that need fake CPU devices
(``--xla_force_host_platform_device_count``, fixed when JAX starts) run this way."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def fake_devices_env(devices: int, **extra: str) -> dict[str, str]:
    """This process's environment for a child that sees ``devices`` CPU devices: the
    device count added to the ``XLA_FLAGS`` it inherits (so the suite's compiler flags,
    set in ``conftest.py``, hold there too), the repository on ``PYTHONPATH``, and
    ``extra``."""
    flags = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}"
    return {**os.environ, "PYTHONPATH": str(ROOT), "XLA_FLAGS": flags.strip(), **extra}


def run_script(
    source: str, directory: Path, name: str = "script.py", *, devices: int
) -> tuple[Any, str]:
    """Writes ``source`` to ``directory / name`` and runs it on ``devices`` CPU devices
    (``fake_devices_env``) with ``OUT_DIR`` set to ``directory``; asserts exit code 0 and
    returns the decoded ``RESULT`` line and the process's stderr."""
    script = directory / name
    script.write_text(source)
    env = fake_devices_env(devices, OUT_DIR=str(directory))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(li for li in done.stdout.splitlines() if li.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT ")), done.stderr
