"""The level barrier on the host: the steps' discoveries accepted into the visited set, the next frontier and its summary.

Returns
    :func:`advance` ``(frontier, discoveries, degrees)`` → ``(next Frontier, LevelSummary)``:
    top-down candidates accepted first-occurrence owner by owner (side by side on the
    process's threads when a level has many), bottom-up discoveries folded in as bitmap
    words; :func:`next_level` makes the next frontier and its summary from the counts.
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial

import numpy as np

from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.direction import BOTTOM_UP, concat
from taskbfs.kernels.merge import (
    accept_candidates,
    accept_owner,
    frontier_bitmap,
    word_span,
)
from taskbfs.runtime import thread_pool
from taskbfs.search.state import Frontier, LevelSummary, host_threads

#: Candidates from which a barrier accepts them owner by owner on several threads (fewer
#: cost less than starting the threads).
_PARALLEL_ACCEPT_MIN = 1 << 18


def advance(frontier: Frontier, discoveries, degrees) -> tuple[Frontier, LevelSummary]:
    """The barrier's work without the message: ``(next frontier, summary)``.

    This is what :func:`barrier` runs; the level loops without a message call it directly.
    """
    start = time.time()
    bounds = frontier.bounds
    num_tasks = bounds.size - 1
    n = degrees.size
    edges_examined = np.zeros(num_tasks, dtype=np.int64)
    found = np.zeros(num_tasks, dtype=np.int64)
    for d in discoveries:
        if d.task >= 0:
            edges_examined[d.task] = d.edges_examined
            found[d.task] = d.vertices.size
    device_stats = np.array(
        [(d.task, d.h2d_bytes, d.d2h_bytes, round(d.kernel_seconds * 1e9)) for d in discoveries
         if d.task >= 0 and (d.h2d_bytes or d.d2h_bytes or d.kernel_seconds)],
        dtype=np.int64).reshape(-1, 4)
    visited = frontier.visited_bits
    if frontier.direction == BOTTOM_UP:
        new_bits, ordered, counts, task_edges = _fold_bottom_up(bounds, visited, discoveries, n)
        new_frontier = partial(concat, [d.vertices for d in ordered])  # made if needed
    else:
        new_frontier, counts, task_edges = _accept_top_down(bounds, visited, discoveries, degrees)
        new_bits = None
    return next_level(frontier, counts, task_edges, new_frontier, new_bits, n,
                      edges_examined=edges_examined, found=found, device_stats=device_stats,
                      start=start)


def next_level(frontier: Frontier, counts, task_edges, new_frontier, new_bits, num_vertices: int,
               *, edges_examined, found, start: float,
               device_stats=None) -> tuple[Frontier, LevelSummary]:
    """The end of every barrier: from what the level found, per owning task (``counts``
    vertices, ``task_edges`` edges leaving them; ``new_frontier`` grouped by owner, or a
    function that makes it; ``new_bits`` their bitmap, or None), the level's summary
    (:meth:`SwitchRule.summary`: the next direction, the end) and the next
    :class:`Frontier` (in the form that direction reads)."""
    bounds = frontier.bounds
    progress, tally = frontier.progress, frontier.tally
    unvisited = progress.unvisited_per_task - counts
    summary = tally.rule.summary(frontier.level + 1, frontier.direction, tally.frontier_size,
                                 tally.unexplored_edges, counts, task_edges, unvisited,
                                 edges_examined=edges_examined, found=found, start=start,
                                 device_stats=device_stats)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    if summary.direction == BOTTOM_UP and summary.frontier_size:
        if new_bits is None:
            new_bits = empty_bitmap(num_vertices)
            frontier_bitmap(new_frontier() if callable(new_frontier) else new_frontier, new_bits)
        # Bottom-up steps read only the bitmap: ship it alone, not the vertex lists too.
        vertices, bits, next_edges = np.empty(0, dtype=np.int64), new_bits, None
    else:
        np.cumsum(counts, out=offsets[1:])
        vertices = new_frontier() if callable(new_frontier) else new_frontier
        # back to top-down: int64 like the top-down barrier's (one compiled variant per kernel)
        vertices = vertices.astype(np.int64, copy=False)
        bits, next_edges = None, task_edges
    nxt = Frontier(summary.level, summary.direction, vertices, offsets, bits,
                   frontier.visited_bits, bounds, replace(progress, unvisited_per_task=unvisited),
                   frontier.included, task_edges=next_edges, tally=tally.after(summary))
    return nxt, summary


def _accept_top_down(bounds, visited, discoveries, degrees):
    """First unvisited occurrence of each candidate wins, owner by owner (O(pairs)); owners
    are independent, so a large level runs them on several threads (cut into pieces when
    there are fewer owners than threads)."""
    num_tasks = bounds.size - 1
    steps = [d for d in discoveries if d.vertices.size]
    candidates = concat([d.vertices for d in steps])
    offsets = np.zeros((len(steps), num_tasks + 1), dtype=np.int64)
    base = 0
    for s, d in enumerate(steps):
        offsets[s] = d.offsets + base
        base += d.vertices.size
    if candidates.size >= _PARALLEL_ACCEPT_MIN and num_tasks > 1 and host_threads() > 1:
        return _accept_by_owner(bounds, visited, candidates, offsets, degrees)
    new_frontier = np.empty(candidates.size, dtype=np.int64)
    out_offsets = np.empty(num_tasks + 1, dtype=np.int64)
    task_edges = np.empty(num_tasks, dtype=np.int64)
    n_new = accept_candidates(candidates, offsets, visited, degrees, new_frontier, out_offsets,
                              task_edges)
    return new_frontier[:n_new], np.diff(out_offsets), task_edges


def _accept_by_owner(bounds, visited, candidates, offsets, degrees):
    """:func:`_accept_top_down` with the owners spread over a thread pool (the kernel
    releases the GIL): each owner works on a copy of its visited words, ORed back after."""
    num_tasks = bounds.size - 1
    capacity = (offsets[:, 1:] - offsets[:, :-1]).sum(axis=0)  # candidates per owner
    starts = np.concatenate([[0], np.cumsum(capacity)[:-1]])
    out = np.empty(candidates.size, dtype=np.int64)
    spans = [word_span(int(bounds[t]), int(bounds[t + 1])) for t in range(num_tasks)]
    own = [visited[first:stop].copy() for first, stop in spans]

    def one(t):
        if capacity[t] == 0:
            return 0, 0
        return accept_owner(candidates, offsets, t, own[t], spans[t][0], degrees, out,
                            int(starts[t]))

    results = list(thread_pool().map(one, range(num_tasks)))
    counts = np.array([n for n, _ in results], dtype=np.int64)
    task_edges = np.array([e for _, e in results], dtype=np.int64)
    for (first, stop), words in zip(spans, own, strict=True):
        visited[first:stop] |= words
    new_frontier = concat([out[starts[t] : starts[t] + counts[t]] for t in range(num_tasks)])
    return new_frontier, counts, task_edges



def _fold_bottom_up(bounds, visited, discoveries, num_vertices):
    """OR each step's own words into the visited set and the next frontier's bitmap
    (O(n / 64): bottom-up discoveries are unique and owned by the task that found them)."""
    num_tasks = bounds.size - 1
    counts = np.zeros(num_tasks, dtype=np.int64)
    task_edges = np.zeros(num_tasks, dtype=np.int64)
    new_bits = empty_bitmap(num_vertices)
    ordered = sorted(discoveries, key=lambda d: d.task)
    for d in ordered:
        counts[d.task] = d.vertices.size
        task_edges[d.task] = d.frontier_edges
        if d.vertices.size:
            first, stop = word_span(int(bounds[d.task]), int(bounds[d.task + 1]))
            new_bits[first:stop] |= d.words
    visited |= new_bits
    return new_bits, ordered, counts, task_edges
