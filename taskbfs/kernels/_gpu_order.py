"""Three small CUDA kernels: a step's discoveries put in vertex order on the device.

Returns
    :data:`scatter_by_vertex`, :data:`found_flags`, :data:`gather_in_order` (grid-stride
    kernels; :func:`taskbfs.kernels.gpu.order_by_vertex` runs them with a device-wide
    exclusive scan between the second and the third).
Approach
    A bottom-up GPU step finds each vertex of its range at most once, but appends its
    pairs through an atomic counter: in no useful order. The host barrier that accepts them
    into the owner's arrays (:func:`~taskbfs.kernels.merge.accept_share`) then writes
    distances, parents and visited bits at random places, several times slower than in
    vertex order. Unique vertices of
    one range sort by a scatter into a dense array of the range (``dense[v - lo] = parent``,
    -1 elsewhere), the found entries' positions by an exclusive scan of their flags, and a
    gather back into the pair buffers in ascending vertex order: memory-bound passes over
    the range, no comparison sort.
Encoding
    Imported lazily, like ``_gpu_kernels``: ``cuda`` is a module global so that
    ``NUMBA_ENABLE_CUDASIM=1`` can run it. Parents are vertex ids (>= 0), so -1 marks a
    vertex the step did not find.
"""

from __future__ import annotations

from numba import cuda

from taskbfs.kernels._gpu_launch import launched_by_cupy


@launched_by_cupy
@cuda.jit
def scatter_by_vertex(vertices, parents, n, lo, dense):
    """``dense[vertices[i] - lo] = parents[i]`` for ``i < n``."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dense[vertices[i] - lo] = parents[i]
        i += stride


@launched_by_cupy
@cuda.jit
def found_flags(dense, size, flags):
    """``flags[j] = 1`` where ``dense[j]`` holds a parent, else 0 (``j < size``)."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < size:
        flags[j] = 1 if dense[j] >= 0 else 0
        j += stride


@launched_by_cupy
@cuda.jit
def gather_in_order(dense, size, positions, lo, vertices, parents):
    """The found entries of ``dense`` written as pairs at their scanned ``positions``."""
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < size:
        if dense[j] >= 0:
            at = positions[j]
            vertices[at] = lo + j
            parents[at] = dense[j]
        j += stride
