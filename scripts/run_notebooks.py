"""Executes the notebooks in ``notebooks/`` and saves them with their outputs, which the
documentation site shows (``mkdocs-jupyter`` renders the committed outputs and executes
nothing, so that the docs build stays fast; ``tests/test_notebooks.py`` executes every
notebook's code in the test suite).

    python scripts/run_notebooks.py                 # every notebook
    python scripts/run_notebooks.py quickstart amp  # some of them
    python scripts/run_notebooks.py --check         # exit 1 if a notebook has no outputs

Each notebook runs in a fresh Jupyter kernel (``nbclient``, needs ``ipykernel``: the docs
extra brings both) in a temporary working directory, cells in order, and stops at the
first cell that raises. Outputs that would differ from run to run without saying anything
(execution metadata, the temporary directory's name) are removed or replaced, so that a
rerun changes a notebook only where its results change.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TMP = re.compile(r"/tmp/[\w./-]*?jaxrl-notebook-\w+")  # tempfile.mkdtemp(prefix=...)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


NOISE = ('install "ipywidgets" for Jupyter support',)  # rich's progress bar outside a terminal


def text_of(output) -> str:
    return output.get("text", "") + output.get("data", {}).get("text/plain", "")


def clean(book) -> None:
    """Removes what changes from run to run without meaning anything: execution metadata,
    the temporary directory's name, terminal colour codes, empty displays and the warning
    rich's progress bar gives without ipywidgets."""
    book.metadata.pop("widgets", None)
    for cell in book.cells:
        cell.metadata.pop("execution", None)
        kept = []
        for output in cell.get("outputs", []):
            text = text_of(output)
            if output.get("output_type") in ("stream", "display_data") and (
                any(noise in text for noise in NOISE)
                or (not text.strip() and "image/png" not in output.get("data", {}))
            ):
                continue
            if "text" in output:
                output["text"] = tidy(output["text"])
            for key in ("text/plain", "text/html"):
                if key in output.get("data", {}):
                    output["data"][key] = tidy(output["data"][key])
            kept.append(output)
        if cell.cell_type == "code":
            cell.outputs = kept


def tidy(text: str) -> str:
    text = TMP.sub("/tmp/jaxrl-notebook-…", ANSI.sub("", text))
    return text.replace(str(ROOT) + "/", "")


def has_outputs(book) -> bool:
    """Whether every code cell was executed (it has an execution count)."""
    code = [c for c in book.cells if c.cell_type == "code"]
    return all(c.get("execution_count") for c in code)


def run(path: Path, timeout: int) -> None:
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as cwd:
        env_root = str(ROOT)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (env_root, os.environ.get("PYTHONPATH", "")) if p
        )
        client = NotebookClient(
            book, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd}}
        )
        client.execute()
    clean(book)
    nbformat.write(book, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all)")
    parser.add_argument("--check", action="store_true", help="execute nothing")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [NOTEBOOKS / f"{n}.ipynb" for n in args.names] or sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.check:
        import nbformat

        bare = [p.name for p in paths if not has_outputs(nbformat.read(p, as_version=4))]
        for name in bare:
            print(f"{name}: not executed; run python scripts/run_notebooks.py {name[:-6]}")
        return 1 if bare else 0
    for path in paths:
        print(f"running {path.relative_to(ROOT)}", flush=True)
        run(path, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
