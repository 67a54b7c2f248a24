"""CUDA kernels of an owner whose search state lives on its GPU (numba.cuda); imported lazily.

Returns
    :func:`owner_kernels` ``(block_size, result_dtype)`` → a namespace of two compiled
    kernels that :class:`~taskbfs.search.device_owner.DeviceOwner` runs after each level's
    steps: ``claims_to_bits`` (the vertices a top-down level claimed here, of any range,
    into the level's next bitmap) and ``take_reached`` (every owner's found vertices, the
    bitmaps OR'd, into this owner's state, its own queued and counted per task).
Encoding
    As :mod:`taskbfs.kernels._gpu_levels` (the state of a
    :class:`~taskbfs.kernels.gpu_levels.DeviceLevels`): ``parents`` -1 unreached, -2 a
    vertex whose parent was written elsewhere (here: by the owner that claimed it). Only
    ``syncthreads``, shared arrays and atomics: both run under ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import cuda, int32, int64, uint64

from taskbfs.kernels._gpu_kernels import degree_in, task_of
from taskbfs.kernels._gpu_launch import launched_by_cupy
from taskbfs.kernels._gpu_levels import FOUND, ROW, VISITED_ON_HOST

_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@functools.cache
def owner_kernels(block_size: int, result_dtype: str) -> SimpleNamespace:
    """Compile (once per block size and vertex type) the owner kernels for blocks of
    ``block_size`` threads."""
    vid = int32 if np.dtype(result_dtype) == np.int32 else int64
    block = int(block_size)
    unvisited = vid(-1)
    on_host = vid(VISITED_ON_HOST)

    @cuda.jit
    def claims_to_bits(queue, row, bits):
        """Set in ``bits`` the vertices the level claimed here (``queue[:row[FOUND]]``)."""
        i = cuda.grid(1)
        while i < row[FOUND]:
            v = int64(queue[i])
            cuda.atomic.or_(bits, v >> 6, _ONE << uint64(v & 63))
            i += cuda.gridsize(1)

    @cuda.jit
    def take_reached(bits, num_words, out_indptr, lo, hi, depth, parents, distances, queue,
                     tail, bounds, num_tasks, own_tasks, task_rows, next_task_rows, old_bits,
                     next_row):
        """Every owner's found vertices (``bits``: their next bitmaps OR'd) into this
        owner's state: those not claimed here reached at ``depth``, their parent on the
        owner that claimed them (-2); those of this owner's tasks (``own_tasks[t]`` 1,
        all within ``[lo, hi)``) queued (its next top-down frontier, ``tail[0]`` zeroed by
        the caller) and counted per task with their out-arcs, as ``tally_found`` counts (a
        tile of words inside one task adds its sums once); for the next level, its
        ``next_task_rows`` and counts ``next_row`` zeroed and ``old_bits`` (this level's
        frontier bitmap, its next) cleared."""
        sums = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        j = cuda.grid(1)
        while j < 3 * num_tasks + ROW:
            next_task_rows[j] = 0
            if j < ROW:
                next_row[j] = 0
            j += cuda.gridsize(1)
        t = cuda.blockIdx.x
        while t * block < num_words:
            first = max(t * block * 64, lo)
            last = min((t + 1) * block * 64, hi) - 1
            task = int64(0)
            whole = first <= last
            if whole:
                task = task_of(bounds, num_tasks, first)
                whole = task == task_of(bounds, num_tasks, last)
            if tid < 2:
                sums[tid] = 0
            cuda.syncthreads()
            i = t * block + tid
            word = _ZERO
            if i < num_words:
                word = bits[i]
                old_bits[i] = _ZERO
            found = int64(0)
            arcs = int64(0)
            if word != _ZERO:
                mine = _ZERO
                count = 0
                for b in range(64):
                    if (word >> uint64(b)) & _ONE != _ZERO:
                        v = i * 64 + b
                        if parents[v] == unvisited:
                            parents[v] = on_host
                            distances[v] = vid(depth)
                        if lo <= v and v < hi:
                            owner = task if whole else task_of(bounds, num_tasks, v)
                            if own_tasks[owner] == 0:  # another owner's, between ours
                                continue
                            mine |= _ONE << uint64(b)
                            count += 1
                            degree = degree_in(out_indptr, lo, hi, v)
                            if whole:
                                found += 1
                                arcs += degree
                            else:
                                cuda.atomic.add(task_rows, owner, 1)
                                cuda.atomic.add(task_rows, num_tasks + owner, degree)
                if count:
                    at = cuda.atomic.add(tail, 0, count)
                    for b in range(64):
                        if (mine >> uint64(b)) & _ONE != _ZERO:
                            queue[at] = vid(i * 64 + b)
                            at += 1
            if found:
                cuda.atomic.add(sums, 0, found)
                cuda.atomic.add(sums, 1, arcs)
            cuda.syncthreads()
            if tid == 0 and sums[0]:
                cuda.atomic.add(task_rows, task, sums[0])
                cuda.atomic.add(task_rows, num_tasks + task, sums[1])
            cuda.syncthreads()  # before the next tile zeroes the sums
            t += cuda.gridDim.x

    return SimpleNamespace(**{k.py_func.__name__: launched_by_cupy(k)
                              for k in (claims_to_bits, take_reached)})


__all__ = ["owner_kernels"]
