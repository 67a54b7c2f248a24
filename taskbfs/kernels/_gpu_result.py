"""One small CUDA kernel: a step's discoveries written into the search's result on the device.

Returns
    :data:`record_found` ``[blocks, threads](vertices, parents_of, n, distance, distances,
    parents)`` writes ``distances[v] = distance`` and ``parents[v] = parents_of[i]`` for
    ``v = vertices[i]``, ``i < n`` (grid-stride).
Approach
    When every level of a search runs on one GPU worker (``included.run_search_on_gpu``),
    its GPU steps leave their ``(vertex, parent)`` pairs in the result arrays on the device
    instead of copying the parents back each level; the result crosses the bus once, at the
    end (see :func:`taskbfs.search.device_cache.result_to_host`). The pairs of one call are
    unique vertices (the step's vertex mask), so plain stores suffice.
Encoding
    Imported lazily, like ``_gpu_narrow``; ``cuda`` is a module global so that
    ``NUMBA_ENABLE_CUDASIM=1`` can run it. Distances and parents are int64 arrays over
    every vertex id.
"""

from __future__ import annotations

from numba import cuda

from taskbfs.kernels._gpu_launch import launched_by_cupy


@launched_by_cupy
@cuda.jit
def record_found(vertices, parents_of, n, distance, distances, parents):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        v = vertices[i]
        distances[v] = distance
        parents[v] = parents_of[i]
        i += stride
