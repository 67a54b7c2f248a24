"""A whole level, its T step tasks and its barrier, run by a few threads with no Python between tasks.

Returns
    :func:`top_down_level` and :func:`bottom_up_level` fill the next frontier (vertices
    grouped by owning task, T + 1 offsets, and its bitmap), the visited set, the accepted
    ``(vertex, parent)`` pairs and, per step task, ``[start_ns, stop_ns, slot, edges
    examined, found]``.
Approach
    Each of P threads calls the same function with its own ``slot``. A phase's pieces of
    work (a step task, an owner's share of the barrier, an owner's copy) are claimed one
    at a time from an atomic counter (OmpSs's idle threads taking ready tasks): a claim
    costs nanoseconds, so T can be far above P for load balance. The thread that finishes
    a phase's last piece does its small serial part (prefix sums over T) and opens the
    next phase; the others wait for it. A thread that comes late finds nothing left to
    claim, so the level never waits for a thread to start. Top-down: steps exactly as
    :func:`taskbfs.kernels.cpu.top_down_step` (``_unique`` when a step reads more edges
    than the bitmap has words), each bucketing its candidates by owner as
    :func:`taskbfs.kernels.merge.bucket_by_owner`; then each owner's candidates counted
    (owners claimed like steps: no serial work over T x S); then the barrier owner by
    owner (steps in task order, the first unvisited occurrence of each candidate wins: the
    same frontier and parents as a serial barrier); then
    each owner's accepted pairs copied to their place. Bottom-up: steps as
    :func:`taskbfs.kernels.cpu.bottom_up_step_words`, each setting its discoveries in the
    next frontier's bitmap; then the copies, which also set them visited.
Encoding
    As :mod:`taskbfs.kernels.levels` (per-task slices in numba typed lists, bitmaps as in
    :mod:`taskbfs.kernels.bitmap`). ``sync`` holds the counters (see the constants).
    Neighbouring owners share a bitmap word at their boundary: bits are set with
    :func:`~taskbfs.kernels.atomics.fetch_or`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from taskbfs.kernels.atomics import fetch_add, fetch_or, load_acquire, wall_ns, yield_cpu
from taskbfs.kernels.cpu import bottom_up_step_words, expand_top_down
from taskbfs.kernels.merge import bucket_by_owner

#: Entries of ``sync``: the open phase, then a claim counter and a done counter per phase,
#: each in its own cache line (8 int64), so that waiting threads do not slow the claims.
_LINE = 8
_PHASE = 0
#: The most phases a level (or the result's assembly) has.
MAX_PHASES = 4
SYNC_SIZE = (1 + 2 * MAX_PHASES) * _LINE
#: Columns of ``stats`` (one row per step task, written by the thread that ran it; a row is
#: the size of a cache line, so that threads finishing steps side by side seldom write one).
START, STOP, SLOT, EDGES, FOUND = range(5)
STATS_WIDTH = _LINE


@njit(nogil=True, cache=True, inline="always")
def claim(sync, phase):
    """The next piece of ``phase`` (0, 1, ...) for this thread to run."""
    return fetch_add(sync, (1 + 2 * phase) * _LINE, 1)


@njit(nogil=True, cache=True, inline="always")
def finished(sync, phase, pieces):
    """Count a finished piece of ``phase``; whether it was the phase's last."""
    return fetch_add(sync, (2 + 2 * phase) * _LINE, 1) == pieces - 1


@njit(nogil=True, cache=True, inline="always")
def open_next(sync):
    """Open the next phase (called by the thread that finished a phase's last piece)."""
    fetch_add(sync, _PHASE, 1)


@njit(nogil=True, cache=True)
def wait_for(sync, phase):
    """Wait until ``phase`` is open (the last piece of the phase before it is done)."""
    spins = 0
    while load_acquire(sync, _PHASE) < phase:
        spins += 1
        if spins > 256:
            yield_cpu()


@njit(nogil=True, cache=True)
def _prefix(counts, out):
    out[0] = 0
    for i in range(counts.size):
        out[i + 1] = out[i] + counts[i]


@njit(nogil=True, cache=True, inline="always")
def _next_step(sync, order):
    """The row of the next step task this thread runs (largest first), -1 when none is left."""
    k = claim(sync, 0)
    return order[k] if k < order.size else -1


@njit(nogil=True, cache=True, inline="always")
def _step_done(sync, stats, s, start, slot, edges, found):
    """Record step row ``s`` in ``stats``; whether it was the level's last step."""
    stats[s, START] = start
    stats[s, STOP] = wall_ns()
    stats[s, SLOT] = slot
    stats[s, EDGES] = edges
    stats[s, FOUND] = found
    return finished(sync, 0, stats.shape[0])


@njit(nogil=True, cache=True)
def top_down_level(slot, sync, order, steps, indptrs, indices_list, bounds, frontier, offsets,
                   visited, degrees, seen, out_start, cand_v, cand_u, buck_v, buck_u, buck_off,
                   cap_start, counts, task_edges, new_bits, next_v, next_u, next_off, stats):
    """This thread's share of a top-down level (see the module docstring).

    Parameters
    ----------
    slot : int
        This thread's number (0 .. P-1): its row of ``seen``.
    sync : ndarray of int64
        ``SYNC_SIZE`` zeros, shared by the level's threads.
    order : ndarray of int64
        The S step tasks' rows, in the order they are claimed (largest first).
    steps : ndarray of int64
        The tasks with work, in task order (row s is task ``steps[s]``).
    indptrs, indices_list : numba.typed.List of ndarray
        Task t's slice (local offsets, global neighbour ids).
    bounds, frontier, offsets :
        The task ranges (T + 1) and the frontier grouped by owner with its T + 1 offsets.
    visited : ndarray of uint64
        The visited set: read by the steps, updated by the barrier.
    degrees : ndarray of int64
    seen : ndarray of uint64, shape (P, words)
        Zeroed per-thread bitmaps for the steps that report each vertex once (left zeroed).
    out_start : ndarray of int64
        S + 1 offsets: row s's candidates go to ``[out_start[s], out_start[s + 1])``
        (its frontier's edges).
    cand_v, cand_u, buck_v, buck_u : ndarray
        ``out_start[S]`` entries each: the steps' candidates, and the same bucketed by
        owner (``buck_*`` may be ``cand_*`` when T is 1: no bucketing).
    buck_off : ndarray of int64, shape (S, T + 1)
        Receives row s's bucket offsets (absolute).
    cap_start : ndarray of int64
        T + 1: receives where each owner's accepted pairs go first (in ``cand_*``).
    counts, task_edges : ndarray of int64
        T: receive each owner's accepted vertices and the edges leaving them
        (``counts`` first holds each owner's candidates).
    new_bits : ndarray of uint64
        Zeroed: receives the accepted vertices as a bitmap.
    next_v, next_u : ndarray of int64
        Receive the accepted pairs grouped by owner (the next frontier and its parents).
    next_off : ndarray of int64
        T + 1: receives the offsets of ``next_*``.
    stats : ndarray of int64, shape (S, STATS_WIDTH)
        Receives per step row ``[start_ns, stop_ns, slot, edges examined, found]`` (the
        row's other entries are padding).
    """
    num_tasks = bounds.size - 1
    words = visited.size
    my_seen = seen[slot]
    # phase 0: the steps
    while True:
        s = _next_step(sync, order)
        if s < 0:
            break
        t = steps[s]
        start = wall_ns()
        base = out_start[s]
        unique = out_start[s + 1] - base > words  # as the level loop's CPU step decides
        found, edges = expand_top_down(indptrs[t], indices_list[t], bounds[t],
                                 frontier[offsets[t]:offsets[t + 1]], visited, my_seen, unique,
                                 cand_v[base:], cand_u[base:])
        if unique:
            for i in range(base, base + found):
                my_seen[cand_v[i] >> 6] = 0
        row = buck_off[s]
        if num_tasks == 1:  # one owner (search.state.one_range): one bucket, no copy
            row[0] = base
            row[1] = base + found
        else:
            bucket_by_owner(cand_v[base:base + found], cand_u[base:base + found], bounds,
                            buck_v[base:base + found], buck_u[base:base + found], row)
            for o in range(num_tasks + 1):
                row[o] += base
        if _step_done(sync, stats, s, start, slot, edges, found):
            open_next(sync)
    wait_for(sync, 1)
    # phase 1: each owner's candidates (where its accepted pairs go: a prefix sum over T)
    while True:
        o = claim(sync, 1)
        if o >= num_tasks:
            break
        cap = 0
        for r in range(buck_off.shape[0]):
            cap += buck_off[r, o + 1] - buck_off[r, o]
        counts[o] = cap
        if finished(sync, 1, num_tasks):
            _prefix(counts, cap_start)
            open_next(sync)
    wait_for(sync, 2)
    # phase 2: the barrier, owner by owner (its accepted pairs go where its candidates were)
    while True:
        o = claim(sync, 2)
        if o >= num_tasks:
            break
        counts[o], task_edges[o] = _accept(o, buck_off, buck_v, buck_u, visited, new_bits,
                                           degrees, cand_v, cand_u, cap_start[o])
        if finished(sync, 2, num_tasks):
            _prefix(counts, next_off)
            open_next(sync)
    wait_for(sync, 3)
    _copy_phase(sync, 3, num_tasks, cap_start, counts, cand_v, cand_u, next_off, next_v, next_u,
                visited, False)


@njit(nogil=True, cache=True)
def _accept(o, buck_off, buck_v, buck_u, visited, new_bits, degrees, out_v, out_u, pos):
    """Owner ``o``'s share of the barrier: its candidates in step order, the first unvisited
    occurrence of each accepted (visited and ``new_bits`` set; the pair to ``out_*[pos:]``);
    ``(accepted, edges leaving them)``."""
    first = pos
    edges = 0
    for r in range(buck_off.shape[0]):
        for i in range(buck_off[r, o], buck_off[r, o + 1]):
            v = buck_v[i]
            w = v >> 6
            bit = np.uint64(1) << np.uint64(v & 63)
            if visited[w] & bit:
                continue
            fetch_or(visited, w, bit)
            fetch_or(new_bits, w, bit)
            out_v[pos] = v
            out_u[pos] = buck_u[i]
            pos += 1
            edges += degrees[v]
    return pos - first, edges


@njit(nogil=True, cache=True)
def _copy_phase(sync, phase, pieces, first, counts, src_v, src_u, next_off, next_v, next_u,
                visited, mark):
    """Owner by owner, its ``counts[o]`` pairs from ``src_*[first[o]:]`` to ``next_*[next_off[o]:]``
    (and set visited, when ``mark``)."""
    while True:
        o = claim(sync, phase)
        if o >= pieces:
            break
        src = first[o]
        dst = next_off[o]
        for i in range(counts[o]):
            v = src_v[src + i]
            next_v[dst + i] = v
            next_u[dst + i] = src_u[src + i]
            if mark:
                fetch_or(visited, v >> 6, np.uint64(1) << np.uint64(v & 63))
        if finished(sync, phase, pieces):
            open_next(sync)


@njit(nogil=True, cache=True)
def bottom_up_level(slot, sync, order, steps, indptrs, indices_list, searchables, out_indptrs,
                    bounds, visited, frontier_bits, out_v, out_u, counts, task_edges, new_bits,
                    next_v, next_u, next_off, stats):
    """This thread's share of a bottom-up level (see the module docstring).

    Parameters
    ----------
    slot, sync, order, steps, bounds, counts, task_edges, new_bits, next_v, next_u, next_off,
    stats :
        As for :func:`top_down_level` (``counts`` and ``task_edges`` zeroed).
    indptrs, indices_list : numba.typed.List of ndarray
        Task t's slice of in-neighbours (the transpose for a directed graph).
    searchables : numba.typed.List of ndarray of uint64
        Task t's :func:`~taskbfs.kernels.cpu.searchable_bits`.
    out_indptrs : numba.typed.List of ndarray of int64
        Task t's local out-adjacency offsets (its out-degrees, for the switch rule).
    visited, frontier_bits : ndarray of uint64
        The visited set (read by the steps, updated by the copies) and the frontier.
    out_v, out_u : ndarray
        n entries each: task t's discoveries go to ``[bounds[t], bounds[t + 1])``.
    """
    num_tasks = bounds.size - 1
    while True:
        s = _next_step(sync, order)
        if s < 0:
            break
        t = steps[s]
        start = wall_ns()
        lo = bounds[t]
        hi = bounds[t + 1]
        found, edges = bottom_up_step_words(indptrs[t], indices_list[t], lo, hi, searchables[t],
                                            visited, frontier_bits, out_v[lo:hi], out_u[lo:hi])
        out_indptr = out_indptrs[t]
        leaving = 0
        for i in range(lo, lo + found):
            v = out_v[i]
            fetch_or(new_bits, v >> 6, np.uint64(1) << np.uint64(v & 63))
            leaving += out_indptr[v - lo + 1] - out_indptr[v - lo]
        counts[t] = found
        task_edges[t] = leaving
        if _step_done(sync, stats, s, start, slot, edges, found):
            _prefix(counts, next_off)
            open_next(sync)
    wait_for(sync, 1)
    _copy_phase(sync, 1, num_tasks, bounds, counts, out_v, out_u, next_off, next_v, next_u,
                visited, True)
