"""No module of jaxrl imports another that imports it back, directly or through others:
the import graph of ``jaxrl`` (every ``import``/``from ... import`` of a jaxrl module,
at module level or inside a function) has no cycle. A package's ``__init__`` counts as
the package itself; ``if TYPE_CHECKING:`` imports are left out (they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import jaxrl

ROOT = Path(jaxrl.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The jaxrl modules that ``path`` imports."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent / "x")
    package = package.rpartition(".")[0] if path.name != "__init__.py" else package
    found = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports the module pkg.mod; ``from pkg import name``
            # the package pkg (whose ``__init__`` defines name).
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while (
                name and name not in modules
            ):  # jaxrl.agents.q_learning.dqn.X -> jaxrl.agents.q_learning.dqn
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    found.discard(module_name(path))
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle ``[a, b, ..., a]`` of ``graph``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_graph_sees_function_level_and_package_imports():
    graph = import_graph()
    # jaxrl/train.py imports these inside main(); the graph must see them.
    assert "jaxrl.experiment.run" in graph["jaxrl.train"]
    assert "jaxrl.types" in graph["jaxrl.runners.scan"]
    assert "jaxrl.runners.scan" in graph["jaxrl.runners"]


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def family_graph(parent: str) -> dict[str, set[str]]:
    """The import graph between the subpackages of ``parent`` (``jaxrl.agents``: its
    families): an edge where a module of one imports a module of another."""
    prefix = parent + "."

    def family(module: str) -> str | None:
        parts = module.removeprefix(prefix).split(".")
        return prefix + parts[0] if module.startswith(prefix) and len(parts) > 1 else None

    graph: dict[str, set[str]] = {}
    for module, imports in import_graph().items():
        if (mine := family(module)) is not None:
            theirs = {f for f in map(family, imports) if f not in (None, mine)}
            graph.setdefault(mine, set()).update(theirs)
    return graph


def test_agent_families_and_runner_modes_depend_one_way():
    """The agent families (and the runners' packages) form layers: no family imports one
    that imports it back, through any module of either."""
    agents = family_graph("jaxrl.agents")
    assert {"jaxrl.agents.q_learning", "jaxrl.agents.common"} <= set(agents)
    assert agents["jaxrl.agents.common"] == set()  # shared by all, imports none
    for parent in ("jaxrl.agents", "jaxrl.runners"):
        cycle = find_cycle(family_graph(parent))
        assert cycle is None, "family cycle: " + " -> ".join(cycle)
