"""Preload (``dask worker --preload``) for a GPU worker under numba's CUDA simulator.

The simulator runs every CUDA thread of a block as a Python thread that waits for the GIL
at each barrier: switching threads every 10 us instead of Python's 5 ms made the simulated
GPU tests 2-3x faster on 2 cores (tests/conftest.py does the same in the test process).
"""

from __future__ import annotations

import sys


def dask_setup(worker=None) -> None:
    sys.setswitchinterval(1e-5)
