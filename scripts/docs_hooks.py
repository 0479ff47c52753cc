"""MkDocs hooks (``mkdocs.yml``: ``hooks:``) that write pages at build time, so that they
cannot go stale:

- the API reference: one page per public module of ``jaxrl`` (every module and package
  whose name does not start with an underscore), found by walking the package tree, each
  rendered by mkdocstrings from its docstrings, and their navigation under
  "API reference". A module added, moved or removed needs no page edit.
- the options table of each algorithm page: ``<!-- options: NAME -->`` on a page is
  replaced by agent ``NAME``'s options (name, default, valid range, meaning), read from the
  config class it is registered with (``jaxrl.agents``) and the ``Attributes:`` section of
  that class's docstring (or a base class's).
- the notebooks of ``notebooks/`` as pages ``notebooks/NAME.ipynb`` of the site (read where
  they are, not copied into ``docs/``), which ``mkdocs-jupyter`` renders with the outputs
  saved in them (``scripts/run_notebooks.py`` executes and saves them).
- the presets of each algorithm page: ``<!-- presets: NAME -->`` is replaced by a table of
  the files in ``jaxrl/presets/`` that train agent ``NAME``: the env they apply to, their
  budget, the command that runs them and the first sentence of their header comment.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "jaxrl"
REFERENCE = "reference"
NOTEBOOKS = "notebooks"
NAV_TITLE = "API reference"
OPTIONS = re.compile(r"^<!-- options: ([a-z0-9_]+) -->$", re.M)
PRESETS = re.compile(r"^<!-- presets: ([a-z0-9_]+) -->$", re.M)
FAMILY_EXAMPLES = {"atari": "Pong", "minatar": "MinAtar-Breakout"}  # a game of the family


def public_modules(root: Path = ROOT, package: str = PACKAGE) -> list[str]:
    """The dotted names of the package's public modules, packages first within a folder:
    every ``.py`` file and package whose name (and every parent's) does not start with
    ``_`` (``__init__.py`` stands for its package)."""
    names = []
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue
        names.append(".".join(parts))
    return sorted(names, key=lambda name: name.split("."))


def is_package(name: str, root: Path = ROOT) -> bool:
    return (root / Path(*name.split(".")) / "__init__.py").exists()


def page_path(name: str, root: Path = ROOT) -> str:
    """Where module ``name``'s page goes: ``reference/a/b.md``, or ``reference/a/b/index.md``
    for a package (the index page of its navigation section)."""
    path = "/".join(name.split("."))
    return f"{REFERENCE}/{path}/index.md" if is_package(name, root) else f"{REFERENCE}/{path}.md"


def page_text(name: str) -> str:
    return f"# `{name}`\n\n::: {name}\n"


def index_text(names: list[str]) -> str:
    """The reference's first page: what it is and one link per module."""
    lines = [
        "# API reference",
        "",
        "Every public module of the `jaxrl` package (every module whose name does not start",
        "with an underscore), one page each, written at build time from the docstrings in",
        "the source (mkdocstrings, Google-style docstrings). A module added or moved appears",
        "here without any page edit (`scripts/docs_hooks.py`).",
        "",
        "| module | first line of its docstring |",
        "| --- | --- |",
    ]
    for name in names:
        link = page_path(name).removeprefix(f"{REFERENCE}/")
        lines.append(f"| [`{name}`]({link}) | {summary(name)} |")
    return "\n".join(lines) + "\n"


def summary(name: str, root: Path = ROOT) -> str:
    """The first sentence of the module's docstring, read statically (no import)."""
    import ast

    path = root / Path(*name.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    first = re.split(r"(?<=[a-z)`'])\. (?=[A-Z])", first, maxsplit=1)[0].rstrip(".")
    return first.replace("|", "\\|")


def nav_tree(names: list[str]) -> list[Any]:
    """The navigation of the reference: one section per package (its own page first), one
    entry per module, nested as the package tree."""
    tree: dict[str, Any] = {}
    for name in names:
        node = tree
        for part in name.split(".")[:-1]:
            node = node.setdefault(part, {})
        node.setdefault(name.split(".")[-1], {})

    def build(node: dict[str, Any], prefix: str) -> list[Any]:
        entries: list[Any] = []
        for part, children in node.items():
            name = f"{prefix}{part}"
            if is_package(name):
                entries.append({part: [page_path(name), *build(children, f"{name}.")]})
            else:
                entries.append({part: page_path(name)})
        return entries

    return [f"{REFERENCE}/index.md", *build(tree, "")]


def on_config(config: Any) -> Any:
    """Puts the reference's navigation where ``mkdocs.yml`` has ``- API reference: ...``."""
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and NAV_TITLE in item:
            config.nav[i] = {NAV_TITLE: nav_tree(public_modules())}
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which converts the notebooks
def on_files(files: Any, config: Any) -> Any:
    """Adds the reference's pages (written in memory, never to ``docs/``) and the
    notebooks (read from ``notebooks/``)."""
    for path in sorted((ROOT / NOTEBOOKS).glob("*.ipynb")):
        src = path.relative_to(ROOT).as_posix()
        files.append(File(src, str(ROOT), config.site_dir, config.use_directory_urls))
    names = public_modules()
    files.append(File.generated(config, f"{REFERENCE}/index.md", content=index_text(names)))
    for name in names:
        files.append(File.generated(config, page_path(name), content=page_text(name)))
    return files


# --- the options tables of the algorithm pages -------------------------------------------

_ATTRIBUTE = re.compile(r"^( {2,8})([a-z_][a-z0-9_, ]*): (.*)$")


EMBEDDED = re.compile(r"(?<=\.) +(?=[a-z_][a-z0-9_]*(?:, [a-z_][a-z0-9_]*)*: )")


def attribute_docs(cls: type) -> dict[str, str]:
    """Field name -> its whole meaning (continuation lines joined) from the ``Attributes:``
    (or ``Args:``) sections of ``cls``'s docstring and its bases'; a subclass's entry wins.
    A line naming several fields (``a, b, c: ...``) documents each, and so does an entry
    that goes on with another one after a full stop (``gamma: 0.99. tau: 0.005.``)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        entries: list[tuple[str, list[str]]] = []
        indent, section = None, False
        for line in (klass.__doc__ or "").splitlines():
            stripped = line.strip()
            if stripped in ("Attributes:", "Args:"):
                section, indent = True, None
                continue
            if not stripped:
                section = section and not entries  # a blank line ends a begun section
                continue
            if not section:
                continue
            match = _ATTRIBUTE.match(line)
            if match and (indent is None or len(match.group(1)) == indent):
                indent = len(match.group(1))
                entries.append((match.group(2), [match.group(3).strip()]))
            elif entries and len(line) - len(line.lstrip()) > (indent or 0):
                entries[-1][1].append(stripped)
            else:
                section = False
        for names, parts in entries:
            pieces = EMBEDDED.split(" ".join(parts))
            for name in names.split(","):
                docs[name.strip()] = pieces[0]
            for piece in pieces[1:]:
                more, _, text = piece.partition(": ")
                for name in more.split(","):
                    docs[name.strip()] = text
    return docs


def class_summary(cls: type) -> str:
    """The first paragraph of the config class's docstring (where its defaults come from)."""
    for klass in cls.__mro__:
        if klass.__doc__ and not klass.__doc__.startswith(klass.__name__ + "("):
            return " ".join(klass.__doc__.split("\n\n", 1)[0].split())
    return ""


def default_of(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if dataclasses.is_dataclass(value):
        return f"{type(value).__name__}()"
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "None"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def cell(text: str) -> str:
    """``text`` as one Markdown table cell: whitespace folded, pipes escaped outside code
    spans (the table extension leaves a pipe inside backticks alone, and shows an escape
    there as typed)."""
    parts = re.split(r"(`+[^`]*`+)", " ".join(str(text).split()))
    return "".join(p if p.startswith("`") else p.replace("|", "\\|") for p in parts)


def declaring_class(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that declares field ``name`` (the most derived one)."""
    return next(k for k in cls.__mro__ if name in vars(k).get("__annotations__", {}))


def options_table(agent: str) -> str:
    """Agent ``agent``'s options as Markdown tables, from its registered config class: its
    own fields first, then those of each base class (the option groups agents share)."""
    from jaxrl import agents
    from jaxrl.validation import declared_range

    cls = agents.entry(agent).config
    if cls is None or not dataclasses.fields(cls):
        return "This agent takes no options."
    docs = attribute_docs(cls)
    groups: dict[type, list[dataclasses.Field]] = {}
    for field in dataclasses.fields(cls):
        groups.setdefault(declaring_class(cls, field.name), []).append(field)
    order = sorted(groups, key=cls.__mro__.index)
    lines = [
        f"Read at build time from `{cls.__module__}.{cls.__qualname__}`: its fields, their "
        "defaults and declared ranges, and the `Attributes:` of its docstring and its "
        f"bases'. {cell(class_summary(cls))} Set one with `--agent.KEY VALUE`, in a "
        "config file's `agent:` section, or as a keyword of `jaxrl.agents.make`.",
    ]
    for klass in order:
        where = "" if klass is cls else " (shared)"
        lines += [
            "",
            f"**From `{klass.__name__}`{where}**",
            "",
            "| option | default | valid range | meaning (and where the default comes from) |",
            "| --- | --- | --- | --- |",
        ]
        for field in groups[klass]:
            spec = declared_range(cls, field.name)
            bounds = spec.describe() if spec is not None else ""
            default = cell(shown(default_of(field)))
            meaning = cell(docs.get(field.name, ""))
            lines.append(f"| `{field.name}` | `{default}` | {bounds} | {meaning} |")
    return "\n".join(lines)


def header_comment(path: Path) -> str:
    """The first sentence of a preset file's leading comment."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(" ".join(lines).split())
    first = re.split(r"(?<=[a-z0-9)`'])\. (?=[A-Z(])", text, maxsplit=1)[0].rstrip(".:")
    return first if len(first) <= 240 else first[:240].rsplit(" ", 1)[0] + " …"


@functools.cache
def all_presets() -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every preset's path and config (its parent's merged in), read once per build."""
    from jaxrl.experiment.config import load_config_file, presets

    return {name: (path, load_config_file(path)) for name, path in presets().items()}


def presets_table(agent: str) -> str:
    """The presets that train ``agent``: env, budget, how to run it, what it is."""
    from jaxrl.experiment.config import find_preset

    rows = []
    for name, (path, config) in all_presets().items():
        if config.get("agent", {}).get("name") != agent:
            continue
        env = config.get("env", {})
        if env.get("name"):
            where, example = f"`{env['name']}`", env["name"]
        elif env.get("family") == "*":
            where, example = "any env without a preset of its own", None
        elif env.get("family"):
            where, example = f"every {env['family']} game", FAMILY_EXAMPLES.get(env["family"])
        else:
            where, example = "the env you give (`--env`)", None
        if example and find_preset(agent, canonical(example)) == name:
            command = f"python -m jaxrl.train --agent {agent} --env {example}"
        else:
            command = f"python -m jaxrl.train --config {path.relative_to(ROOT).as_posix()}"
            command += "" if env.get("name") else f" --env {example or 'ENV'}"
        steps = config.get("run", {}).get("steps")
        budget = f"{steps:,}" if isinstance(steps, int) else ""
        about = cell(header_comment(path))
        rows.append(f"| `{name}` | {where} | {budget} | `{command}` | {about} |")
    if not rows:
        return f"No file in `jaxrl/presets/` trains `{agent}`; its defaults are the options above."
    return "\n".join(
        [
            "Read at build time from `jaxrl/presets/` (the files whose `agent: name:` is "
            f"`{agent}`). The whole settings and their sources are in each file's header.",
            "",
            "| preset | env | env steps | run it | what it is |",
            "| --- | --- | ---: | --- | --- |",
            *rows,
        ]
    )


def canonical(env: str) -> str:
    from jaxrl import envs

    return envs.canonical_name(env)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replaces each ``<!-- options: NAME -->`` line with agent NAME's options table and
    each ``<!-- presets: NAME -->`` line with its presets."""
    markdown = OPTIONS.sub(lambda m: options_table(m.group(1)), markdown)
    return PRESETS.sub(lambda m: presets_table(m.group(1)), markdown)
