"""Work of the graph builders spread over this process's cores: :func:`run` and :func:`cuts`.

Approach
--------
The work is cut into pieces (ranges of edges, blocks of rows) and each piece handed to a
compiled loop on a thread of a pool; the loops release the GIL (``nogil=True``), so the
pieces run at once, and each writes only its own part of the outputs. A pool rather than
numba's ``parallel=True``: the builders also run inside Dask workers' task threads, and
numba's fallback threading layer (workqueue, where neither TBB nor OpenMP is installed)
is not safe to launch from two threads at once.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["cores", "cuts", "run"]

#: The pools :func:`run` hands work to, by (process id, threads): made on first use and
#: kept, since a build calls ``run`` once per batch of edge ranges (a forked child, whose
#: copies of the pools have no threads, makes its own).
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_lock = threading.Lock()


def cores() -> int:
    """Threads a builder uses by default: one per core of this machine."""
    return os.cpu_count() or 1


def cuts(total: int, parts: int) -> np.ndarray:
    """``parts + 1`` int64 bounds cutting ``0 .. total`` into ``parts`` near-equal ranges."""
    return (np.arange(parts + 1, dtype=np.int64) * total) // max(1, parts)


def run(work, items, threads: int) -> list:
    """``[work(item) for item in items]``, the calls spread over ``threads`` threads (in
    this thread alone when ``threads`` is 1 or there is one item)."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    return list(_pool(threads).map(work, items))


def _pool(threads: int) -> ThreadPoolExecutor:
    """This process's pool of ``threads`` threads."""
    key = (os.getpid(), threads)
    with _lock:
        if key not in _pools:
            _pools[key] = ThreadPoolExecutor(threads, thread_name_prefix="taskbfs-graph")
        return _pools[key]
