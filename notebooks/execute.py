"""Run the notebooks in place, so that the repository keeps their outputs (figures as PNG).

Usage (from the repository root; each notebook gets a fresh kernel)::

    PYTHONPATH=$PWD python notebooks/execute.py                    # every notebook
    PYTHONPATH=$PWD python notebooks/execute.py task_granularity   # one

Each notebook runs at the scale given in :data:`SCALES` (larger than its defaults, which are
kept small for CI): those parameters go in a cell tagged ``injected-parameters`` after the
``parameters`` cell, as papermill does, so a reader sees what the outputs came from. A
notebook whose file would exceed :data:`MAX_BYTES` is refused (no huge blobs in git).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
#: Parameters of the committed runs (a scale where the effects exceed the noise).
SCALES = {
    "lambda_and_devices": "SCALE = 18\nKEYS = 8",
    "task_granularity": "SCALE = 20\nKEYS = 4\nREPEATS = 3",
    "traversal": "SCALE = 16",
}
MAX_BYTES = 1 << 20
CELL_TIMEOUT = 3600


def _gpus() -> str:
    """The GPUs the embedded cluster gets here (each its worker), in words."""
    from taskbfs.runtime import detect_gpus

    found = detect_gpus()
    if not found:
        return "no GPU unless SCHEDULER names one"
    from numba import cuda

    name = cuda.get_current_device().name
    name = name.decode() if isinstance(name, bytes) else name
    return f"{found} GPU ({name}); the embedded cluster's GPU worker uses the first"


def execute(path: Path, parameters: str) -> int:
    """Execute ``path`` with ``parameters`` injected; write it back; return its size."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    stamp = (f"# Injected by notebooks/execute.py, {time.strftime('%Y-%m-%d', time.gmtime())}: "
             f"{os.cpu_count()} CPU cores ({platform.machine()}), {_gpus()};\n"
             f"# load average {os.getloadavg()[0]:.1f} when it started (other processes share the "
             f"cores: above {os.cpu_count()}, expect noisy times)")
    cell = nbformat.v4.new_code_cell(f"{stamp}\n{parameters}")
    cell.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, cell)
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    text = nbformat.writes(nb)
    if len(text.encode()) > MAX_BYTES:
        raise SystemExit(f"{path.name}: {len(text.encode()):,} bytes with outputs (limit {MAX_BYTES:,})")
    path.write_text(text)
    return len(text.encode())


def main(names: list[str]) -> None:
    for name in names or sorted(SCALES):
        start = time.monotonic()
        size = execute(HERE / f"{name}.ipynb", SCALES[name])
        print(f"{name}: {time.monotonic() - start:.0f} s, {size:,} bytes", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
