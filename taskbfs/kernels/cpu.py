"""CPU task kernels: one BFS task's step over its vertex range (numba, nogil).

Returns
    ``(n_found, edges_examined)`` — what the level barrier and the direction policy need.
Approach
    Algorithm 4 of Munguía, Bader & Ayguadé (HiPC 2012) for top-down: the task walks the
    adjacency of its frontier vertices and reports every neighbour not yet visited.
    Bottom-up after Beamer et al. (as used in the TOTEM paper, Sec. 2.2): the task walks
    its own unvisited vertices and stops at the first neighbour in the frontier.
Encoding
    A task owns vertices ``[lo, hi)``; its slice of the graph is ``indptr`` (local,
    ``hi - lo + 1`` entries starting at 0) and ``indices`` (global neighbour ids).
    ``visited_bits`` / ``frontier_bits`` are uint64 bitmaps over all vertices (see
    :mod:`taskbfs.kernels.bitmap`). Discoveries are written as pairs
    ``(out_vertices[i], out_parents[i])`` into preallocated buffers; the task never writes
    shared state, the barrier merges.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from taskbfs.kernels.bitmap import test_and_set, test_bit


@njit(nogil=True, cache=True)
def frontier_edge_count(indptr, lo, frontier):
    """Sum of the degrees of ``frontier`` (global ids of the task's own vertices).

    This is the buffer size a top-down step needs, and the ``m_f`` of the
    direction-optimizing switch rule.
    """
    total = 0
    for i in range(frontier.size):
        local = frontier[i] - lo
        total += indptr[local + 1] - indptr[local]
    return total


@njit(nogil=True, cache=True)
def top_down_step(indptr, indices, lo, frontier, visited_bits, out_vertices, out_parents):
    """Top-down step of one task: report the unvisited neighbours of its frontier.

    Parameters
    ----------
    indptr, indices : ndarray
        The task's slice of the graph (local offsets, global neighbour ids).
    lo : int
        First vertex of the task's range.
    frontier : ndarray of int
        Global ids of the task's vertices in the current frontier.
    visited_bits : ndarray of uint64
        Read-only snapshot of the visited set at the start of the level.
    out_vertices, out_parents : ndarray of int64
        Output buffers of at least ``frontier_edge_count(indptr, lo, frontier)`` entries.

    Returns
    -------
    n_found : int
        Number of pairs written (a vertex may appear more than once).
    edges_examined : int
        Number of adjacency entries read.
    """
    return expand_top_down(indptr, indices, lo, frontier, visited_bits, visited_bits, False,
                     out_vertices, out_parents)


@njit(nogil=True, cache=True)
def top_down_step_unique(indptr, indices, lo, frontier, visited_bits, seen_bits, out_vertices,
                         out_parents):
    """:func:`top_down_step` reporting each vertex at most once (the CPU twin of the GPU
    step's vertex mask): ``seen_bits`` (a zeroed bitmap over all vertices, updated here)
    marks the vertices already reported by this step. Same arguments and returns otherwise;
    ``n_found`` counts distinct vertices.
    """
    return expand_top_down(indptr, indices, lo, frontier, visited_bits, seen_bits, True,
                     out_vertices, out_parents)


@njit(nogil=True, cache=True)
def expand_top_down(indptr, indices, lo, frontier, visited_bits, seen_bits, unique,
                    out_vertices, out_parents):
    """A top-down step's expansion: the frontier's unvisited out-neighbours (each once when
    ``unique``, by ``seen_bits``) and their parents into the ``out_*`` arrays; returns
    ``(found, edges examined)``."""
    n_found = 0
    edges = 0
    for i in range(frontier.size):
        u = frontier[i]
        local = u - lo
        start = indptr[local]
        stop = indptr[local + 1]
        edges += stop - start
        for e in range(start, stop):
            v = indices[e]
            if test_bit(visited_bits, v):
                continue
            if unique and test_and_set(seen_bits, v):
                continue
            out_vertices[n_found] = v
            out_parents[n_found] = u
            n_found += 1
    return n_found, edges


@njit(nogil=True, cache=True, inline="always")
def _look_for_parent(indptr, indices, lo, v, frontier_bits, out_vertices, out_parents, n_found):
    """Scan vertex ``v``'s adjacency for its first neighbour in the frontier and, if there
    is one, write the pair at ``n_found``. Returns ``(pairs written so far, entries read)``."""
    edges = 0
    for e in range(indptr[v - lo], indptr[v - lo + 1]):
        edges += 1
        u = indices[e]
        if test_bit(frontier_bits, u):
            out_vertices[n_found] = v
            out_parents[n_found] = u
            return n_found + 1, edges
    return n_found, edges


@njit(nogil=True, cache=True)
def bottom_up_step(indptr, indices, lo, hi, visited_bits, frontier_bits, out_vertices, out_parents):
    """Bottom-up step of one task: find a frontier parent for each unvisited own vertex.

    Parameters
    ----------
    indptr, indices : ndarray
        The task's slice of the graph; ``indices`` must list in-neighbours (the transpose
        of a directed graph).
    lo, hi : int
        The task's vertex range.
    visited_bits, frontier_bits : ndarray of uint64
        Read-only bitmaps of the visited set and of the current frontier.
    out_vertices, out_parents : ndarray of int64
        Output buffers of at least ``hi - lo`` entries.

    Returns
    -------
    n_found : int
        Number of vertices discovered (each once).
    edges_examined : int
        Number of adjacency entries read before each vertex found its parent.
    """
    n_found = 0
    edges = 0
    for v in range(lo, hi):
        if test_bit(visited_bits, v):
            continue
        n_found, read = _look_for_parent(indptr, indices, lo, v, frontier_bits, out_vertices,
                                         out_parents, n_found)
        edges += read
    return n_found, edges


@njit(nogil=True, cache=True)
def searchable_bits(indptr, lo, hi):
    """The task's vertices that have an adjacency entry, as bitmap words ``[lo >> 6,
    ((hi - 1) >> 6) + 1)`` of the global bitmap (bits outside ``[lo, hi)`` clear): the
    only vertices a bottom-up step can ever find (see :func:`bottom_up_step_words`)."""
    first = lo >> 6
    words = np.zeros(((hi - 1) >> 6) + 1 - first, dtype=np.uint64)
    for v in range(lo, hi):
        if indptr[v - lo + 1] > indptr[v - lo]:
            words[(v >> 6) - first] |= np.uint64(1) << np.uint64(v & 63)
    return words


@njit(nogil=True, cache=True)
def bottom_up_step_words(indptr, indices, lo, hi, searchable, visited_bits, frontier_bits,
                         out_vertices, out_parents):
    """:func:`bottom_up_step` 64 vertices at a time: only the vertices that are both
    unvisited and ``searchable`` (:func:`searchable_bits` of the same slice) are looked
    at, one word of each bitmap per 64 vertices. The same discoveries, in the same order,
    and the same counts; but late bottom-up levels, where almost every vertex is visited
    or has no edge (a Kronecker graph's isolated vertices), cost a pass over words
    instead of a test per vertex (10-100x less at scale 22)."""
    n_found = 0
    edges = 0
    first = lo >> 6
    for w in range(first, first + searchable.size):
        todo = ~visited_bits[w] & searchable[w - first]
        if todo == 0:
            continue
        for b in range(64):
            if (todo >> np.uint64(b)) & np.uint64(1):
                n_found, read = _look_for_parent(indptr, indices, lo, (w << 6) + b,
                                                 frontier_bits, out_vertices, out_parents,
                                                 n_found)
                edges += read
    return n_found, edges


def allocate_outputs(size: int):
    """Two int64 output buffers (vertices, parents) of ``size`` entries."""
    size = max(int(size), 0)
    return np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)


def run_top_down(indptr, indices, lo, frontier, visited_bits):
    """Top-down step with its own buffers: ``(vertices, parents, edges_examined)``, trimmed.

    The CPU side of :func:`taskbfs.kernels.gpu.run_top_down`.
    """
    frontier = np.ascontiguousarray(frontier, dtype=np.int64)
    out_v, out_u = allocate_outputs(frontier_edge_count(indptr, lo, frontier))
    n_found, edges = top_down_step(indptr, indices, lo, frontier, visited_bits, out_v, out_u)
    return out_v[:n_found], out_u[:n_found], int(edges)


def run_bottom_up(indptr, indices, lo, hi, visited_bits, frontier_bits):
    """Bottom-up step with its own buffers: ``(vertices, parents, edges_examined)``, trimmed.

    The CPU side of :func:`taskbfs.kernels.gpu.run_bottom_up`.
    """
    out_v, out_u = allocate_outputs(hi - lo)
    n_found, edges = bottom_up_step(indptr, indices, lo, hi, visited_bits, frontier_bits, out_v, out_u)
    return out_v[:n_found], out_u[:n_found], int(edges)
