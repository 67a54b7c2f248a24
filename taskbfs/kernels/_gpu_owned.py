"""Two small CUDA kernels: a step's discoveries as bits over the task's own words, and those
bits ORed into a bitmap.

Returns
    :data:`owned_bits` ``[blocks, threads](vertices, n, lo, first_word, indptr, words, edges)``
    ORs bit ``v & 63`` of ``words[(v >> 6) - first_word]`` for each ``v = vertices[i]``,
    ``i < n``, and adds the sum of their degrees (``indptr[v - lo + 1] - indptr[v - lo]``)
    to ``edges[0]``, run on the step's output before it leaves the device, so that the GPU
    worker's thread does no per-vertex work for the barrier.
    :data:`or_into` ``[blocks, threads](target, words, n)`` ORs ``words[:n]`` into
    ``target[:n]``.
Approach
    Grid-stride; ``atomicOr`` because neighbouring vertices share words; each thread adds
    its partial degree sum with one atomic.
Encoding
    Imported lazily, like ``_gpu_narrow``; ``cuda`` is a module global so that
    ``NUMBA_ENABLE_CUDASIM=1`` can run it. ``words`` must be zeroed by the caller.
"""

from __future__ import annotations

from numba import cuda, int64, uint64

from taskbfs.kernels._gpu_launch import launched_by_cupy


@launched_by_cupy
@cuda.jit
def owned_bits(vertices, n, lo, first_word, indptr, words, edges):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    total = int64(0)
    while i < n:
        v = int64(vertices[i])
        cuda.atomic.or_(words, (v >> 6) - first_word, uint64(1) << uint64(v & 63))
        local = v - lo
        total += indptr[local + 1] - indptr[local]
        i += stride
    if total:
        cuda.atomic.add(edges, 0, total)


@launched_by_cupy
@cuda.jit
def or_into(target, words, n):
    """``target[i] |= words[i]`` for ``i < n`` (grid-stride): a step's discoveries into the
    device's visited bitmap, when the next level's step reuses it (no atomics: each word
    has one thread)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        target[i] |= words[i]
        i += stride
