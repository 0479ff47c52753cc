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


# Seconds each of the 50 heaviest modules took on the 2-core machine (the sum of its
# tests' setup, call and teardown times in one run of the whole suite at a076ba9,
# 2026-12-02, pytest --durations=0): collected first, longest first; the rest keep their
# order. ``tests/test_conftest.py`` checks that each still exists.
HEAVY_MODULES = {
    "experiment/test_agent_env_matrix.py": 181,
    "test_notebooks.py": 100,
    "test_docs.py": 70,
    "runners/games/test_self_play_cli.py": 65,
    "experiment/test_sweep.py": 64,
    "runners/distributed/test_devices.py": 62,
    "experiment/test_processes.py": 59,
    "buffers/test_compact.py": 50,
    "experiment/test_agent_env_matrix_pixels.py": 46,
    "test_readme.py": 40,  # 68 at a076ba9; its command shortened further since
    "envs/test_atari.py": 22,
    "experiment/test_reliability.py": 43,
    "agents/off_policy/test_core.py": 41,
    "experiment/test_checkpoint.py": 40,
    "agents/q_learning/test_rainbow.py": 35,
    "runners/test_pytree_obs.py": 34,
    "runners/games/test_self_play.py": 33,
    "envs/test_marl.py": 32,
    "test_package.py": 31,
    "agents/test_action_masks.py": 31,
    "agents/auxiliary/test_latent_prior.py": 31,
    "export/test_export.py": 30,
    "agents/auxiliary/test_amp.py": 29,
    "envs/test_mujoco.py": 29,
    "envs/test_minatar.py": 28,
    "agents/auxiliary/test_curl.py": 27,
    "experiment/test_summary.py": 26,
    "agents/off_policy/test_sac.py": 25,
    "experiment/test_resume_devices.py": 24,
    "runners/games/test_opponent_pool.py": 24,
    "runners/test_scan.py": 23,
    "agents/q_learning/test_value_family.py": 21,
    "experiment/test_videos.py": 20,  # added since, measured alone
    "envs/test_mjx.py": 20,
    "agents/q_learning/test_dqn.py": 20,
    "experiment/test_checkpoint_faults.py": 18,
    "runners/distributed/test_topology.py": 18,
    "buffers/test_sharded.py": 18,
    "agents/on_policy/test_ppo.py": 18,
    "networks/test_conv.py": 17,
    "runners/test_host.py": 17,
    "envs/test_classic.py": 17,
    "networks/test_heads.py": 17,
    "agents/on_policy/test_recurrent_learner.py": 17,
    "agents/off_policy/test_td3.py": 16,
    "buffers/test_prioritized.py": 16,
    "test_train.py": 15,
    "agents/q_learning/test_r2d2.py": 13,  # added since, measured alone
    "buffers/test_sum_tree.py": 15,
    "runners/games/test_independent.py": 14,
    "agents/off_policy/test_mbpo.py": 14,
    "agents/on_policy/test_core.py": 14,
    "envs/test_gymnax.py": 14,
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
