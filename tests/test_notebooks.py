"""The notebooks in notebooks/ execute from top to bottom without an error (each checks
its own results with asserts: returns that rise, six sweep members, resumed metrics that
neither repeat nor skip a step).

Each notebook runs in this process, in IPython's shell (what a Jupyter kernel runs cells
with: its magics and display hooks), its code cells in order in a fresh namespace, in a
temporary working directory. A kernel process per notebook cost a process start and the
imports of JAX and jaxrl each time (about 3 s on the 2-core machine, seven times); what a
notebook registers (a callback) is undone afterwards."""

from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from jaxrl.experiment import callbacks

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NO_HISTORY = Config({"HistoryManager": {"enabled": False}})  # no database in ~/.ipython
NAMES = ["quickstart", "compose", "sweeps", "checkpoints", "mbpo", "amp", "vae_prior"]


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


def run_cells(book: nbformat.NotebookNode) -> dict:
    """Executes ``book``'s code cells in order in IPython's shell, in a fresh namespace;
    returns the namespace. A cell that raises stops the run: its exception is raised."""
    shell = InteractiveShell.instance(config=NO_HISTORY)
    shell.reset(new_session=False)
    for cell in book.cells:
        if cell.cell_type == "code":
            shell.run_cell(cell.source, store_history=False, silent=True).raise_error()
    return shell.user_ns


def test_a_failing_cell_stops_the_run():
    book = nbformat.v4.new_notebook()
    book.cells = [
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("assert x == 2, 'the third cell'"),
        nbformat.v4.new_code_cell("y = 3"),
    ]
    with pytest.raises(AssertionError, match="the third cell"):
        run_cells(book)
    assert "y" not in InteractiveShell.instance().user_ns
    book.cells[2].source = "%time x = 2"  # IPython's syntax runs as in a kernel
    namespace = run_cells(book)
    assert (namespace["x"], namespace["y"]) == (2, 3)
    book.cells = book.cells[3:]
    assert "x" not in run_cells(book)  # each notebook starts from a fresh namespace


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(callbacks, "_REGISTRY", dict(callbacks._REGISTRY))
    run_cells(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4))
