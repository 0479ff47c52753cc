"""The documentation site (``docs/``, ``mkdocs.yml``) is checked, not hoped: it builds with
warnings as errors (a broken link or anchor, a page left out of the navigation), and
every code block either runs here or says why not in its first line (``# not run:
REASON``). Python blocks of a page run in order in one namespace, as a reader would run
them; shell blocks run as printed (``python`` is this interpreter)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"^# not run: \S")
RUNNABLE = ("python", "bash")


def blocks(page: Path) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block of ``page``, in order."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(page.read_text())]


def to_run(page: Path, language: str) -> list[str]:
    """The bodies of ``page``'s blocks in ``language`` not marked ``# not run``."""
    return [body for lang, body in blocks(page) if lang == language and not NOT_RUN.match(body)]


PAGES = sorted(DOCS.rglob("*.md"))
PYTHON_PAGES = [p for p in PAGES if to_run(p, "python")]
SHELL_PAGES = [p for p in PAGES if to_run(p, "bash")]


def test_site_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's notice about MkDocs 2
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    built = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("index.html")}
    assert "index.html" in built and "concepts/contracts/index.html" in built


def test_every_block_runs_or_says_why():
    """A block of a language that cannot run here (``text``, ``yaml``) is not code; every
    Python or shell block is run by this module or starts with ``# not run: REASON``."""
    marked_without_reason = [
        f"{page.relative_to(ROOT)}: {body.splitlines()[0]}"
        for page in PAGES
        for lang, body in blocks(page)
        if body.startswith("# not run") and not NOT_RUN.match(body)
    ]
    assert not marked_without_reason
    unknown = {lang for page in PAGES for lang, _ in blocks(page)} - {*RUNNABLE, "text", "yaml"}
    assert not unknown, f"code blocks of an unchecked language: {unknown}"


# Runs every page's Python blocks in a child interpreter (as a reader runs them, and so that
# the agents, envs and callbacks they register stay out of the other tests' registries):
# each page in a module of its own (dataclasses look their module up in ``sys.modules``),
# its blocks in order; prints {page: None or the traceback} as JSON.
CHILD = """
import json, sys, traceback, types
out = {}
for path, bodies in json.loads(sys.stdin.read()).items():
    module = types.ModuleType("docs_page")
    sys.modules["docs_page"] = module
    try:
        for body in bodies:
            exec(compile(body, path, "exec"), module.__dict__)
        out[path] = None
    except BaseException:
        out[path] = traceback.format_exc()[-3000:]
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def python_pages(tmp_path_factory) -> dict[str, str | None]:
    pages = {str(p.relative_to(ROOT)): to_run(p, "python") for p in PYTHON_PAGES}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(pages),
        cwd=tmp_path_factory.mktemp("docs"),
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_python_blocks_run(page, python_pages):
    error = python_pages[str(page.relative_to(ROOT))]
    assert error is None, error


@pytest.mark.parametrize("page", SHELL_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_shell_blocks_run(page, tmp_path):
    for body in to_run(page, "bash"):
        for line in body.splitlines():
            command = line.split("#", 1)[0].strip()
            if not command:
                continue
            argv = shlex.split(command)
            argv = [sys.executable, *argv[1:]] if argv[0] == "python" else argv
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
            assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"


README = ROOT / "README.md"


def test_readme_is_short_and_its_example_runs_here():
    """README.md stays a front page (about 200 lines at most), and its Python example is
    the block of ``docs/getting-started.md`` that ``test_python_blocks_run`` executes."""
    assert len(README.read_text().splitlines()) <= 200
    readme = [body for lang, body in blocks(README) if lang == "python"]
    assert readme and readme[0] in to_run(DOCS / "getting-started.md", "python")


def test_every_agent_has_its_page():
    """Each registered agent has ``docs/algorithms/NAME.md`` in the navigation, with its
    options and presets (written at build time) and its results block
    (``benchmarks/tables.py``)."""
    from jaxrl import agents

    nav = (ROOT / "mkdocs.yml").read_text()
    for name in agents.available():
        page = DOCS / "algorithms" / f"{name}.md"
        assert page.exists(), f"no page for agent {name}"
        text = page.read_text()
        for marker in (f"<!-- options: {name} -->", f"<!-- presets: {name} -->"):
            assert marker in text, f"{page.name}: no {marker}"
        assert "<!-- generated: results -->" in text, f"{page.name}: no results block"
        assert f"algorithms/{name}.md" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_api_reference_covers_every_public_module():
    """The reference has a page for every module of jaxrl whose name (or a parent's) does
    not start with an underscore, and for no other."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts/docs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    names = hooks.public_modules()
    files = {p.relative_to(ROOT).with_suffix("") for p in (ROOT / "jaxrl").rglob("*.py")}
    expected = {
        ".".join(p.parts[:-1] if p.name == "__init__" else p.parts)
        for p in files
        if not any(
            part.startswith("_") for part in (p.parts[:-1] if p.name == "__init__" else p.parts)
        )
    }
    assert set(names) == expected and "jaxrl.agents.q_learning.dqn" in names
    assert "jaxrl.export.__main__" not in names
