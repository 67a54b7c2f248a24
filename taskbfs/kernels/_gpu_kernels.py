"""The building blocks of the GPU's level kernels (numba.cuda); imported lazily.

Returns
    :func:`kernels` ``(block_size, items_per_thread)`` → a namespace of compiled kernels:
    the block-level exclusive scan and the device-wide one (``scan_tiles``,
    ``add_tile_offsets``), ``fill``, and the top-down tiling (``frontier_degrees``,
    ``tile_sources``) that :mod:`taskbfs.kernels._gpu_levels` builds on; the device
    functions :func:`bit_is_set` and :func:`upper_bound`.
Approach
    Top-down levels are edge-balanced (the paper's Algorithm 3, with the warp-cooperative
    loop replaced by an edge-balanced mapping): an exclusive scan of the frontier's
    degrees lays the frontier's edges out as one index space; each block takes tiles of
    ``block_size * items_per_thread`` consecutive edges, each thread finds its edge's
    source by a binary search of the scan, narrowed to the tile's sources (found
    beforehand by one search per tile), so a hub with 10^6 neighbours is spread over every
    multiprocessor instead of one warp.
Encoding
    Local ``indptr`` (int64), global ``indices``, ``uint64`` bitmaps (bit ``v & 63`` of
    word ``v >> 6``). Only ``cuda.syncthreads``, shared/local arrays and atomics are used
    (no warp intrinsics), so every kernel also runs under ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import cuda, int64

from taskbfs.kernels._gpu_launch import launched_by_cupy

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_WORD_SHIFT = 6
_BIT_MASK = 63


@cuda.jit(device=True, inline=True)
def bit_is_set(bits, v):
    """True if vertex ``v`` is set in the uint64 bitmap ``bits``."""
    return (bits[v >> _WORD_SHIFT] >> np.uint64(v & _BIT_MASK)) & _ONE != _ZERO


@cuda.jit(device=True, inline=True)
def upper_bound(values, first, last, x):
    """First index in ``[first, last)`` whose value exceeds ``x`` (``last`` if none)."""
    while first < last:
        mid = (first + last) >> 1
        if values[mid] <= x:
            first = mid + 1
        else:
            last = mid
    return first


@cuda.jit(device=True, inline=True)
def task_of(bounds, num_tasks, v):
    """The task whose range ``[bounds[t], bounds[t + 1])`` holds vertex ``v``."""
    return upper_bound(bounds, 0, num_tasks + 1, v) - 1


@cuda.jit(device=True, inline=True)
def degree_in(indptr, lo, hi, v):
    """The out-degree of ``v`` in the adjacency of ``[lo, hi)`` (0 outside it)."""
    if v < lo or v >= hi:
        return int64(0)
    return indptr[v - lo + 1] - indptr[v - lo]


@functools.cache
def kernels(block_size: int, items_per_thread: int) -> SimpleNamespace:
    """Compile (once per shape) the kernels for blocks of ``block_size`` threads.

    ``block_size`` must be a power of two (the block scan halves it); both numbers are
    compile-time constants (shared and local array shapes).
    """
    block = int(block_size)
    items = int(items_per_thread)
    tile = block * items
    scan_len = 2 * block  # the block scan's two ping-pong halves

    @cuda.jit(device=True)
    def block_exclusive_scan(scratch, tid, value):
        """Exclusive prefix sum of ``value`` over the block, and the block's total.

        Hillis–Steele over two ``block``-long halves of ``scratch`` (ping-pong: one barrier
        per step). Every thread of the block must call it, and the block must pass a
        barrier before the next call (each caller has one before reusing ``scratch``).
        """
        scratch[tid] = value
        cuda.syncthreads()
        src = 0
        offset = 1
        while offset < block:
            x = scratch[src + tid]
            if tid >= offset:
                x += scratch[src + tid - offset]
            scratch[block - src + tid] = x
            cuda.syncthreads()
            src = block - src
            offset *= 2
        return scratch[src + tid] - value, scratch[src + block - 1]

    # ------------------------------------------------------------------ scan of int64
    @cuda.jit
    def scan_tiles(data, n, tile_sums):
        """In place: each ``block``-long tile of ``data[:n]`` → its exclusive scan."""
        scratch = cuda.shared.array(scan_len, int64)
        tid = cuda.threadIdx.x
        t = cuda.blockIdx.x
        num_tiles = (n + block - 1) // block
        while t < num_tiles:
            i = t * block + tid
            value = data[i] if i < n else 0
            prefix, total = block_exclusive_scan(scratch, tid, value)
            if i < n:
                data[i] = prefix
            if tid == 0:
                tile_sums[t] = total
            cuda.syncthreads()  # before the next tile reuses scratch
            t += cuda.gridDim.x

    @cuda.jit
    def add_tile_offsets(data, n, tile_offsets):
        """``data[i] += tile_offsets[i // block]``."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            data[i] += tile_offsets[i // block]
            i += stride

    @cuda.jit
    def fill(data, value):
        """``data[:] = value`` (zeroes counters without a host→device copy)."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < data.size:
            data[i] = value
            i += stride

    # ------------------------------------------------------------------ top-down
    @cuda.jit
    def frontier_degrees(indptr, lo, frontier, k, degrees):
        """``degrees[i] = deg(frontier[i])`` for ``i < k`` and ``degrees[k] = 0``."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i <= k:
            if i < k:
                local = frontier[i] - lo
                degrees[i] = indptr[local + 1] - indptr[local]
            else:
                degrees[i] = 0
            i += stride

    @cuda.jit
    def tile_sources(offsets, k, num_tiles, tile_first):
        """``tile_first[t]``: the frontier index owning edge ``t * tile``; ``[num_tiles] = k - 1``.

        One independent binary search per tile, so no tile waits on a serial search.
        """
        t = cuda.grid(1)
        stride = cuda.gridsize(1)
        while t <= num_tiles:
            if t < num_tiles:
                tile_first[t] = upper_bound(offsets, 0, k, t * tile) - 1
            else:
                tile_first[t] = k - 1
            t += stride

    return SimpleNamespace(
        block=block,
        items=items,
        tile=tile,
        block_exclusive_scan=block_exclusive_scan,
        scan_tiles=launched_by_cupy(scan_tiles),
        add_tile_offsets=launched_by_cupy(add_tile_offsets),
        fill=launched_by_cupy(fill),
        tile_sources=launched_by_cupy(tile_sources),
        frontier_degrees=launched_by_cupy(frontier_degrees),
    )
