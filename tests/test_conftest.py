"""The suite's compile settings (``tests/conftest.py``): a ``default_codegen`` test runs in
a child pytest compiled with XLA:CPU's default fusion emitters; the others in this process,
with the elemental emitters and code generation in one piece unless the caller chose."""

import os
from types import SimpleNamespace

import pytest

from tests.conftest import (
    EMITTERS,
    HEAVY_MODULES,
    IN_CHILD,
    TESTS,
    pytest_collection_modifyitems,
)


@pytest.mark.default_codegen
def test_a_default_codegen_test_runs_in_a_child_with_the_default_emitters():
    assert os.environ.get(IN_CHILD) == "1"
    assert EMITTERS not in os.environ["XLA_FLAGS"]
    assert "--xla_backend_optimization_level=0" in os.environ["XLA_FLAGS"]


CHILD_PIDS: list[int] = []  # filled in the child by the next test's two cases


@pytest.mark.default_codegen
@pytest.mark.parametrize("case", [0, 1])
def test_a_modules_default_codegen_tests_share_one_child(case):
    """Both cases (and no other process) append here: they ran in the same child."""
    CHILD_PIDS.append(os.getpid())
    assert CHILD_PIDS == [os.getpid()] * (case + 1)
    assert os.environ.get(IN_CHILD) == "1"


def test_other_tests_run_here_with_the_suites_flags():
    assert IN_CHILD not in os.environ
    assert "xla_cpu_use_fusion_emitters" in os.environ["XLA_FLAGS"]
    assert "xla_cpu_parallel_codegen_split_count" in os.environ["XLA_FLAGS"]


def test_the_heavy_modules_exist_and_go_first_longest_first():
    assert all((TESTS / module).is_file() for module in HEAVY_MODULES)
    order = ["test_types.py", "envs/test_atari.py", "test_plot.py", "test_notebooks.py"]
    items = [SimpleNamespace(path=TESTS / module, n=n) for module in order for n in (0, 1)]
    pytest_collection_modifyitems(items)
    assert [(item.path.relative_to(TESTS).as_posix(), item.n) for item in items] == [
        ("test_notebooks.py", 0),
        ("test_notebooks.py", 1),
        ("envs/test_atari.py", 0),
        ("envs/test_atari.py", 1),
        ("test_types.py", 0),
        ("test_types.py", 1),
        ("test_plot.py", 0),
        ("test_plot.py", 1),
    ]
