"""CUDA kernels of the GPU task twins (numba.cuda); imported lazily by :mod:`taskbfs.kernels.gpu`.

Returns
    :func:`kernels` ``(block_size, items_per_thread)`` → a namespace of compiled kernels.
    Kernels write their results into device arrays; the host side reads back one small
    ``counters`` array (int64: ``[n_found, edges_examined, deferred]``).
Approach
    Top-down (the paper's Algorithm 3, with the warp-cooperative loop replaced by an
    edge-balanced mapping): an exclusive scan of the frontier's degrees lays the task's
    frontier edges out as one index space; each block takes tiles of
    ``block_size * items_per_thread`` consecutive edges, each thread finds its edge's source
    by a binary search of the scan (narrowed to the tile's sources, found beforehand by one
    search per tile), so a hub with 10^6 neighbours is spread over every multiprocessor
    instead of one warp. Discoveries are marked in a vertex
    mask (bitmap, ``atomicOr``) and compacted by a block-level prefix sum; one atomic per
    tile reserves the tile's slice of the output.
    Bottom-up: a thread per own vertex reads at most ``bu_thread_edges`` in-neighbours
    (stage 1); vertices that need more are queued and finished by a whole block each,
    a chunk of ``block_size`` edges at a time, the first frontier in-neighbour being the
    minimum edge index found (stage 2). Parents and edge counts are exactly the CPU's.
Encoding
    See :mod:`taskbfs.kernels.cpu`: local ``indptr`` (int64), global ``indices``,
    ``uint64`` bitmaps (bit ``v & 63`` of word ``v >> 6``), int64 outputs.
    Only ``cuda.syncthreads``, shared/local arrays and atomics are used (no warp
    intrinsics), so every kernel also runs under ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import cuda, int64

from taskbfs.kernels._gpu_launch import launched_by_cupy

#: Slots of the ``counters`` array shared by every kernel.
FOUND, EDGES, DEFERRED = 0, 1, 2
NUM_COUNTERS = 3

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_WORD_SHIFT = 6
_BIT_MASK = 63


@cuda.jit(device=True, inline=True)
def bit_is_set(bits, v):
    """True if vertex ``v`` is set in the uint64 bitmap ``bits``."""
    return (bits[v >> _WORD_SHIFT] >> np.uint64(v & _BIT_MASK)) & _ONE != _ZERO


@cuda.jit(device=True, inline=True)
def _claim(mask_bits, v):
    """Set ``v`` in the vertex mask; True for the one caller that set it first."""
    word = v >> _WORD_SHIFT
    bit = _ONE << np.uint64(v & _BIT_MASK)
    if mask_bits[word] & bit != _ZERO:  # cheap read first: most repeats stop here
        return False
    old = cuda.atomic.or_(mask_bits, word, bit)
    return old & bit == _ZERO


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

    @cuda.jit
    def top_down_expand(indptr, indices, lo, frontier, offsets, k, tile_first, num_tiles,
                        visited_bits, mask_bits, dedupe, out_vertices, out_parents, counters):
        """Examine every frontier edge (edge-balanced tiles); append unvisited targets."""
        scan_scratch = cuda.shared.array(scan_len, int64)
        tile_base = cuda.shared.array(1, int64)  # the tile's first output slot
        found_v = cuda.local.array(items, int64)
        found_u = cuda.local.array(items, int64)
        tid = cuda.threadIdx.x
        total = offsets[k]
        if cuda.blockIdx.x == 0 and tid == 0:
            counters[EDGES] = total
        t = cuda.blockIdx.x
        while t < num_tiles:
            start = t * tile
            first = tile_first[t]
            last = tile_first[t + 1] + 1  # sources of this tile: [first, last)
            count = 0
            for j in range(items):
                e = start + j * block + tid
                if e < total:
                    i = upper_bound(offsets, first, last, e) - 1
                    u = frontier[i]
                    v = indices[indptr[u - lo] + (e - offsets[i])]
                    if not bit_is_set(visited_bits, v):
                        if not dedupe or _claim(mask_bits, v):
                            found_v[count] = v
                            found_u[count] = u
                            count += 1
            prefix, tile_found = block_exclusive_scan(scan_scratch, tid, count)
            if tid == 0 and tile_found > 0:
                tile_base[0] = cuda.atomic.add(counters, FOUND, tile_found)
            cuda.syncthreads()
            base = tile_base[0] + prefix
            for j in range(count):
                out_vertices[base + j] = found_v[j]
                out_parents[base + j] = found_u[j]
            # No barrier here: thread 0 rewrites tile_base only after the next tile's scan
            # barriers, which every thread reaches after reading this tile's base; the
            # barrier above also separates this scan from the next.
            t += cuda.gridDim.x

    @cuda.jit
    def clear_mask(mask_bits, out_vertices, counters):
        """Zero the mask words of the vertices found: leaves the whole mask zero again."""
        n = counters[FOUND]
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < n:
            mask_bits[out_vertices[i] >> _WORD_SHIFT] = 0
            i += stride

    # ------------------------------------------------------------------ bottom-up
    @cuda.jit
    def bottom_up_threads(indptr, indices, lo, hi, visited_bits, frontier_bits, limit,
                          out_vertices, out_parents, deferred, counters):
        """Stage 1: a thread per own vertex, at most ``limit`` in-neighbours each."""
        scan_scratch = cuda.shared.array(scan_len, int64)
        # Output base, deferred-queue base, the tile's edge count (summed by atomics).
        tile_info = cuda.shared.array(3, int64)
        tid = cuda.threadIdx.x
        if tid == 0:
            tile_info[2] = 0
        cuda.syncthreads()
        num_own = hi - lo
        tile_start = cuda.blockIdx.x * block
        while tile_start < num_own:
            local = tile_start + tid
            parent = -1
            edges = 0
            defer = 0
            if local < num_own and not bit_is_set(visited_bits, lo + local):
                start = indptr[local]
                stop = indptr[local + 1]
                end = min(stop, start + limit)
                e = start
                while e < end:
                    u = indices[e]
                    if bit_is_set(frontier_bits, u):
                        parent = u
                        break
                    e += 1
                if parent >= 0:
                    edges = e - start + 1
                else:
                    edges = end - start
                    if stop > end:
                        defer = 1
            if edges > 0:
                cuda.atomic.add(tile_info, 2, edges)
            found = 1 if parent >= 0 else 0
            # One scan carries both flags: found in the low 32 bits, defer in the high.
            prefix, total = block_exclusive_scan(scan_scratch, tid, found + (defer << 32))
            if tid == 0:
                n_found = total & 0xFFFFFFFF
                n_deferred = total >> 32
                if n_found > 0:
                    tile_info[0] = cuda.atomic.add(counters, FOUND, n_found)
                if n_deferred > 0:
                    tile_info[1] = cuda.atomic.add(counters, DEFERRED, n_deferred)
                cuda.atomic.add(counters, EDGES, tile_info[2])
                tile_info[2] = 0  # every thread's add came before the scan's barriers
            cuda.syncthreads()
            if found:
                slot = tile_info[0] + (prefix & 0xFFFFFFFF)
                out_vertices[slot] = lo + local
                out_parents[slot] = parent
            if defer:
                deferred[tile_info[1] + (prefix >> 32)] = local
            # No barrier here: thread 0 rewrites tile_info only after the next scan's
            # barriers, which every thread reaches after reading this tile's bases.
            tile_start += cuda.gridDim.x * block

    @cuda.jit
    def bottom_up_blocks(indptr, indices, lo, frontier_bits, limit, deferred,
                         out_vertices, out_parents, counters):
        """Stage 2: a block per deferred vertex scans the rest of its in-neighbours."""
        state = cuda.shared.array(1, int64)  # smallest edge index with a frontier source
        tid = cuda.threadIdx.x
        num_deferred = counters[DEFERRED]
        q = cuda.blockIdx.x
        while q < num_deferred:
            local = deferred[q]
            start = indptr[local] + limit
            stop = indptr[local + 1]
            if tid == 0:
                state[0] = stop
            cuda.syncthreads()
            chunk = start
            while chunk < stop:
                e = chunk + tid
                if e < stop and bit_is_set(frontier_bits, indices[e]):
                    cuda.atomic.min(state, 0, e)
                cuda.syncthreads()
                done = state[0] < stop
                cuda.syncthreads()  # every thread has read state before anyone moves on
                if done:
                    break
                chunk += block
            if tid == 0:
                best = state[0]
                if best < stop:
                    slot = cuda.atomic.add(counters, FOUND, 1)
                    out_vertices[slot] = lo + local
                    out_parents[slot] = indices[best]
                    cuda.atomic.add(counters, EDGES, best - start + 1)
                else:
                    cuda.atomic.add(counters, EDGES, stop - start)
            cuda.syncthreads()  # state is rewritten for the next vertex
            q += cuda.gridDim.x

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
        top_down_expand=launched_by_cupy(top_down_expand),
        clear_mask=launched_by_cupy(clear_mask),
        bottom_up_threads=launched_by_cupy(bottom_up_threads),
        bottom_up_blocks=launched_by_cupy(bottom_up_blocks),
    )
