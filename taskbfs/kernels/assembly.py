"""A search's distances and parents written by a few threads at once, from its steps' records.

Returns
    :func:`assemble_share` fills ``distances`` and ``parents`` over ``[first, stop)``: -1 for
    every vertex, then each recorded ``(vertex, parent)`` pair's parent and distance.
Approach
    Each of P threads calls it and claims pieces from atomic
    counters (as :mod:`taskbfs.kernels.level_tasks`): first the fill, in equal slices of
    the range; then the records, in chunks of ``chunk`` pairs. Nothing is serial and
    nothing is proportional to the task count: a vertex is named at one level only (a
    top-down step's candidates are filtered by the visited set at the level's start), so
    two writes of one vertex carry the same distance and parents that are both valid.
Encoding
    Log ``i`` is ``vertices[i]`` and ``parents_of[i]`` (int64); its pairs are at distance
    ``distance[i]``, or at ``depths[i][j]`` when ``depths[i]`` is not empty. ``chunk_start``
    (L + 1) numbers the chunks: log ``i`` has ``[chunk_start[i], chunk_start[i + 1])``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from taskbfs.kernels.level_tasks import claim, finished, open_next, wait_for


def result_dtype(num_vertices: int) -> np.dtype:
    """The dtype of a search's ``distances`` and ``parents`` and of vertex ids on the GPU:
    int32 when every vertex id and -2 fit it (fewer than 2^31 vertices; half the bytes to
    write, copy and keep), int64 beyond. The same on every path (CPU, GPU, dispatched or
    one task)."""
    return np.dtype(np.int32 if int(num_vertices) < 2**31 else np.int64)



@njit(nogil=True, cache=True)
def assemble_share(sync, first, stop, fill_pieces, vertices, parents_of, depths, distance,
                  chunk_start, chunk, distances, parents):
    """This thread's share of the result (see the module docstring).

    Parameters
    ----------
    sync : ndarray of int64
        :data:`~taskbfs.kernels.level_tasks.SYNC_SIZE` zeros, shared by the threads.
    first, stop : int
        The vertex range ``distances[0]`` and ``distances[-1]`` stand for.
    fill_pieces : int
        Slices the range is filled with -1 in.
    vertices, parents_of, depths : numba.typed.List of ndarray of int64
    distance : ndarray of int64
        Per log: the distance of its pairs (when its ``depths`` is empty).
    chunk_start : ndarray of int64
    chunk : int
        Pairs per chunk.
    distances, parents : ndarray
        ``stop - first`` entries each: receive the result.
    """
    size = stop - first
    while True:
        k = claim(sync, 0)
        if k >= fill_pieces:
            break
        lo = size * k // fill_pieces
        hi = size * (k + 1) // fill_pieces
        distances[lo:hi] = -1
        parents[lo:hi] = -1
        if finished(sync, 0, fill_pieces):
            open_next(sync)
    wait_for(sync, 1)
    logs = chunk_start.size - 1
    chunks = chunk_start[logs]
    i = 0
    while True:
        c = claim(sync, 1)
        if c >= chunks:
            break
        while chunk_start[i + 1] <= c:  # claims rise: this thread's log index only grows
            i += 1
        verts = vertices[i]
        pars = parents_of[i]
        deep = depths[i].size > 0
        level = distance[i]
        j = (c - chunk_start[i]) * chunk
        end = min(j + chunk, verts.size)
        for p in range(j, end):
            v = verts[p]
            if first <= v < stop:
                parents[v - first] = pars[p]
                distances[v - first] = depths[i][p] if deep else level
