"""Every notebook in notebooks/ runs end to end (nbclient, a fresh Python kernel each).

Each notebook must open with a markdown cell saying what question it answers, have a cell
tagged ``parameters`` (small defaults, so that this test stays short), and use only the
public API (``import taskbfs as tb``, ``from taskbfs import trace``). A cell that raises
fails the test with the cell's source and the error.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
#: Seconds one cell may run (the whole notebook runs in well under a minute by default).
CELL_TIMEOUT = 300
PRIVATE = re.compile(r"\btaskbfs\.(bfs|runtime|kernels|graph|graph500|config|errors|cli|dashboard)\b"
                     r"|from taskbfs\.\w+ import|import taskbfs\.(?!trace\b)")


def test_the_notebooks_are_there():
    assert {p.name for p in NOTEBOOKS} >= {"task_granularity.ipynb", "lambda_and_devices.ipynb",
                                          "traversal.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_well_formed(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and "**Question.**" in first.source, \
        f"{path.name} must open with the question it answers"
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1, \
        f"{path.name} needs exactly one cell tagged 'parameters'"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "import taskbfs as tb" in code
    assert not PRIVATE.search(code), f"{path.name} uses a private module: {PRIVATE.search(code)[0]!r}"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{path.name} is stored with outputs; clear them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend: figures as PNG
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert images >= 2, f"{path.name} drew {images} figure(s)"
