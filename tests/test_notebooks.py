"""Every notebook under notebooks/ executes top to bottom without an error; the teaching ones draw pictures."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
#: the notebooks and how many figures each draws at least (matplotlib, from the test extra); the stored copies carry
#: them too (tests/test_notebooks_stored.py)
PICTURE_NOTEBOOKS = {"01_arithmetic.ipynb": 5, "02_run_and_decay.ipynb": 4, "03_doctor.ipynb": 2}


def test_there_are_notebooks():
    assert NOTEBOOKS
    assert set(PICTURE_NOTEBOOKS) <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= PICTURE_NOTEBOOKS.get(path.name, 0)
