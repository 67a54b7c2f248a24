"""Shared fixtures: one embedded runtime per test session (starting clusters is slow)."""

from __future__ import annotations

import os
import sys

import pytest

#: The modules that take longest, longest first (wall seconds on 2 cores in a full run of
#: the test command, session 20: test_bfs_gpu 161, test_faults 115, test_kernels_gpu 85,
#: ... test_memory_limited 10; each module's sum over its tests, setup included).
#: pyproject's ``--no-loadscope-reorder`` makes pytest-xdist hand out modules in
#: collection order, so these start first and the short ones fill in at the end; xdist's
#: own order (most tests first) started the simulator runs after 2-3 minutes, with no
#: regard to their length.
SLOWEST_MODULES = (
    "test_bfs_gpu.py",  # the CUDA simulator in one process
    "test_faults.py",
    "test_faults_trust.py",
    "test_kernels_gpu.py",  # the CUDA simulator in one process
    "test_distributed_graph.py",
    "test_dispatched.py",
    "test_bfs.py",
    "test_included.py",
    "test_runtime_cluster.py",
    "test_deploy.py",
    "test_distributed_search.py",
    "test_distributed_gpu.py",
    "test_dashboard.py",
    "test_notebooks.py",
    "test_first_search.py",
    "test_faults_waits.py",
    "test_graph_build.py",
    "test_slice_drift.py",
    "test_nx_backend.py",
    "test_runtime.py",
    "test_tls.py",
    "test_memory_growth.py",
    "test_example_cholesky.py",
    "test_memory_limited.py",
)


def pytest_collection_modifyitems(items):
    """The modules of :data:`SLOWEST_MODULES` first, in its order; the others after them,
    in their order (a stable sort)."""
    rank = {name: i for i, name in enumerate(SLOWEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session")
def runtime():
    """The embedded default runtime (in-process cluster, CPU workers)."""
    from taskbfs.runtime.cluster import default_runtime

    rt = default_runtime()
    yield rt
    # closed while the session ends, not by the interpreter's exit: by then distributed's
    # own threads may find its settings torn down, and the process may fail
    rt.close()


@pytest.fixture(scope="session", autouse=True)
def _simulator_threads_switch_fast():
    """Under numba's CUDA simulator every CUDA thread is a Python thread that waits at each
    barrier for the GIL, while the block's manager thread polls them holding it. Switching
    every 1 ms took the least CPU at no more wall time on a loaded machine (Python's 5 ms
    took more in session 18's measurements, 10 us and 0.1 ms in session 19's: test_bfs_gpu
    112 s CPU against 146 s at 10 us, test_kernels_gpu 47 s against 70 s, each pair side
    by side at load 15-28); at load 3-4 the two took about the same.

    Switching often also widens a race in distributed's ``Client.scheduler_info()``:
    the client's periodic refresh (``distributed.client.scheduler-info-interval``, every
    2 s, without workers) can replace the answer between the call's refresh and its return,
    so that ``["workers"]`` is empty. The periodic refresh is off here (taskbfs calls
    ``scheduler_info`` itself whenever it needs the workers)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        yield
        return
    import dask

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-3)
    with dask.config.set({"distributed.client.scheduler-info-interval": "1h"}):
        yield
    sys.setswitchinterval(old)


@pytest.fixture
def setting():
    """``setting(name, value)`` sets ``taskbfs.<name>`` in ``dask.config`` for this test
    (taken back after it)."""
    import dask

    applied = []

    def set_value(name: str, value) -> None:
        applied.append(dask.config.set({f"taskbfs.{name}": value}))

    yield set_value
    for change in reversed(applied):
        change.__exit__(None, None, None)
