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

Each algorithm page ``docs/algorithms/AGENT.md`` (one per agent) holds block ``results``:
the rows of ``presets.yaml`` whose preset (``jaxrl/presets/P.yaml``) trains that agent,
with the command that reproduces each row, the run's date, machine,
commit and journal entry, a plot of the row's learning curve
(``docs/algorithms/plots/P.png``, drawn from the per-member evaluations the row names in
``members``; a row without them says so), and links to the other tables whose data file
names the agent (``agents: [...]``). A plot carries a digest of the data it was drawn
from (a PNG text chunk), so ``--check`` also names a plot whose data changed.
"""

from __future__ import annotations

import argparse
import functools
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
ALGORITHMS = Path("docs/algorithms")
PLOTS = ALGORITHMS / "plots"
PRESETS = Path("jaxrl/presets")
# The game a family preset is judged on by benchmarks/presets.py (its FAMILY_GAMES).
FAMILY_GAMES = {"minatar": "MinAtar-Breakout"}
PLOT_VERSION = "1"  # part of every plot's digest: change it when the drawing changes
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
    if not isinstance(table.get("agents", []), list):
        raise ValueError(f"table {name}: 'agents' must be a list of agent names")
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


def preset_section(root: Path, preset: str) -> dict[str, Any]:
    """Preset ``preset``'s config file as a dict, its parent's sections (``preset:``)
    filled in; empty where the file is missing."""
    path = root / PRESETS / f"{preset}.yaml"
    if not path.exists():
        return {}
    stat = path.stat()
    return _preset_section(root, preset, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _preset_section(root: Path, preset: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """``preset_section``, parsed once per version of the file (PyYAML is pure Python)."""
    path = root / PRESETS / f"{preset}.yaml"
    config = yaml.safe_load(path.read_text()) or {}
    parent = preset_section(root, config["preset"]) if config.get("preset") else {}
    return {k: {**parent.get(k, {}), **config.get(k, {})} for k in ("agent", "env", "run")}


def preset_agent(root: Path, preset: str) -> str | None:
    """The agent preset ``preset`` trains (None where it has no config file)."""
    return preset_section(root, preset).get("agent", {}).get("name")


def preset_env(root: Path, preset: str) -> str:
    """The env a preset row was judged on: the preset's env, or its family's game."""
    env = preset_section(root, preset).get("env", {})
    return env.get("name") or FAMILY_GAMES.get(env.get("family"), env.get("family", ""))


def reproduce(command: str, preset: str) -> str:
    """The run's recorded command for one preset: without ``nice``, with ``--presets``
    naming only ``preset``."""
    words = command.split()
    while words and words[0] == "nice":  # nice [-n N]
        words = words[3:] if len(words) > 2 and words[1] == "-n" else words[1:]
    if "--presets" in words:
        start = words.index("--presets") + 1
        end = next((i for i in range(start, len(words)) if words[i].startswith("--")), len(words))
        words[start:end] = [preset]
    return " ".join(words)


def plot_digest(root: Path, row: dict[str, Any]) -> str:
    """What a row's plot is drawn from: its per-member file, its target, the drawing."""
    import hashlib

    data = (root / row["members"]).read_bytes()
    key = f"{PLOT_VERSION}|{row['preset']}|{row.get('target')}|".encode()
    return hashlib.sha256(key + data).hexdigest()[:16]


def png_text(path: Path) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG file."""
    import struct

    data, out, at = path.read_bytes(), {}, 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"tEXt":
            key, _, value = data[at + 8 : at + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return out


def draw_plot(root: Path, row: dict[str, Any], path: Path) -> None:
    """The IQM of the members' evaluation curves against env steps, with a 95% bootstrap
    band over members (2,000 resamples, seed 0) and the target, saved at ``path``."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    members = json.loads((root / row["members"]).read_text())
    steps = np.asarray(members["steps"], np.float64)
    curves = np.asarray(members["eval_curves"], np.float64)  # [members, evaluations]

    def iqm(x: np.ndarray) -> np.ndarray:  # over axis -2, as jaxrl.stats.iqm
        k = x.shape[-2] // 4
        return np.sort(x, axis=-2)[..., k : x.shape[-2] - k, :].mean(axis=-2)

    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(curves), size=(2000, len(curves)))
    low, high = np.percentile(iqm(curves[picks]), [2.5, 97.5], axis=0)
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    ax.fill_between(steps, low, high, alpha=0.25, color="C0", linewidth=0)
    marker = "o" if len(steps) <= 10 else None  # a few evaluations: show where they are
    label = f"IQM of {len(curves)} seeds, 95% CI"
    ax.plot(steps, iqm(curves), color="C0", marker=marker, markersize=4, label=label)
    if row.get("target") is not None:
        ax.axhline(row["target"], color="0.4", linestyle="--", linewidth=1, label="target")
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy evaluation return")
    ax.set_title(f"{row['preset']} on {preset_env(root, row['preset'])}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Source": plot_digest(root, row), "Software": None})
    plt.close(fig)


def agent_rows(root: Path, tables: dict[str, Table], agent: str) -> list[dict[str, Any]]:
    """The rows of the presets tables whose preset trains ``agent``, each with its run."""
    rows = []
    for table in tables.values():
        if table["kind"] != "presets":
            continue
        for row in table["rows"]:
            if preset_agent(root, row["preset"]) == agent:
                rows.append({**row, "_run": table["runs"][run_of(table, row)]})
    return rows


def algorithm_block(root: Path, tables: dict[str, Table], agent: str) -> str:
    """Block ``results`` of agent ``agent``'s page: its presets' 32-seed rows, how to
    reproduce each, its plots, and the other tables that name it."""
    rows = agent_rows(root, tables, agent)
    lines = [
        f"<!-- written by benchmarks/tables.py from {DATA.as_posix()}/ and "
        f"{PRESETS.as_posix()}/ -->",
        "",
    ]
    if not rows:
        lines += [
            f"No preset of `{agent}` has a table over 32 seeds in `{DATA.as_posix()}/` "
            "(the [presets table](../results/presets.md) says which presets are not judged "
            "and why).",
            "",
        ]
    else:
        lines += [
            "Each row: one preset as one `--seeds 32` program of `benchmarks/presets.py` (the "
            "[presets table](../results/presets.md) explains the columns). Final return of a "
            "member: the mean of at least 20 greedy episodes of its final policy.",
            "",
            "| preset | env | env steps | final IQM [95% CI] | target | at target (end) "
            "| median first-solve step |",
            "| --- | --- | ---: | --- | ---: | ---: | ---: |",
        ]
        for row in rows:
            c = preset_cells(row)
            env = preset_env(root, row["preset"])
            lines.append("| " + " | ".join(cell(x) for x in [c[0], env, *c[2:7]]) + " |")
        lines.append("")
        for row in rows:
            run = row["_run"]
            lines += [f"#### {row['preset']}", ""]
            if row.get("not_run"):
                lines += [f"Not run at 32 seeds: {cell(row['not_run'])}.", ""]
                continue
            lines += [
                f"- published anchor: {cell(row.get('anchor') or '-')}",
                f"- reproduce: `{reproduce(str(run['command']), row['preset'])}`",
                f"- measured: {cell(run['date'])}; {cell(run['machine'])}; load: "
                f"{cell(run['load'])}",
                f"- commit: {cell(run['commit'])}"
                + (
                    f" (figures recorded in {run['results_commit']})"
                    if run.get("results_commit")
                    else ""
                ),
                f"- journal: {cell(run['source'])}",
            ]
            if row.get("note"):
                lines.append(f"- note: {cell(row['note'])}")
            lines.append("")
            if row.get("members"):
                lines += [
                    f"![{row['preset']}: IQM of the greedy evaluation return over "
                    f"{row['seeds']} seeds against env steps, with its 95% bootstrap band]"
                    f"(plots/{row['preset']}.png)",
                    "",
                ]
            else:
                lines += [
                    "No learning curve: the run recorded this row's figures but not its "
                    "members' evaluations (no per-member file in `benchmarks/presets/`).",
                    "",
                ]
    others = [(n, t) for n, t in tables.items() if agent in t.get("agents", [])]
    if others:
        lines += ["Other measurements of this agent:", ""]
        lines += [f"- [{t['title']}](../results/{n}.md)" for n, t in others]
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def algorithm_agents(root: Path, tables: dict[str, Table]) -> list[str]:
    """The agents with an algorithm page: each page of ``docs/algorithms`` with a
    ``results`` block, and each agent a preset row trains (its page is created)."""
    marker = start_marker("results")
    pages = {p.stem for p in (root / ALGORITHMS).glob("*.md") if marker in p.read_text()}
    for table in tables.values():
        if table["kind"] == "presets":
            pages |= {a for r in table["rows"] if (a := preset_agent(root, r["preset"]))}
    return sorted(pages)


def plots(root: Path, tables: dict[str, Table]) -> dict[Path, dict[str, Any]]:
    """``{plot path: row}`` for every preset row with per-member evaluations."""
    out = {}
    for agent in algorithm_agents(root, tables):
        for row in agent_rows(root, tables, agent):
            if row.get("members") and not row.get("not_run"):
                out[PLOTS / f"{row['preset']}.png"] = row
    return out


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
    for agent in algorithm_agents(root, tables):
        files[ALGORITHMS / f"{agent}.md"] = {"results": algorithm_block(root, tables, agent)}
    out = {}
    for path, blocks in files.items():
        title = tables[path.stem]["title"] if path.stem in tables else "Results"
        title = f"`{path.stem}`" if path.parent == ALGORITHMS else title
        text = (root / path).read_text() if (root / path).exists() else f"# {title}\n"
        for name, body in blocks.items():
            heading = ""
            if path == RESULTS:
                heading = f"## {tables[name]['title'] if name in tables else 'Journal'}"
            elif path.parent == ALGORITHMS:
                heading = "## Results"
            text = with_block(text, name, body, heading)
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
    for path, row in plots(root, load_tables(root)).items():
        target = root / path
        if not target.exists() or png_text(target).get("Source") != plot_digest(root, row):
            stale.append(f"plot {row['preset']} ({path.as_posix()})")
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
    for path, row in plots(root, load_tables(root)).items():
        target = root / path
        if not target.exists() or png_text(target).get("Source") != plot_digest(root, row):
            draw_plot(root, row, target)
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
