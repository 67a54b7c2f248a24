"""RMM on a real GPU: a GPU worker with rmm installed takes its device memory through RMM.

tests/test_gpu_memory.py checks the choice everywhere with stand-in modules; this module
runs the real thing. It needs rmm (``pip install rmm-cu12``) and a CUDA GPU, and is skipped,
with that reason, elsewhere (this project's CI has no GPU; benchmarks/device/gpu_session.sh's
``rmm`` step runs it on the device machine).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from reference import scipy_distances
from shapes import grid, kronecker_like

import taskbfs as tb

NEEDS = "needs rmm and a CUDA GPU (benchmarks/device/gpu_session.sh's rmm step runs it on one)"


def _usable_gpu() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or importlib.util.find_spec("rmm") is None:
        return False
    from numba import cuda

    return cuda.is_available()


pytestmark = pytest.mark.skipif(not _usable_gpu(), reason=NEEDS)


def _allocators(dask_worker) -> dict:
    """What this worker's device memory goes through, as numba, CuPy and taskbfs see it."""
    from numba import cuda
    from rmm.allocators.numba import RMMNumbaManager

    from taskbfs.kernels import gpu_memory

    answer = {"taskbfs": gpu_memory.use_rmm_if_available(dask_worker).name}
    if answer["taskbfs"] == "none":
        return answer
    answer["numba"] = isinstance(cuda.current_context().memory_manager, RMMNumbaManager)
    try:
        import cupy
        from rmm.allocators.cupy import rmm_cupy_allocator

        answer["cupy"] = cupy.cuda.get_allocator() is rmm_cupy_allocator
    except ImportError:
        answer["cupy"] = None
    return answer


def _count_rmm_allocations(dask_worker) -> None:
    """From now on, RMM counts the bytes this GPU worker allocates."""
    import rmm.statistics

    if dask_worker.state.total_resources.get("GPU"):
        rmm.statistics.enable_statistics()


def _rmm_bytes(dask_worker) -> int:
    """Bytes this GPU worker allocated through RMM since the counting began (0 elsewhere)."""
    import rmm.statistics

    if not dask_worker.state.total_resources.get("GPU"):
        return 0
    return int(rmm.statistics.get_statistics().total_bytes)


@pytest.fixture(scope="module")
def runtime():
    with tb.Runtime(threads=2, gpus=1, dashboard_address=None) as rt:
        yield rt


def test_the_gpu_worker_allocates_through_rmm(runtime):
    answers = sorted(runtime.client.run(_allocators).values(), key=len)
    assert answers[0] == {"taskbfs": "none"}  # the CPU worker is left alone
    assert answers[1]["taskbfs"] == "rmm" and answers[1]["numba"] is True
    assert answers[1]["cupy"] in (True, None)


@pytest.mark.parametrize("strategy", ["gpu", "hybrid"])
def test_a_search_through_rmm_is_right_and_its_graph_is_rmms(runtime, strategy):
    raw = kronecker_like(12, 8, seed=3) if strategy == "gpu" else grid(64, 64)
    graph = tb.Graph.from_edges(raw.src, raw.dst, num_vertices=raw.num_vertices,
                                directed=raw.directed)
    runtime.client.run(_count_rmm_allocations)
    source = int(np.argmax(graph.degrees()))
    result = tb.bfs(graph, source, strategy=strategy, runtime=runtime, lam=64)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents)
    allocated = sum(runtime.client.run(_rmm_bytes).values())
    # the graph's slices went to the device through RMM when the search placed them
    assert allocated >= graph.indices.nbytes
