"""Test-session settings: how the suite's programs are compiled, and where.

* A persistent XLA compilation cache shared by the tests and the subprocesses they start,
  so that a program compiled once (the same tiny agent trained by several runs) is not
  compiled again. It changes no result: a cache hit is the same executable.
* XLA:CPU at optimization level 0, with its elemental IR emitters instead of the MLIR
  fusion emitters (``--xla_cpu_use_fusion_emitters=false``): the suite's programs are tiny
  and compile-bound, and these two flags take the most compile time off them
  (benchmarks/journal/2026-11-28-elemental-emitters.md). The programs compute the same
  things; what the emitters change is the last bits of some functions (``tanh``, float64
  ``sin``) where they are fused with others.
* XLA:CPU's code generation in one piece (``--xla_cpu_parallel_codegen_split_count=1``):
  by default it splits each program's LLVM module into parts compiled on a thread pool,
  which on the 2-core machine, with both pytest-xdist workers compiling, only adds
  threads that compete with the other worker: one piece took the suite from 838 s to
  667 s of pytest, 1,479 s to 1,153 s of CPU (benchmarks/journal/2026-11-28-codegen-split-count.md).
  Programs compute the same things; at these optimisation settings the last bits of
  some results differ from those of the split compile, as the two flags above make
  them differ from the default's (with the default settings the split changes no bit).
* The heaviest modules first (``HEAVY_MODULES``): ``make test`` hands whole modules to
  two pytest-xdist workers in collection order (``--dist loadfile
  --no-loadscope-reorder``), so the longest go first and the two workers end together.
* A test whose claim is about those last bits (two differently fused programs agree bit
  for bit, as users' programs do; float64 physics equal to Gymnasium's to 1e-9) is marked
  ``default_codegen``: it runs, whole, in a child pytest with XLA:CPU's default emitters,
  and passes or fails with it.

A caller's own choice of any of these flags (in ``XLA_FLAGS``) is kept, except that a
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
ONE_PIECE = "--xla_cpu_parallel_codegen_split_count=1"
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
if "xla_cpu_parallel_codegen_split_count" not in _flags:
    _flags += " " + ONE_PIECE
os.environ["XLA_FLAGS"] = _flags.strip()


# Seconds each of the heaviest modules took on the 2-core machine (one worker's share of
# ``make test``; test_self_play_cli.py and test_docs.py measured 2026-12-02): collected
# first, longest first; the rest keep their order. ``tests/test_conftest.py`` checks that
# each still exists.
HEAVY_MODULES = {
    "experiment/test_agent_env_matrix.py": 132,
    "test_notebooks.py": 65,
    "runners/games/test_self_play_cli.py": 60,
    "test_docs.py": 40,
    "test_package.py": 40,
    "experiment/test_sweep.py": 53,
    "experiment/test_agent_env_matrix_pixels.py": 45,
    "envs/test_atari.py": 42,
    "runners/distributed/test_devices.py": 40,
    "experiment/test_processes.py": 39,
    "buffers/test_compact.py": 39,
    "experiment/test_reliability.py": 34,
    "agents/off_policy/test_core.py": 32,
    "agents/q_learning/test_rainbow.py": 30,
    "export/test_export.py": 28,
    "buffers/test_sum_tree.py": 25,
    "experiment/test_checkpoint_faults.py": 30,
    "experiment/test_checkpoint.py": 25,
    "networks/test_conv.py": 24,
    "runners/games/test_self_play.py": 24,
    "agents/auxiliary/test_latent_prior.py": 24,
    "runners/test_pytree_obs.py": 23,
    "envs/test_minatar.py": 23,
    "agents/test_action_masks.py": 23,
    "envs/test_mujoco.py": 22,
    "experiment/test_resume_devices.py": 21,
    "buffers/test_sharded.py": 20,
    "envs/test_marl.py": 20,
    "agents/auxiliary/test_amp.py": 20,
    "agents/auxiliary/test_curl.py": 20,
    "agents/off_policy/test_mbpo.py": 19,
    "runners/test_scan.py": 19,
    "agents/q_learning/test_value_family.py": 17,
    "envs/test_mjx.py": 16,
    "agents/on_policy/test_ppo.py": 16,
    "experiment/test_summary.py": 15,
    "agents/off_policy/test_td3.py": 15,
    "runners/test_host.py": 15,
    "agents/q_learning/test_apex.py": 14,
    "agents/on_policy/test_recurrent_learner.py": 14,
    "buffers/test_prioritized.py": 14,
    "runners/games/test_opponent_pool.py": 13,
    "buffers/test_protocol.py": 13,
    "agents/q_learning/test_dqn.py": 12,
    "envs/test_classic.py": 12,
    "runners/distributed/test_topology.py": 11,
    "agents/off_policy/test_sac.py": 11,
    "envs/test_gymnax.py": 11,
    "runners/games/test_independent.py": 10,
    "test_evaluate.py": 10,
    "agents/on_policy/test_core.py": 10,
}
TESTS = ROOT / "tests"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of ``HEAVY_MODULES`` first, longest first (a stable sort: a module's
    tests stay together and in order; the other modules keep theirs)."""

    def seconds(item: pytest.Item) -> int:
        if TESTS not in item.path.parents:
            return 0
        return HEAVY_MODULES.get(item.path.relative_to(TESTS).as_posix(), 0)

    items.sort(key=lambda item: -seconds(item))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "default_codegen: runs in a child pytest compiled with XLA:CPU's default fusion "
        "emitters (its claim is about the last bits of differently fused programs)",
    )


@pytest.fixture(scope="module")
def trained_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The run directory of ``python -m jaxrl.train`` with the requesting module's
    ``TRAINED_RUN`` flags: trained once per module, for its tests to read."""
    from tests.helpers import train_run  # imports JAX: after the settings above

    return train_run(tmp_path_factory.mktemp("runs"), *request.module.TRAINED_RUN)


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
