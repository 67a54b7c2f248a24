"""Level-barrier kernels: what a step hands the barrier, and what the barrier does with it.

Returns
    Per step: top-down candidates bucketed by owning task (:func:`bucket_by_owner`). Per
    owner barrier: the first unvisited occurrence of each vertex of its pieces accepted
    into its ranges' state (:func:`accept_into_range` and its shares). At the end of a
    search: the parents and distances of a vertex range from the steps' records
    (:func:`record_pairs`).
Approach
    The paper's barrier (Algorithm 2), cut down to what must be serial. Each task owns
    the BFS state of its vertex range (DESIGN.md): a bottom-up step discovers only its
    own vertices, each once; a top-down step may discover any vertex, several times, so
    it buckets its candidates by owner itself (in parallel with the other steps) and the
    barrier keeps the first of each, owner by owner. Every vertex named at level L
    (top-down candidates are filtered by the visited set at the level's start) is at
    distance L + 1 and any of its named parents is valid. (The one-task search's levels
    run these rules in compiled code over all tasks at once: :mod:`taskbfs.kernels.level_tasks`.)
Encoding
    ``bounds`` (int64[T+1]) are the task ranges; bitmaps are uint64 words (vertex ``v`` is
    bit ``v & 63`` of word ``v >> 6``); task ``t``'s words are ``[lo >> 6, (hi - 1 >> 6) + 1)``
    (neighbouring tasks may share a boundary word, hence OR, never assignment).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from taskbfs.kernels.atomics import fetch_or


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


def word_span(lo: int, hi: int) -> tuple[int, int]:
    """The words ``[first, stop)`` of a bitmap that hold vertices ``[lo, hi)`` (hi > lo)."""
    return lo >> 6, ((hi - 1) >> 6) + 1


@njit(nogil=True, cache=True)
def bucket_by_owner(vertices, parents, bounds, out_vertices, out_parents, out_offsets):
    """Counting sort of a top-down step's candidate pairs by the task owning the vertex.

    Parameters
    ----------
    vertices, parents : ndarray of int
        The step's candidates (duplicates allowed), in the order found.
    bounds : ndarray of int64
        Task ranges, T + 1 entries.
    out_vertices, out_parents : ndarray
        Same length as ``vertices``: receive the pairs, owner by owner (stable).
    out_offsets : ndarray of int64
        T + 1 entries; owner t's pairs are ``out_*[out_offsets[t]:out_offsets[t + 1]]``.
    """
    owners = _count_owners(vertices, bounds, out_offsets)
    fill = out_offsets[:-1].copy()
    for i in range(vertices.size):
        t = owners[i]
        out_vertices[fill[t]] = vertices[i]
        out_parents[fill[t]] = parents[i]
        fill[t] += 1


@njit(nogil=True, cache=True)
def _count_owners(vertices, bounds, out_offsets):
    """Each vertex's owner (returned), and the owners' start offsets (``out_offsets``, T + 1)."""
    num_tasks = bounds.size - 1
    owners = np.empty(vertices.size, dtype=np.int32)
    for t in range(num_tasks + 1):
        out_offsets[t] = 0
    for i in range(vertices.size):
        t = _owner(bounds, vertices[i])
        owners[i] = t
        out_offsets[t + 1] += 1
    for t in range(num_tasks):
        out_offsets[t + 1] += out_offsets[t]
    return owners


@njit(nogil=True, cache=True)
def frontier_bitmap(frontier, bits):
    """Clear ``bits`` and set exactly the vertices of ``frontier``."""
    for i in range(bits.size):
        bits[i] = 0
    for i in range(frontier.size):
        v = frontier[i]
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


@njit(nogil=True, cache=True)
def set_bits_share(vertices, begin, end, bits):
    """Set the bits of ``vertices[begin:end]`` in ``bits``, atomically: several threads may
    set the bits of disjoint shares of one frontier at once (``frontier_bitmap`` in
    parallel, once ``bits`` is cleared)."""
    for i in range(begin, end):
        v = vertices[i]
        bit = np.uint64(1) << np.uint64(v & 63)
        if not bits[v >> 6] & bit:
            fetch_or(bits, v >> 6, bit)


@njit(nogil=True, cache=True)
def record_pairs(vertices, parents_of, start, stop, lo, hi, distance, parents, distances):
    """Write the pairs ``(vertices[i], parents_of[i])``, ``start <= i < stop``, whose vertex
    lies in ``[lo, hi)`` into that range's arrays (``parents`` / ``distances``, indexed
    ``v - lo``); pairs outside the range are skipped.

    A vertex named twice (top-down duplicates) keeps the last parent: all of them are
    valid, being at ``distance - 1``.
    """
    for i in range(start, stop):
        v = vertices[i]
        if lo <= v < hi:
            parents[v - lo] = parents_of[i]
            distances[v - lo] = distance


@njit(nogil=True, cache=True)
def record_pairs_at(vertices, parents_of, depths, lo, hi, parents, distances):
    """:func:`record_pairs` for pairs of many levels: pair ``i``'s vertex is at distance
    ``depths[i]``."""
    for i in range(vertices.size):
        v = vertices[i]
        if lo <= v < hi:
            parents[v - lo] = parents_of[i]
            distances[v - lo] = depths[i]


@njit(nogil=True, cache=True)
def accept_into_range(vertices, parents_of, start, stop, lo, words, first_word, offsets, depth,
                      distances, parents, out_frontier, n_out):
    """Keep the first unvisited of the pairs ``start <= i < stop`` (vertices of one range
    ``[lo, hi)``), writing its state: the range owner's barrier (:mod:`taskbfs.search.owners`).

    Parameters
    ----------
    vertices, parents_of : ndarray of int
        Candidate pairs (duplicates allowed); those read all lie in ``[lo, hi)``.
    start, stop : int
    lo : int
        First vertex of the range.
    words : ndarray of uint64
        The range's visited words (``word_span``), updated in place.
    first_word : int
        Index of ``words[0]`` in a whole-graph bitmap.
    offsets : ndarray of int
        The range's out-adjacency offsets (``hi - lo + 1`` of them): vertex ``v``'s
        out-degree is ``offsets[v - lo + 1] - offsets[v - lo]``.
    depth : int
        Distance written for the accepted vertices.
    distances, parents : ndarray
        The range's result arrays (indexed ``v - lo``), written for accepted vertices.
    out_frontier : ndarray of int64
        Receives the accepted vertices from ``n_out`` on.
    n_out : int

    Returns
    -------
    (int, int)
        ``n_out`` after the accepted vertices, and the edges leaving them.
    """
    edges = 0
    for i in range(start, stop):
        v = vertices[i]
        w = (v >> 6) - first_word
        bit = np.uint64(1) << np.uint64(v & 63)
        if words[w] & bit:
            continue
        words[w] |= bit
        distances[v - lo] = depth
        parents[v - lo] = parents_of[i]
        out_frontier[n_out] = v
        n_out += 1
        edges += offsets[v - lo + 1] - offsets[v - lo]
    return n_out, edges


@njit(nogil=True, cache=True)
def accept_spans_into_range(vertices, parents_of, starts, stops, lo, words, first_word, offsets,
                            depth, distances, parents, out_frontier):
    """:func:`accept_into_range` over the spans ``starts[j] <= i < stops[j]`` in order (one
    range's pairs from each step of a level, one after another); returns ``(accepted,
    edges leaving them)``, the accepted vertices in ``out_frontier[:accepted]``."""
    n_out, edges = 0, 0
    for j in range(starts.size):
        if stops[j] > starts[j]:
            n_out, e = accept_into_range(vertices, parents_of, starts[j], stops[j], lo, words,
                                         first_word, offsets, depth, distances, parents,
                                         out_frontier, n_out)
            edges += e
    return n_out, edges


@njit(nogil=True, cache=True)
def accept_share(vertices, parents_of, starts, stops, lo, words, first_word, offsets, depth,
                 distances, parents, out_frontier, begin, end):
    """:func:`accept_spans_into_range` over the pairs ``begin <= k < end`` of the spans
    laid one after another, run by several threads at once on disjoint shares: a vertex's
    visited bit is set atomically, so exactly one thread accepts it (which of its
    candidate parents wins is then the first to get there: any is valid). The accepted
    vertices are written from ``out_frontier[begin]`` on; returns ``(accepted, edges
    leaving them)``."""
    n_out, edges, at = begin, 0, 0
    for j in range(starts.size):
        size = stops[j] - starts[j]
        for k in range(max(begin, at), min(end, at + size)):
            i = starts[j] + k - at
            v = vertices[i]
            w = (v >> 6) - first_word
            bit = np.uint64(1) << np.uint64(v & 63)
            if words[w] & bit or fetch_or(words, w, bit) & bit:
                continue
            distances[v - lo] = depth
            parents[v - lo] = parents_of[i]
            out_frontier[n_out] = v
            n_out += 1
            edges += offsets[v - lo + 1] - offsets[v - lo]
        at += size
    return n_out - begin, edges
