"""A level's T step tasks and its barrier on a CPU worker's threads, microseconds per task.

Returns
    :class:`LevelTasks`: :meth:`LevelTasks.run` takes a level's :class:`Frontier` and
    returns the next one, the level's summary and the trace rows of its steps and barrier.
Approach
    In a search run as one task on a CPU worker (:mod:`taskbfs.search.included`), every step
    runs on the CPU. Handing each of T steps to a thread pool from Python costs tens of
    microseconds per task and holds the GIL, and a serial barrier leaves the other cores
    idle: with T = 256 that is most of a level. Here up to the worker's P threads (the
    task's own and others of :func:`~taskbfs.runtime.thread_pool`; as many as the level's
    work is worth, :func:`~taskbfs.runtime.threads_for`: a small level runs in the task's
    own thread) each make one compiled call (:mod:`taskbfs.kernels.level_tasks`) that
    claims the level's steps one at a time (largest first), then the barrier's owners,
    then their copies: a task costs what its kernel costs plus a few atomic operations,
    and the barrier runs on every thread. The
    kernels are those of the level loop and its barrier keeps the same candidates, so the
    frontiers, counts and parents are the ones the level loop makes. Each step is timed
    in the compiled code and traced as an included ``bfs_step`` (its thread, start, stop),
    kept as one array per level (:func:`step_table`) from which the trace's rows are made
    when first read.
Encoding
    A level's accepted ``(vertex, parent)`` pairs reach the result assembly as one
    :class:`Discoveries` (``task`` -1) grouped by owning task (``offsets``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
from numba.typed import List

from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.level_tasks import (
    EDGES,
    FOUND,
    SLOT,
    START,
    STATS_WIDTH,
    STOP,
    SYNC_SIZE,
    bottom_up_level,
    top_down_level,
)
from taskbfs.runtime import on_threads, threads_for
from taskbfs.search.state import BOTTOM_UP, Discoveries, Frontier, LevelSummary, one_range


class TaskLists:
    """Every task's slices as the numba typed lists the compiled level reads. Made once per
    placed graph and kept with task 0's slice (building a typed list costs per entry)."""

    def __init__(self, slices):
        head = slices[0][0]
        key = tuple(id(s) for group in slices for s in group)
        if head._lists is None or head._lists[0] != key:
            head._lists = (key, self._made(slices))
        self.out_indptrs, self.out_indices, self.in_indptrs, self.in_indices, \
            self.searchables, self.out_offsets = head._lists[1]

    def get(self):
        """The out-adjacency lists, as the compiled small levels read them
        (:func:`~taskbfs.search.compiled_levels.run_small_levels`)."""
        return self.out_indptrs, self.out_indices

    @staticmethod
    def _made(slices):
        lists = tuple(List() for _ in range(6))
        for group in slices:
            out, inward = group[0], group[-1]  # a bottom-up step reads the transposed slice
            lists[0].append(np.ascontiguousarray(out.indptr, dtype=np.int64))
            lists[1].append(out.indices)
            lists[2].append(np.ascontiguousarray(inward.indptr, dtype=np.int64))
            lists[3].append(inward.indices)
            lists[4].append(inward.searchable_bits())
            lists[5].append(np.ascontiguousarray(inward.out_offsets, dtype=np.int64))
        return lists


class LevelTasks:
    """Runs the levels of one search on ``threads`` threads (see the module docstring).

    Parameters
    ----------
    slices : sequence of tuple of GraphSlice
        Per task: its out-adjacency slice, then its transposed one if it has one.
    degrees : ndarray of int64
    threads : int
        The worker's threads (this one included).
    """

    def __init__(self, slices, degrees: np.ndarray, threads: int):
        self.lists = TaskLists(slices)
        self.degrees = degrees
        self.threads = max(1, int(threads))
        self._seen = None

    def run(self, frontier: Frontier):
        """``(next frontier, summary, step table, barrier row)`` of the level ``frontier``
        opens: the steps as :func:`step_table` gives them, the barrier as
        ``(tags, thread, start, stop)`` (what :func:`taskbfs.runtime.record_included` takes)."""
        start = time.time()
        if frontier.direction == BOTTOM_UP:
            steps, out = self.bottom_up(frontier)
        else:
            steps, out = self.top_down(frontier)
        counts, task_edges, new_bits, next_v, next_u, next_off, stats, idents = out
        barrier_start = max(float(stats[:, STOP].max()) / 1e9, start) if steps.size else start
        num_tasks = frontier.bounds.size - 1
        edges_examined = np.zeros(num_tasks, dtype=np.int64)
        found = np.zeros(num_tasks, dtype=np.int64)
        edges_examined[steps] = stats[:, EDGES]
        found[steps] = stats[:, FOUND]
        frontier.included.append((frontier.level, Discoveries(-1, next_v, next_u, 0,
                                                              offsets=next_off)))
        nxt, summary = next_level(frontier, counts, task_edges, next_v, new_bits,
                                  edges_examined=edges_examined, found=found,
                                  start=barrier_start)
        table = step_table(steps, stats, idents)
        barrier = ({"level": frontier.level}, threading.get_ident(), barrier_start,
                   summary.barrier_stop)
        return nxt, summary, table, barrier

    def top_down(self, frontier: Frontier):
        """The level's top-down steps and their barrier: ``(steps run, (counts per task,
        arcs per task, next bitmap, accepted vertices, their parents, their offsets per
        task, step stats, thread idents))``."""
        lists, degrees = self.lists, self.degrees
        bounds = frontier.bounds
        num_tasks = bounds.size - 1
        sizes = np.diff(frontier.offsets)
        steps = np.flatnonzero(sizes)
        edges = task_edges(frontier, degrees)[steps]
        out_start = np.zeros(steps.size + 1, dtype=np.int64)
        np.cumsum(edges, out=out_start[1:])
        total = int(out_start[-1])
        dtype = lists.out_indices[0].dtype
        cand_v, cand_u = np.empty(total, dtype), np.empty(total, dtype)
        # one owner: the kernel leaves the candidates where they are (one bucket)
        buck_v, buck_u = ((cand_v, cand_u) if one_range(bounds)
                          else (np.empty(total, dtype), np.empty(total, dtype)))
        threads = self._threads_for(steps.size, total)
        seen = self._seen_bits(threads, frontier.visited_bits.size,
                               bool((edges > frontier.visited_bits.size).any()))
        buck_off = np.empty((steps.size, num_tasks + 1), dtype=np.int64)
        cap_start = np.empty(num_tasks + 1, dtype=np.int64)
        counts = np.empty(num_tasks, dtype=np.int64)
        next_edges = np.empty(num_tasks, dtype=np.int64)
        new_bits = empty_bitmap(degrees.size)
        next_off = np.empty(num_tasks + 1, dtype=np.int64)
        stats = np.empty((steps.size, STATS_WIDTH), dtype=np.int64)
        # every accepted vertex was a candidate: the candidates bound the next frontier
        next_v, next_u = np.empty(total, np.int64), np.empty(total, np.int64)
        order = np.argsort(-edges, kind="stable")
        sync = np.zeros(SYNC_SIZE, dtype=np.int64)

        def slot(k):
            top_down_level(k, sync, order, steps, lists.out_indptrs, lists.out_indices, bounds,
                           frontier.vertices, frontier.offsets, frontier.visited_bits, degrees,
                           seen, out_start, cand_v, cand_u, buck_v, buck_u, buck_off, cap_start,
                           counts, next_edges, new_bits, next_v, next_u, next_off, stats)

        idents = on_threads(slot, threads, self.threads)
        n_new = int(next_off[-1])
        return steps, (counts, next_edges, new_bits, next_v[:n_new], next_u[:n_new], next_off,
                       stats, idents)

    def bottom_up(self, frontier: Frontier):
        """The level's bottom-up steps and their barrier, as :meth:`top_down` returns them."""
        lists, degrees = self.lists, self.degrees
        bounds = frontier.bounds
        num_tasks = bounds.size - 1
        unvisited = frontier.progress.unvisited_per_task
        steps = np.flatnonzero(unvisited) if frontier.bits is not None else np.zeros(0, np.int64)
        dtype = lists.in_indices[0].dtype
        n = degrees.size
        out_v, out_u = np.empty(n, dtype), np.empty(n, dtype)
        counts = np.zeros(num_tasks, dtype=np.int64)
        next_edges = np.zeros(num_tasks, dtype=np.int64)
        new_bits = empty_bitmap(n)
        next_off = np.empty(num_tasks + 1, dtype=np.int64)
        next_v, next_u = np.empty(n, np.int64), np.empty(n, np.int64)
        stats = np.empty((steps.size, STATS_WIDTH), dtype=np.int64)
        order = np.argsort(-unvisited[steps], kind="stable")
        sync = np.zeros(SYNC_SIZE, dtype=np.int64)
        threads = self._threads_for(steps.size, int(unvisited[steps].sum()))

        def slot(k):
            bottom_up_level(k, sync, order, steps, lists.in_indptrs, lists.in_indices,
                            lists.searchables, lists.out_offsets, bounds, frontier.visited_bits,
                            frontier.bits, out_v, out_u, counts, next_edges, new_bits, next_v,
                            next_u, next_off, stats)

        if steps.size:
            idents = on_threads(slot, threads, self.threads)
        else:
            idents, next_off[:] = [], 0
        n_new = int(next_off[-1])
        return steps, (counts, next_edges, new_bits, next_v[:n_new], next_u[:n_new], next_off,
                       stats, idents)

    def _threads_for(self, steps: int, entries: int) -> int:
        """Threads for a level of ``steps`` steps that read about ``entries`` entries (arcs
        top-down, unvisited vertices bottom-up): at most one per step, and as many as
        the work is worth (:func:`~taskbfs.runtime.threads_for`)."""
        return threads_for(entries, min(self.threads, steps))

    def _seen_bits(self, threads: int, words: int, needed: bool) -> np.ndarray:
        """Per thread, a zeroed bitmap for steps that report each vertex once (the kernel
        leaves it zeroed): made when a level first needs it, kept for the search."""
        if not needed:
            return np.zeros((threads, 0), dtype=np.uint64)
        if self._seen is None or self._seen.shape[0] < threads:
            self._seen = np.zeros((threads, words), dtype=np.uint64)
        return self._seen


def next_level(frontier: Frontier, counts, task_edges, new_frontier, new_bits, *,
               edges_examined, found, start: float) -> tuple[Frontier, LevelSummary]:
    """The end of the level's barrier: from what it accepted per owning task (``counts``
    vertices, ``task_edges`` edges leaving them; ``new_frontier`` grouped by owner,
    ``new_bits`` their bitmap), the level's summary (:meth:`SwitchRule.summary`: the next
    direction, the end) and the next :class:`Frontier` (in the form that direction reads)."""
    bounds = frontier.bounds
    progress, tally = frontier.progress, frontier.tally
    unvisited = progress.unvisited_per_task - counts
    summary = tally.rule.summary(frontier.level + 1, frontier.direction, tally.frontier_size,
                                 tally.unexplored_edges, counts, task_edges, unvisited,
                                 edges_examined=edges_examined, found=found, start=start)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    if summary.direction == BOTTOM_UP and summary.frontier_size:
        # bottom-up steps read only the bitmap: the vertex lists are not kept
        vertices, bits, next_edges = np.empty(0, dtype=np.int64), new_bits, None
    else:
        np.cumsum(counts, out=offsets[1:])
        vertices, bits, next_edges = new_frontier, None, task_edges
    nxt = Frontier(summary.level, summary.direction, vertices, offsets, bits,
                   frontier.visited_bits, bounds, replace(progress, unvisited_per_task=unvisited),
                   frontier.included, task_edges=next_edges, tally=tally.after(summary))
    return nxt, summary


def task_edges(frontier: Frontier, degrees: np.ndarray) -> np.ndarray:
    """Per task, the edges leaving its frontier vertices (known from the barrier that made
    the frontier, else summed here and kept with it)."""
    if frontier.task_edges is None:
        sums = np.cumsum(degrees[frontier.vertices])
        ends = np.concatenate([[0], sums])[frontier.offsets]
        frontier.task_edges = np.diff(ends)
    return frontier.task_edges


def step_table(steps: np.ndarray, stats: np.ndarray, idents: list[int]) -> np.ndarray:
    """A level's CPU step tasks as one int64 array, a row per step in task order: ``[task,
    thread, start_ns, stop_ns, on_gpu]`` (``STEP_COLUMNS``; thread: ``threading.get_ident()``
    of the thread that ran it; on_gpu 0). The trace's rows are made of it when first read:
    no Python object per task while the search runs."""
    table = np.zeros((steps.size, len(STEP_COLUMNS)), dtype=np.int64)
    table[:, 0] = steps
    table[:, 1] = np.asarray(idents, dtype=np.int64)[stats[:, SLOT]]
    table[:, 2] = stats[:, START]
    table[:, 3] = stats[:, STOP]
    return table


def batch_table(tasks: np.ndarray, start: float, stop: float) -> np.ndarray:
    """The step table (:func:`step_table`'s columns) of a level's GPU steps, run as one
    batch by this thread: each spans the batch."""
    table = np.empty((tasks.size, len(STEP_COLUMNS)), dtype=np.int64)
    table[:, 0] = tasks
    table[:, 1] = threading.get_ident()
    table[:, 2] = round(start * 1e9)
    table[:, 3] = round(stop * 1e9)
    table[:, 4] = 1
    return table


#: Columns of :func:`step_table`.
STEP_COLUMNS = ("task", "thread", "start_ns", "stop_ns", "on_gpu")


__all__ = ["LevelTasks", "LevelSummary", "STEP_COLUMNS", "batch_table", "next_level",
           "step_table", "task_edges"]
