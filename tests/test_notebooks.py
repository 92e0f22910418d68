"""Every notebook executes top to bottom on small settings (MONOIDLAB_SMALL=1), so none can rot.

Outputs are not committed; the executed copies live in a temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MONOIDLAB_SMALL", "1")
    nb = nbformat.read(path, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{path.name}: commit notebooks without outputs"
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    # every figure cell produced an image
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"{path.name} produced no figure"


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    for expected in ("01_monoids_and_classes", "02_coverage_gaps", "03_minimum_training_length",
                     "04_probing_and_associativity"):
        assert expected in names
    assert os.path.isdir(NOTEBOOKS[0].parent)
