"""Every notebook in notebooks/ runs end to end (nbclient, a fresh Python kernel each).

Each notebook must open with a markdown cell saying what question it answers, have a cell
tagged ``parameters`` (small defaults, so that this test stays short), and use only the
public API (``import taskbfs as tb``, ``from taskbfs import trace``). A cell that raises
fails the test with the cell's source and the error. The repository keeps each notebook
executed (figures as PNG, under 1 MB) by ``notebooks/execute.py`` at a larger scale, named
in a cell tagged ``injected-parameters``; the runs here drop that cell and use the defaults
(or smaller parameters), so they stay short.
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
#: Largest notebook file, outputs included (no huge blobs in git).
MAX_BYTES = 1 << 20
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
    assert path.stat().st_size < MAX_BYTES, f"{path.name}: {path.stat().st_size:,} bytes"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_executed(path):
    """Outputs a reader sees on GitHub: every code cell ran, in order, without an error, at
    the scale its injected-parameters cell names (notebooks/execute.py); figures as PNG."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        f"{path.name} is not stored executed in order: run notebooks/execute.py"
    assert sum("injected-parameters" in c.metadata.get("tags", []) for c in code) == 1
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    kinds = {kind for o in outputs for kind in o.get("data", {}) if kind.startswith("image/")}
    assert kinds == {"image/png"}, kinds
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2


def _execute(path: Path, parameters: str = ""):
    """Run the notebook (with ``parameters`` injected after its parameter cell, as papermill
    does); return it with its outputs."""
    nb = nbformat.read(path, as_version=4)
    # the stored outputs' parameters (a long run) give way to the defaults, then to ours
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    if parameters:
        at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(parameters))
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    return nb


def _text(nb) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
                     if o.get("output_type") == "stream")


#: Parameters CI gives a notebook whose defaults take longer than a test should.
CI_PARAMETERS = {"task_granularity": "SCALE = 10\nTASKS = [1, 4, 16]\nKEYS = 1\nREPEATS = 2"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend: figures as PNG
    nb = _execute(path, CI_PARAMETERS.get(path.stem, ""))
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert images >= 2, f"{path.name} drew {images} figure(s)"


def test_lambda_notebook_reads_a_recorded_crossover(tmp_path, monkeypatch):
    # a made-up measurement file, only to drive the notebook's "file present" branch: the GPU
    # wins from 1000 vertices on (and not at 100, where it loses)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    csv = tmp_path / "lambda_crossover.csv"
    csv.write_text("frontier_size,cpu_seconds,gpu_seconds,device\n"
                   "1,1e-5,2e-4,test fixture\n100,5e-5,2e-4,test fixture\n"
                   "1000,3e-4,2e-4,test fixture\n10000,3e-3,3e-4,test fixture\n")
    path = next(p for p in NOTEBOOKS if p.stem == "lambda_and_devices")
    for n, crossover in enumerate((900, 150)):  # the logs of two made-up runs
        (tmp_path / f"lambda_crossover_run{n}.log").write_text(
            f"machine: test; GPU: test fixture; date 2026-01-0{n + 1}\ncrossover: the GPU task is "
            f"faster above ~{crossover} frontier vertices (lambda = {crossover}) on test fixture\n")
    logs = str(tmp_path / "lambda_crossover*.log")
    nb = _execute(path, f"SCALE = 9\nKEYS = 1\nLAMBDAS = [0, 1000]\nCROSSOVER_CSV = {str(csv)!r}\n"
                        f"CROSSOVER_LOGS = {logs!r}")
    text = _text(nb)
    # log-log interpolation between 100 (CPU wins 4x) and 1000 (GPU wins 1.5x): 100 * 10**0.774
    assert "this run, on test fixture: crossover 594 frontier vertices" in text, text
    assert "2 recorded runs: crossovers from 150 to 900 frontier vertices (6.0x apart)" in text, text
    assert "does not exist" not in text


def test_lambda_notebook_without_a_recorded_crossover(tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)
    path = next(p for p in NOTEBOOKS if p.stem == "lambda_and_devices")
    missing = tmp_path / "lambda_crossover.csv"
    nb = _execute(path, f"SCALE = 9\nKEYS = 1\nLAMBDAS = [0, 1000]\nCROSSOVER_CSV = {str(missing)!r}")
    text = _text(nb)
    assert f"No GPU measurement recorded: {missing} does not exist (yet)." in text, text
    assert "this run, on" not in text
