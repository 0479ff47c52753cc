"""Counts issue 52's measure of composition in the agent skeletons.

* optional slots: fields of the skeletons' state dataclasses that default to ``None``
  (a feature of another file kept in the core state);
* feature branches: ``if`` statements and conditional expressions in the skeletons whose
  test names a feature (prioritized replay, parameter noise, auxiliary learners, lagging
  actors, noisy nets).

Usage: ``python scripts/feature_counts.py [ROOT]`` (ROOT defaults to the repository).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SKELETONS = (
    "jaxrl/agents/q_learning/core.py",
    "jaxrl/agents/off_policy/core.py",
    "jaxrl/agents/off_policy/parts.py",
    "jaxrl/agents/on_policy/core.py",
)
FEATURES = {
    "prioritized": ("prioritized", "prioritization", "priority"),
    "parameter noise": ("param_noise",),
    "auxiliary learners": ("aux", "has_loss"),
    "lagging actors": ("actors", "lag"),
    "noisy nets": ("noisy",),
}


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _feature(test: ast.AST) -> str | None:
    names = {n.lower() for n in _names(test)}
    for feature, words in FEATURES.items():
        if any(w in n for n in names for w in words):
            return feature
    return None


def optional_slots(tree: ast.Module) -> list[str]:
    slots = []
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        if not cls.name.endswith("State"):
            continue
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Constant):
                if stmt.value.value is None and isinstance(stmt.target, ast.Name):
                    slots.append(f"{cls.name}.{stmt.target.id}")
    return slots


def feature_branches(tree: ast.Module) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp)):
            feature = _feature(node.test)
            if feature is not None:
                counts[feature] = counts.get(feature, 0) + 1
    return counts


def main(root: Path) -> None:
    total_slots, total_branches = 0, 0
    for rel in SKELETONS:
        tree = ast.parse((root / rel).read_text())
        slots, branches = optional_slots(tree), feature_branches(tree)
        total_slots += len(slots)
        total_branches += sum(branches.values())
        print(f"{rel}: optional slots {len(slots)} {slots}; feature branches {branches}")
    print(f"total: optional slots {total_slots}, feature branches {total_branches}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent))
