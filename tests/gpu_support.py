"""Running a GPU test module under numba's CUDA simulator when this process has no GPU.

numba reads ``NUMBA_ENABLE_CUDASIM`` once, at its first import, which other test modules
have usually done already; so without a real GPU a GPU test module re-runs itself in a
fresh interpreter with the simulator on, and fails if anything fails there.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOT_IN_PROCESS = "numba.cuda is not usable in this process"


def run_module_under_simulator(test_file: str, timeout: float) -> None:
    """Run ``pytest test_file`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``; assert it
    passed. One process (``-n 0``): the simulator holds the GIL, the test command's own
    processes already fill the cores, and a second process's start costs more than it
    saves."""
    if importlib.util.find_spec("numba.cuda") is None:
        pytest.skip("numba.cuda is not installed (pip install numba-cuda): no simulator either")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # not a worker
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         *(["-n", "0"] if importlib.util.find_spec("xdist") else []), test_file],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )
    report = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, report
    assert " passed" in proc.stdout, report
    assert NOT_IN_PROCESS not in proc.stdout, "the simulator did not start:\n" + report
