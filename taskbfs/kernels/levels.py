"""Many small top-down levels in one compiled call: a deep graph's levels at kernel speed.

Returns
    :func:`small_top_down_levels`: runs levels until one is not small, records each
    level's counts, its cycle-counter ticks (steps' start, barrier's start and end) and
    each step's counts, and the accepted ``(vertex, parent, level)`` triples.
Approach
    A level of a path or a mesh has a handful of frontier vertices: its kernels take a
    microsecond, and the level loop's host work per level (a step per task, the barrier,
    the direction rule) costs a hundred times that. This kernel is that loop, compiled:
    per level, each task's top-down step by the same kernel as
    :func:`taskbfs.kernels.cpu.top_down_step` (``top_down_step_unique`` when the step reads
    more edges than the bitmap has words), counting what each step reports; then the barrier
    exactly as :func:`taskbfs.kernels.level_tasks.top_down_level` keeps candidates (owner
    by owner, steps in task order, first unvisited occurrence wins); then Beamer's rule
    (:func:`taskbfs.kernels.direction.switch_direction`, top-down side). So its levels,
    frontiers and counts are the ones the level loop would make.
Encoding
    The graph as per-task slices (numba typed lists of the local ``indptr`` and the
    ``indices``), task ranges ``bounds`` (T + 1), bitmaps as in :mod:`taskbfs.kernels.bitmap`.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from taskbfs.kernels.bitmap import test_and_set
from taskbfs.kernels.cpu import expand_top_down, frontier_edge_count

#: Status codes: why :func:`small_top_down_levels` stopped.
DONE = 0  # the frontier is empty: the search is over
NOT_SMALL = 1  # the next level has more frontier edges than the bound
BOTTOM_UP_NEXT = 2  # Beamer's rule turns the next level bottom-up
FULL = 3  # the output buffers are full


#: x86's time-stamp counter is readable from user code; elsewhere (AArch64's cycle
#: counter may trap outside the kernel) the levels get their call's span.
_HAS_COUNTER = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


@intrinsic
def _ticks(typingctx):
    """The CPU's cycle counter (``llvm.readcyclecounter``; 0 where it is not read): a few
    nanoseconds a read, so each compiled level can say when it ran. The caller turns
    ticks into seconds with the call's wall-clock span (:func:`ticks_to_times`)."""

    def codegen(context, builder, signature, args):
        if not _HAS_COUNTER:
            return context.get_constant(types.int64, 0)
        counter = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter")
        return builder.call(counter, [])

    return types.int64(), codegen


def ticks_to_times(ticks: np.ndarray, clock: np.ndarray, called: float, returned: float):
    """``ticks`` (any shape) as ``time.time()`` seconds: the call's entry and exit ticks
    (``clock``) are its wall-clock ``called`` and ``returned``, and ticks between them are
    placed in proportion; every tick is ``called`` where the counter did not move."""
    span = int(clock[1]) - int(clock[0])
    if span <= 0:
        return np.full(ticks.shape, called)
    return called + (ticks - clock[0]) * ((returned - called) / span)


@njit(nogil=True, cache=True)
def small_top_down_levels(indptrs, indices_list, bounds, degrees, visited, frontier, offsets,
                          unvisited, state, max_edges, cpu_max, auto, alpha, level_stats,
                          level_ticks, step_stats, pairs, limits, clock):
    """Run small top-down levels from the frontier given until one is not small.

    Parameters
    ----------
    indptrs, indices_list : numba.typed.List of ndarray
        Task t's slice: local offsets (int64) and global neighbour ids.
    bounds : ndarray of int64
        T + 1 task ranges.
    degrees : ndarray of int64
        Out-degree of every vertex.
    visited : ndarray of uint64
        The visited bitmap, updated in place.
    frontier : ndarray of int64
        At least ``n`` long; its first ``offsets[T]`` entries are the current frontier,
        grouped by owning task; replaced by each next frontier in place.
    offsets : ndarray of int64
        T + 1 offsets into ``frontier``, updated in place.
    unvisited : ndarray of int64
        Per task, its unvisited vertices; updated in place.
    state : ndarray of int64
        ``[level, frontier_size, frontier_edges, unexplored_edges, previous_size]`` of the
        current frontier; updated in place to the frontier the call stops at.
    max_edges : int
        A level is small while its frontier has at most this many edges...
    cpu_max : ndarray of float64
        ...and every task's frontier at most ``cpu_max[t]`` vertices (the largest step
        the placement policy runs on the CPU).
    auto : bool
        Beamer's rule decides each next direction (else top-down throughout).
    alpha : float
        The rule's α (its top-down side: go bottom-up when the frontier grows and its
        edges exceed the unexplored ones / α).
    level_stats : ndarray of int64, shape (L, 4)
        Receives per level run: ``[frontier_size, frontier_edges, unexplored_edges,
        reached]`` of the frontier it made.
    level_ticks : ndarray of int64, shape (L, 3)
        Receives per level run: the cycle counter when its steps start, when its barrier
        starts and when it ends.
    step_stats : ndarray of int64, shape (S, 5)
        Receives per step run: ``[level, task, size, edges_examined, found]``.
    pairs : ndarray of int64, shape (P, 3)
        Receives each accepted ``(vertex, parent, distance)``.
    limits : ndarray of int64
        ``[levels, steps, pairs]`` written so far (in and out: the call appends).
    clock : ndarray of int64, shape (2,)
        Receives the cycle counter at the call's entry and exit.

    Returns
    -------
    int
        Why it stopped: ``DONE``, ``NOT_SMALL``, ``BOTTOM_UP_NEXT`` or ``FULL``.
    """
    clock[0] = _ticks()
    status = _levels(indptrs, indices_list, bounds, degrees, visited, frontier, offsets,
                     unvisited, state, max_edges, cpu_max, auto, alpha, level_stats, level_ticks,
                     step_stats, pairs, limits)
    clock[1] = _ticks()
    return status


@njit(nogil=True, cache=True)
def _levels(indptrs, indices_list, bounds, degrees, visited, frontier, offsets, unvisited,
            state, max_edges, cpu_max, auto, alpha, level_stats, level_ticks, step_stats, pairs,
            limits):
    num_tasks = bounds.size - 1
    n = degrees.size
    words = visited.size
    cand_v = np.empty(max_edges, dtype=np.int64)
    cand_u = np.empty(max_edges, dtype=np.int64)
    cand_owner = np.empty(max_edges, dtype=np.int64)
    order = np.empty(max_edges, dtype=np.int64)
    counts = np.zeros(num_tasks, dtype=np.int64)
    task_edges = np.zeros(num_tasks, dtype=np.int64)
    next_frontier = np.empty(max_edges, dtype=np.int64)
    seen = np.zeros(0, dtype=np.uint64)  # a unique step's own reports (made when one runs)
    while True:
        if state[1] == 0:
            return 0
        if state[2] > max_edges:
            return 1
        for t in range(num_tasks):  # a step with work that the policy puts on the GPU
            if offsets[t + 1] > offsets[t] and offsets[t + 1] - offsets[t] > cpu_max[t]:
                return 1
        nsteps = limits[1]
        if (limits[0] >= level_stats.shape[0]
                or nsteps + min(num_tasks, state[1]) > step_stats.shape[0]
                or limits[2] + state[2] > pairs.shape[0]):
            return 3
        level = state[0]
        started = _ticks()
        # the steps, task by task, each reporting the unvisited neighbours of its frontier
        ncand = 0
        for t in range(num_tasks):
            first, last = offsets[t], offsets[t + 1]
            if last == first:
                continue
            indptr = indptrs[t]
            lo = bounds[t]
            mine = frontier[first:last]
            size = frontier_edge_count(indptr, lo, mine)
            unique = size > words  # as the level loop's CPU step decides (search/steps.py)
            if unique:
                if seen.size == 0:
                    seen = np.zeros(words, dtype=np.uint64)
                else:
                    seen[:] = 0
            found, _edges = expand_top_down(indptr, indices_list[t], lo, mine, visited, seen, unique,
                                      cand_v[ncand:], cand_u[ncand:])
            ncand += found
            step_stats[nsteps, 0] = level
            step_stats[nsteps, 1] = t
            step_stats[nsteps, 2] = last - first
            step_stats[nsteps, 3] = size
            step_stats[nsteps, 4] = found
            nsteps += 1
        limits[1] = nsteps
        merging = _ticks()
        # the barrier: owner by owner, steps in task order, first unvisited one wins (a
        # counting sort by owner, stable: it compiles in a fraction of argsort's time)
        counts[:] = 0
        for i in range(ncand):
            owner = np.searchsorted(bounds, cand_v[i], side="right") - 1
            cand_owner[i] = owner
            counts[owner] += 1
        at = 0
        for t in range(num_tasks):
            at, counts[t] = at + counts[t], at
        for i in range(ncand):
            owner = cand_owner[i]
            order[counts[owner]] = i
            counts[owner] += 1
        counts[:] = 0
        task_edges[:] = 0
        n_new = 0
        npairs = limits[2]
        for k in range(ncand):
            i = order[k]
            v = cand_v[i]
            if test_and_set(visited, v):
                continue
            owner = cand_owner[i]
            next_frontier[n_new] = v
            n_new += 1
            counts[owner] += 1
            task_edges[owner] += degrees[v]
            pairs[npairs, 0] = v
            pairs[npairs, 1] = cand_u[i]
            pairs[npairs, 2] = level + 1
            npairs += 1
        limits[2] = npairs
        frontier[:n_new] = next_frontier[:n_new]
        offsets[0] = 0
        edges = 0
        reached = 0
        for t in range(num_tasks):
            offsets[t + 1] = offsets[t] + counts[t]
            unvisited[t] -= counts[t]
            edges += task_edges[t]
            reached += unvisited[t]
        unexplored = state[3] - edges
        nlev = limits[0]
        level_stats[nlev, 0] = n_new
        level_stats[nlev, 1] = edges
        level_stats[nlev, 2] = unexplored
        level_stats[nlev, 3] = n - reached
        level_ticks[nlev, 0] = started
        level_ticks[nlev, 1] = merging
        level_ticks[nlev, 2] = _ticks()
        limits[0] = nlev + 1
        previous = state[1]
        state[0] = level + 1
        state[1] = n_new
        state[2] = edges
        state[3] = unexplored
        state[4] = previous
        if auto and n_new > previous and edges > unexplored / alpha:
            return 2
