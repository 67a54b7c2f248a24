"""Level-barrier kernels: merge the tasks' discoveries into the BFS state.

Returns
    The next frontier grouped by owning task, and the counts the direction switch needs.
Approach
    The paper's barrier (Algorithm 2) after each level: a vertex discovered by several
    tasks is kept once (first come), marked visited, given its parent and level; the new
    frontier is bucketed by owner with a counting sort over the T contiguous ranges.
Encoding
    ``bounds`` (int64[T+1]) are the task ranges; ``visited_bits`` a uint64 bitmap;
    ``parents`` / ``distances`` int64 arrays over all vertices (-1 = unreached).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _owner(bounds, v):
    lo = 0
    hi = bounds.size - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if bounds[mid] <= v:
            lo = mid
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def merge_discoveries(cand_vertices, cand_parents, level, visited_bits, parents, distances,
                      bounds, degrees, out_frontier, out_offsets, out_edges):
    """Accept first-seen unvisited candidates; bucket the new frontier by owning task.

    Parameters
    ----------
    cand_vertices, cand_parents : ndarray of int
        Concatenated discoveries of every task of this level (duplicates allowed).
    level : int
        Distance of the vertices discovered at this level.
    visited_bits : ndarray of uint64
        Updated in place.
    parents, distances : ndarray of int64
        Updated in place for accepted vertices.
    bounds : ndarray of int64
        Task ranges, T + 1 entries.
    degrees : ndarray of int64
        Out-degree of every vertex (for the frontier's edge count).
    out_frontier : ndarray of int64
        Receives the new frontier grouped by owner; at least ``cand_vertices.size`` long.
    out_offsets : ndarray of int64
        T + 1 entries; task t's frontier is ``out_frontier[out_offsets[t]:out_offsets[t+1]]``.
    out_edges : ndarray of int64
        T entries: edges leaving each task's new frontier.

    Returns
    -------
    int
        Size of the new frontier.
    """
    num_tasks = bounds.size - 1
    accepted = np.empty(cand_vertices.size, dtype=np.int64)
    n_new = 0
    for i in range(cand_vertices.size):
        v = cand_vertices[i]
        word = v >> 6
        bit = np.uint64(1) << np.uint64(v & 63)
        if visited_bits[word] & bit:
            continue
        visited_bits[word] |= bit
        parents[v] = cand_parents[i]
        distances[v] = level
        accepted[n_new] = v
        n_new += 1
    counts = np.zeros(num_tasks, dtype=np.int64)
    owners = np.empty(n_new, dtype=np.int64)
    for t in range(num_tasks):
        out_edges[t] = 0
    for i in range(n_new):
        t = _owner(bounds, accepted[i])
        owners[i] = t
        counts[t] += 1
        out_edges[t] += degrees[accepted[i]]
    out_offsets[0] = 0
    for t in range(num_tasks):
        out_offsets[t + 1] = out_offsets[t] + counts[t]
    fill = out_offsets[:-1].copy()
    for i in range(n_new):
        t = owners[i]
        out_frontier[fill[t]] = accepted[i]
        fill[t] += 1
    return n_new


@njit(nogil=True, cache=True)
def frontier_bitmap(frontier, bits):
    """Clear ``bits`` and set exactly the vertices of ``frontier``."""
    for i in range(bits.size):
        bits[i] = 0
    for i in range(frontier.size):
        v = frontier[i]
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


@njit(nogil=True, cache=True)
def accept_owned(vertices, parents_of, offsets, level, visited_bits, parents, distances,
                 degrees, out_edges):
    """Record discoveries that are already unique and grouped by owning task.

    Bottom-up steps report each of their own unvisited vertices at most once, so the
    barrier needs no first-seen check and no bucketing: this only marks them visited,
    sets parent and level, and sums each task's frontier edges.

    Parameters
    ----------
    vertices, parents_of : ndarray of int
        Discoveries, task by task (task t's at ``offsets[t]:offsets[t + 1]``).
    offsets : ndarray of int64
        T + 1 offsets.
    level, visited_bits, parents, distances, degrees
        As in :func:`merge_discoveries`.
    out_edges : ndarray of int64
        T entries: edges leaving each task's new frontier.
    """
    for t in range(offsets.size - 1):
        edges = 0
        for i in range(offsets[t], offsets[t + 1]):
            v = vertices[i]
            visited_bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
            parents[v] = parents_of[i]
            distances[v] = level
            edges += degrees[v]
        out_edges[t] = edges
