"""Two small CUDA kernels: a top-down GPU step's candidates bucketed by owning task on the
device, before they leave it.

Returns
    :func:`bucket_kernels` ``(max_owners)`` gives two kernels: ``count_owners[blocks,
    threads](vertices, n, bounds, num_tasks, owners, counts)``
    writes each candidate's owner (the task whose range ``[bounds[t], bounds[t + 1])``
    holds it) to ``owners[i]`` and adds each owner's count to ``counts[t]``;
    ``scatter_by_owner[blocks, threads](vertices, parents, owners, n, cursor,
    out_vertices, out_parents)`` moves pair ``i`` to ``cursor[owners[i]]`` (advanced
    atomically), so with ``cursor`` set to the owners' start offsets the pairs come out
    grouped by owner. The device twin of :func:`taskbfs.kernels.merge.bucket_by_owner`,
    except that the order inside a bucket is not the order found (the barrier needs none:
    a GPU step's candidates are distinct, and any named parent is valid).
Approach
    Grid-stride; owners by binary search over ``bounds`` (the device twin of
    ``merge._owner``, compiled for the device); counts in a per-block shared
    histogram (one global atomic per block and owner), hence at most
    ``max_owners`` tasks (``gpu.BUCKET_MAX_OWNERS``; the caller buckets on the host
    beyond that).
Encoding
    Imported lazily, like ``_gpu_owned``; ``cuda`` is a module global so that
    ``NUMBA_ENABLE_CUDASIM=1`` can run it. ``counts`` must be zeroed by the caller.
"""

from __future__ import annotations

import functools

from numba import cuda, int32, int64

from taskbfs.kernels._gpu_launch import launched_by_cupy


@functools.cache
def bucket_kernels(max_owners: int) -> tuple:
    """``(count_owners, scatter_by_owner)`` for at most ``max_owners`` owners."""

    @cuda.jit
    def count_owners(vertices, n, bounds, num_tasks, owners, counts):
        histogram = cuda.shared.array(max_owners, int32)
        for t in range(cuda.threadIdx.x, num_tasks, cuda.blockDim.x):
            histogram[t] = 0
        cuda.syncthreads()
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            v = int64(vertices[i])
            lo = 0
            hi = num_tasks
            while hi - lo > 1:
                mid = (lo + hi) >> 1
                if bounds[mid] <= v:
                    lo = mid
                else:
                    hi = mid
            owners[i] = lo
            cuda.atomic.add(histogram, lo, 1)
            i += stride
        cuda.syncthreads()
        for t in range(cuda.threadIdx.x, num_tasks, cuda.blockDim.x):
            if histogram[t]:
                cuda.atomic.add(counts, t, int64(histogram[t]))

    @cuda.jit
    def scatter_by_owner(vertices, parents, owners, n, cursor, out_vertices, out_parents):
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            at = cuda.atomic.add(cursor, owners[i], int64(1))
            out_vertices[at] = vertices[i]
            out_parents[at] = parents[i]
            i += stride

    return launched_by_cupy(count_owners), launched_by_cupy(scatter_by_owner)
