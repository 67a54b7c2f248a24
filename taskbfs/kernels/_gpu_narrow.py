"""One small CUDA kernel: narrow a task's int64 ``(vertex, parent)`` pairs to int32 on the device.

Returns
    :data:`narrow` ``[blocks, threads](src_v, src_u, n, dst_v, dst_u)`` writes
    ``dst[i] = int32(src[i])`` for ``i < n`` (grid-stride).
Approach
    The GPU step kernels write int64 pairs; when the graph's vertex ids fit int32 (its
    ``indices`` are int32, as the CPU step's outputs then are), narrowing them on the device
    halves the bytes copied back to the host and read by the level barrier.
Encoding
    Imported lazily (by :mod:`taskbfs.search.device_cache`), like ``_gpu_kernels``: ``cuda`` is
    a module global so that ``NUMBA_ENABLE_CUDASIM=1`` can run it.
"""

from __future__ import annotations

from numba import cuda, int32

from taskbfs.kernels._gpu_launch import launched_by_cupy


@launched_by_cupy
@cuda.jit
def narrow(src_v, src_u, n, dst_v, dst_u):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dst_v[i] = int32(src_v[i])
        dst_u[i] = int32(src_u[i])
        i += stride
