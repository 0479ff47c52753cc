"""The standing benchmark tables, written from their data files.

    python benchmarks/tables.py            # rewrite every generated table
    python benchmarks/tables.py --check    # exit 1, naming each table that differs

Each ``benchmarks/data/NAME.yaml`` holds one table: its figures (``rows``) and, for every
run that produced some of them (``runs``), the machine, date, commit, command, load and
``source`` (the section of the journal the figures were copied from or recorded in).
``commit`` is the code they ran on ("not recorded" where no one wrote it down); an
optional ``results_commit`` is the commit that added them to ``benchmarks/RESULTS.md``. A table
of ``kind: presets`` has the columns ``benchmarks/presets.py`` prints (IQM with its 95% CI,
members at the target, median first-solve step, anchor); a ``kind: table`` declares its
``columns`` (``key``, ``title``, an optional Python ``format`` spec for numbers and a
``suffix``). Strings are written as they are.

The table is written between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
in ``benchmarks/RESULTS.md`` and in ``docs/results/NAME.md``; whatever is around the
markers is kept. A file without the markers gets them at its end (a missing docs page is
created). ``RESULTS.md`` also holds an index of ``benchmarks/journal/`` (block ``journal``)
and ``docs/results/index.md`` one of the tables (block ``tables``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("benchmarks/RESULTS.md")
DATA = Path("benchmarks/data")
JOURNAL = Path("benchmarks/journal")
DOCS = Path("docs/results")
END = "<!-- end generated -->"
RUN_FIELDS = ("machine", "date", "load", "command", "commit", "source")
RESERVED = ("index", "journal", "tables")  # names of the other generated blocks and pages
PRESET_HEADER = (
    "preset",
    "seeds",
    "env steps",
    "final IQM [95% CI]",
    "target",
    "at target (end)",
    "median first-solve step",
    "IQM of AUC",
    "compile s",
    "wall s",
    "goal (issue 21)",
    "published anchor",
)
PRESET_ALIGN = ("---", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:", "---:")
PRESET_KEYS = {
    "preset",
    "seeds",
    "env_steps",
    "budget",
    "final_iqm",
    "final_ci",
    "target",
    "at_target",
    "first_solve",
    "auc_iqm",
    "compile_s",
    "wall_s",
    "goal",
    "anchor",
    "members",
    "not_run",
    "decimals",
}
JOURNAL_NAME = re.compile(r"^(\d{4}-\d\d-\d\d)-[a-z0-9-]+\.md$")

Table = dict[str, Any]


def start_marker(name: str) -> str:
    """The line that opens block ``name``."""
    return f"<!-- generated: {name} -->"


def load_tables(root: Path) -> dict[str, Table]:
    """Every data file under ``root/benchmarks/data`` as ``{name: table}``, in the order
    of their ``order`` field (then name), each checked by ``validate``."""
    tables = {}
    for path in sorted((root / DATA).glob("*.yaml")):
        table = yaml.safe_load(path.read_text())
        validate(path.stem, table)
        tables[path.stem] = table
    return dict(sorted(tables.items(), key=lambda item: (item[1].get("order", 99), item[0])))


def validate(name: str, table: Table) -> None:
    """Returns None; raises ValueError naming the table and what is missing or wrong."""
    if name in RESERVED:
        raise ValueError(f"table {name}: the name is taken by another generated block or page")
    for key in ("title", "kind", "runs", "rows"):
        if key not in table:
            raise ValueError(f"table {name}: no '{key}'")
    if table["kind"] not in ("presets", "table"):
        raise ValueError(f"table {name}: kind must be 'presets' or 'table'")
    if table["kind"] == "table" and not table.get("columns"):
        raise ValueError(f"table {name}: a 'table' needs 'columns'")
    for run, fields in table["runs"].items():
        missing = [f for f in RUN_FIELDS if not fields.get(f)]
        if missing:
            raise ValueError(f"table {name}: run '{run}' has no {', '.join(missing)}")
    keys = PRESET_KEYS if table["kind"] == "presets" else {c["key"] for c in table["columns"]}
    for i, row in enumerate(table["rows"]):
        run = row.get("run", next(iter(table["runs"])) if len(table["runs"]) == 1 else None)
        if run not in table["runs"]:
            raise ValueError(f"table {name}: row {i + 1} names no run of the table ({run})")
        unknown = set(row) - keys - {"run", "note"}
        if unknown:
            raise ValueError(f"table {name}: row {i + 1} has unknown keys {sorted(unknown)}")


def run_of(table: Table, row: dict[str, Any]) -> str:
    """The name of the run that produced ``row`` (a table of one run needs no ``run``)."""
    return str(row.get("run", next(iter(table["runs"]))))


def cell(text: Any) -> str:
    """``text`` as a Markdown table cell: pipes escaped, line breaks folded."""
    return " ".join(str(text).split()).replace("|", "\\|")


def number(value: Any, spec: str = "", suffix: str = "") -> str:
    """A number formatted with ``spec`` and ``suffix``; a string as it is; None as ''."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return f"{value:{spec}}{suffix}"


def decimals(row: dict[str, Any]) -> int:
    """Decimals of a preset row's returns: 3 where the IQM and its CI are all within
    [-1, 1] (success rates, as ``presets.py``'s ``number_format``), else 1; ``decimals``
    in the row overrides."""
    if "decimals" in row:
        return int(row["decimals"])
    values = [row["final_iqm"], *row["final_ci"]]
    return 3 if all(abs(v) <= 1.0 for v in values) else 1


def interval(row: dict[str, Any]) -> str:
    """The row's final IQM with its 95% CI, as RESULTS writes it: ``500.0 [494.3, 500.0]``."""
    d = decimals(row)
    lower, upper = row["final_ci"]
    return f"{row['final_iqm']:.{d}f} [{lower:.{d}f}, {upper:.{d}f}]"


def preset_cells(row: dict[str, Any]) -> list[str]:
    """The cells of one preset row, in ``PRESET_HEADER``'s order."""
    steps = f"{row['env_steps']:,}" + (f" of {row['budget']}" if row.get("budget") else "")
    if row.get("not_run"):
        empty = [""] * 6
        not_run = f"not run at 32 seeds ({row['not_run']})"
        return [
            row["preset"],
            "",
            steps,
            not_run,
            *empty,
            row.get("goal", ""),
            row.get("anchor", ""),
        ]
    target = row.get("target")
    seeds = row["seeds"]
    at = "-" if target is None else f"{row['at_target']}/{seeds}"
    solve = "-"
    if target is not None:
        median, solved = row["first_solve"]
        solve = f"{median:,.0f} ({solved} solved)" if solved else "never"
    return [
        row["preset"],
        str(seeds),
        steps,
        interval(row),
        "-" if target is None else f"{target:g}",
        at,
        solve,
        f"{row['auc_iqm']:.{decimals(row)}f}",
        f"{row['compile_s']:.0f}",
        f"{row['wall_s']:,.0f}",
        row.get("goal", ""),
        row.get("anchor") or "-",
    ]


def render_presets(table: Table) -> list[str]:
    """The Markdown lines of a ``kind: presets`` table."""
    align = PRESET_ALIGN + ("---", "---")
    lines = ["| " + " | ".join(PRESET_HEADER) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(cell(c) for c in preset_cells(row)) + " |" for row in table["rows"]]
    return lines


def render_columns(table: Table) -> list[str]:
    """The Markdown lines of a ``kind: table`` table, one column per ``columns`` entry,
    after a ``run`` column where the rows come from more than one run."""
    columns = table["columns"]
    runs = len(table["runs"]) > 1
    titles = (["run"] if runs else []) + [c["title"] for c in columns]
    align = (["---"] if runs else []) + ["---:" if "format" in c else "---" for c in columns]
    lines = ["| " + " | ".join(cell(t) for t in titles) + " |", "| " + " | ".join(align) + " |"]
    for row in table["rows"]:
        values = [
            number(row.get(c["key"]), c.get("format", ""), c.get("suffix", "")) for c in columns
        ]
        values = ([run_of(table, row)] if runs else []) + values
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return lines


def row_names(table: Table, run: str) -> str:
    """What the rows of ``run`` are called in the measured list: the presets' names (with
    their per-member files), or the number of rows."""
    rows = [r for r in table["rows"] if run_of(table, r) == run]
    if table["kind"] == "presets":
        named = [
            f"{r['preset']} (`{r['members']}`)" if r.get("members") else r["preset"] for r in rows
        ]
        return ", ".join(named)
    return f"{len(rows)} row{'s' if len(rows) != 1 else ''}"


def render_runs(table: Table) -> list[str]:
    """How each run of the table was measured: one list item per run with its rows,
    command, machine, date, load, commit, source and note."""
    lines = ["How the figures were measured:", ""]
    for run, fields in table["runs"].items():
        command = " ".join(str(fields["command"]).split())
        commit = str(fields["commit"])
        if fields.get("results_commit"):
            commit += f" (figures added to `benchmarks/RESULTS.md` in {fields['results_commit']})"
        lines += [
            f"- **{run}**: {row_names(table, run)}",
            f"    - command: {command if command.startswith('not ') else f'`{command}`'}",
            f"    - machine: {fields['machine']}",
            f"    - date: {fields['date']}; load: {' '.join(str(fields['load']).split())}",
            f"    - commit: {commit}",
            f"    - source: {' '.join(str(fields['source']).split())}",
        ]
        if fields.get("note"):
            lines.append(f"    - note: {' '.join(str(fields['note']).split())}")
    return lines


def render_block(name: str, table: Table) -> str:
    """The text of table ``name`` between its markers: a line saying where it comes from,
    the description, the table, the row notes and notes, and how it was measured."""
    lines = [f"<!-- written by benchmarks/tables.py from {DATA.as_posix()}/{name}.yaml -->", ""]
    if table.get("description"):
        lines += [" ".join(table["description"].split()), ""]
    body = render_presets(table) if table["kind"] == "presets" else render_columns(table)
    lines += body + [""]
    notes = [
        f"- {r.get('preset', run_of(table, r))}: {' '.join(r['note'].split())}"
        for r in table["rows"]
        if r.get("note")
    ]
    notes += [f"- {' '.join(str(n).split())}" for n in table.get("notes", [])]
    if notes:
        lines += notes + [""]
    lines += render_runs(table)
    return "\n".join(lines)


def journal_block(root: Path) -> str:
    """The index of ``benchmarks/journal/``: one list item per dated entry, its date, its
    title (the entry's first heading) and a link, in the order of the file names."""
    lines = []
    for path in sorted((root / JOURNAL).glob("*.md")):
        match = JOURNAL_NAME.match(path.name)
        if not match:
            continue
        title = path.read_text().split("\n", 1)[0].lstrip("# ").strip()
        date = "" if title.startswith(match.group(1)) else f"{match.group(1)}: "
        lines.append(f"- {date}[{title}](journal/{path.name})")
    return "\n".join(lines)


def tables_block(tables: dict[str, Table]) -> str:
    """The index of the tables for ``docs/results/index.md``: a link to each page, by group."""
    lines, group = [], None
    for name, table in tables.items():
        if table.get("group", "Presets") != group:
            group = table.get("group", "Presets")
            lines += ([""] if lines else []) + [f"**{group}**", ""]
        lines.append(f"- [{table['title']}]({name}.md)")
    return "\n".join(lines)


def find_block(text: str, name: str) -> tuple[int, int] | None:
    """``(start, end)`` of block ``name``'s body in ``text`` (between the end of its
    opening marker's line and the start of its closing marker), or None without markers."""
    opening = start_marker(name)
    begin = text.find(opening)
    if begin < 0:
        return None
    body = begin + len(opening) + 1
    close = text.find(END, body)
    if close < 0:
        raise ValueError(f"block {name}: '{opening}' has no '{END}'")
    return body, close


def with_block(text: str, name: str, body: str, heading: str = "") -> str:
    """``text`` with block ``name``'s body replaced by ``body``; without the markers, the
    block is appended (under ``heading`` where one is given)."""
    span = find_block(text, name)
    if span is None:
        head = f"\n{heading}\n" if heading else ""
        return text.rstrip("\n") + f"\n{head}\n{start_marker(name)}\n{body}\n{END}\n"
    return text[: span[0]] + body + "\n" + text[span[1] :]


def expected(root: Path) -> dict[Path, tuple[str, dict[str, str]]]:
    """For each generated file (relative to ``root``): its text as the generator would
    write it, and ``{block name: body}`` of the blocks it holds."""
    tables = load_tables(root)
    bodies = {name: render_block(name, table) for name, table in tables.items()}
    files = {RESULTS: dict(bodies, journal=journal_block(root))}
    files |= {DOCS / f"{name}.md": {name: body} for name, body in bodies.items()}
    files[DOCS / "index.md"] = {"tables": tables_block(tables)}
    out = {}
    for path, blocks in files.items():
        title = tables[path.stem]["title"] if path.stem in tables else "Results"
        text = (root / path).read_text() if (root / path).exists() else f"# {title}\n"
        for name, body in blocks.items():
            heading = f"## {tables[name]['title'] if name in tables else 'Journal'}"
            text = with_block(text, name, body, heading if path == RESULTS else "")
        out[path] = (text, blocks)
    return out


def check(root: Path = ROOT) -> list[str]:
    """The blocks whose committed text differs from what the generator would write, as
    ``"NAME (FILE)"``; empty when every table is up to date."""
    stale = []
    for path, (_, blocks) in expected(root).items():
        current = (root / path).read_text() if (root / path).exists() else ""
        for name, body in blocks.items():
            span = find_block(current, name)
            if span is None or current[span[0] : span[1]] != body + "\n":
                stale.append(f"{name} ({path.as_posix()})")
    return stale


def write(root: Path = ROOT) -> list[Path]:
    """Writes every generated file whose text changes; returns their paths."""
    written = []
    for path, (text, _) in expected(root).items():
        target = root / path
        if not target.exists() or target.read_text() != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Returns the exit code: 0, or 1 with ``--check`` when a table differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        stale = check(args.root)
        for name in stale:
            print(f"table differs from its data: {name}; run python benchmarks/tables.py")
        return 1 if stale else 0
    for path in write(args.root):
        print(f"wrote {path.as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
