"""Test-session settings: how the suite's programs are compiled, and where.

* A persistent XLA compilation cache shared by the tests and the subprocesses they start,
  so that a program compiled once (the same tiny agent trained by several runs) is not
  compiled again. It changes no result: a cache hit is the same executable.
* XLA:CPU at optimization level 0, with its elemental IR emitters instead of the MLIR
  fusion emitters (``--xla_cpu_use_fusion_emitters=false``): the suite's programs are
  tiny and compile-bound, and these two flags take the most compile time off them
  (benchmarks/RESULTS.md, "Session 23"). The programs compute the same things; what the
  emitters change is the last bits of some functions (``tanh``, float64 ``sin``) where
  they are fused with others.
* A test whose claim is about those last bits (two differently fused programs agree bit
  for bit, as users' programs do; float64 physics equal to Gymnasium's to 1e-9) is marked
  ``default_codegen``: it runs, whole, in a child pytest with XLA:CPU's default emitters,
  and passes or fails with it.

A caller's own choice of either flag (in ``XLA_FLAGS``) is kept, except that a
``default_codegen`` test's child never runs with the elemental emitters.
"""

import os
import re
import subprocess
import sys
import tempfile

import pytest

from tests.device_script import ROOT

EMITTERS = "--xla_cpu_use_fusion_emitters=false"
IN_CHILD = "JAXRL_TEST_DEFAULT_CODEGEN"  # set in the child that runs a default_codegen test

if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxrl-xla-cache-")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_backend_optimization_level" not in _flags:
    _flags += " --xla_backend_optimization_level=0"
if "xla_cpu_use_fusion_emitters" not in _flags and IN_CHILD not in os.environ:
    _flags += " " + EMITTERS
os.environ["XLA_FLAGS"] = _flags.strip()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "default_codegen: runs in a child pytest compiled with XLA:CPU's default fusion "
        "emitters (its claim is about the last bits of differently fused programs)",
    )


# A module's default_codegen tests, run together in one child: node id -> whether the test
# passed there, and the child's output.
_CHILD_RESULTS: dict[str, tuple[bool, str]] = {}


def _run_in_child(item: pytest.Function) -> tuple[bool, str]:
    """Runs every ``default_codegen`` test of ``item``'s module in one child pytest
    without ``EMITTERS`` (one interpreter start and import for the module: the five envs
    of ``test_classic.py`` share it), once; returns whether ``item`` passed there, and
    the child's output. Under ``--dist loadfile`` (``make test``) a module's tests are on
    one worker, so each module's child runs once."""
    if item.nodeid not in _CHILD_RESULTS:
        ids = [
            other.nodeid
            for other in item.session.items
            if other.path == item.path and other.get_closest_marker("default_codegen")
        ]
        flags = os.environ["XLA_FLAGS"].replace(EMITTERS, "").strip()
        env = {**os.environ, "XLA_FLAGS": flags, IN_CHILD: "1"}
        command = [sys.executable, "-m", "pytest", *ids, "-p", "no:xdist", "-rA"]
        command += ["-p", "no:cacheprovider", "-q", "-o", "addopts="]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        passed = set(re.findall(r"^PASSED (.+?)\s*$", done.stdout, re.M))
        for nodeid in ids:
            _CHILD_RESULTS[nodeid] = (nodeid in passed, done.stdout)
    return _CHILD_RESULTS[item.nodeid]


def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Runs a ``default_codegen`` test in a child pytest without ``EMITTERS`` (the same
    test, its fixtures made there; ``_run_in_child``); the test passes if the child's
    does."""
    if pyfuncitem.get_closest_marker("default_codegen") is None or IN_CHILD in os.environ:
        return None
    passed, output = _run_in_child(pyfuncitem)
    assert passed, output[-4000:]
    return True
