"""The notebooks in notebooks/ execute from top to bottom without an error (each checks
its own results with asserts: returns that rise, six sweep members, resumed metrics that
neither repeat nor skip a step)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["quickstart", "compose", "sweeps", "checkpoints", "mbpo", "amp", "vae_prior"]


def test_every_notebook_is_tested():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name, tmp_path):
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(
        book, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
