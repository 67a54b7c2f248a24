"""taskbfs's step and barrier code in a plain Python level loop, without Dask: the "no runtime" peer.

Returns
    :func:`plain_bfs` → :class:`PlainResult` (distances, parents, elapsed seconds, levels),
    the same arrays :func:`taskbfs.bfs` returns, from the same code.
Approach
    The level loop of ``taskbfs/bfs/core.py`` with the Dask runtime taken out: the graph is
    cut into the same T vertex ranges (``taskbfs.graph.partition``, same balance) and the
    same slices (``GraphSlice``), each level calls the step tasks' CPU implementation
    (``taskbfs.bfs.steps.step_smp``) once per range with work, serially or on a
    ``ThreadPoolExecutor`` (the kernels release the GIL, as on the embedded cluster's
    worker threads), then the barrier's own function (``taskbfs.bfs.state.advance``:
    visited set, next frontier, Beamer's switch rule), and at the end the result
    assembly (:func:`assemble_range`, here) once per group of ranges on the same pool. What is left between this loop and ``taskbfs.bfs`` is the runtime: task
    submission, scheduling, messages, futures, the trace.
Encoding
    As in ``taskbfs.bfs.state``: uint64 bitmaps, per-task frontiers grouped by owner with
    T + 1 offsets, ``parents[source] == source``, ``-1`` unreached.

This module never imports Dask itself (importing any ``taskbfs`` submodule runs the package
``__init__``, which loads it, but nothing here submits to it).

    >>> import taskbfs as tb                                    # doctest: +SKIP
    >>> g = tb.kronecker(10)                                    # doctest: +SKIP
    >>> r = plain_bfs(g, 0, tasks=8, threads=2)                 # doctest: +SKIP
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from taskbfs import config
from taskbfs.bfs.placement import _slices
from taskbfs.bfs.result import result_dtype
from taskbfs.bfs.state import advance, first_frontier
from taskbfs.bfs.steps import step_smp
from taskbfs.graph import partition
from taskbfs.kernels.direction import AUTO, BOTTOM_UP, TOP_DOWN
from taskbfs.kernels.merge import record_pairs, record_pairs_at


@dataclass
class PlainResult:
    """Result of :func:`plain_bfs`."""

    source: int
    distances: np.ndarray
    parents: np.ndarray
    elapsed: float
    directions: list  # direction of each level that ran

    @property
    def num_levels(self) -> int:
        return int(self.distances.max()) + 1

    @property
    def reached(self) -> int:
        return int(np.count_nonzero(self.distances >= 0))


class Slices:
    """The T per-task slices of a graph (what ``place_graph`` scatters), built once.

    ``out`` are the out-adjacency slices (top-down steps), ``inn`` the transpose's
    (bottom-up steps of a directed graph; the same slices when undirected).
    """

    def __init__(self, graph, tasks: int, balance: str | None = None):
        parts = partition(graph, tasks, balance=balance)
        self.bounds = np.ascontiguousarray(parts.bounds, dtype=np.int64)
        self.num_tasks = parts.num_tasks
        self.num_vertices = graph.num_vertices
        self.degrees = graph.degrees()
        self.out = _slices(graph, parts, graph.token)
        self.inn = (_slices(graph.transpose(), parts, graph.token + "/T", out=graph)
                    if graph.directed else self.out)


def plain_bfs(graph, source: int, tasks: int | None = None, threads: int | None = None,
              direction: str = AUTO, slices: Slices | None = None, pool=None,
              alpha: float | None = None, beta: float | None = None) -> PlainResult:
    """BFS from ``source`` with taskbfs's step and barrier code over T slices, in a plain loop.

    Parameters
    ----------
    graph : taskbfs.Graph
    source : int
    tasks : int
        T, the number of vertex ranges (ignored when ``slices`` is given).
    threads : int, optional
        1 runs the steps of a level one after another; more runs them on a thread pool
        (default: ``os.cpu_count()``, the embedded cluster's worker threads).
    direction : {"auto", "top-down", "bottom-up"}
    slices : Slices, optional
        Prebuilt slices (build once per graph and T, as taskbfs places them once).
    pool : concurrent.futures.Executor, optional
        A pool to reuse across searches (created and shut down here otherwise).

    Returns
    -------
    PlainResult
        ``elapsed`` covers the state allocation, every level, every barrier and the result
        assembly, not the slicing or the pool start (``BFSResult.elapsed``, the whole
        ``tb.bfs`` call, covers the same work plus the client's: the slices are placed
        once per graph and T there too).
    """
    source = graph.check_vertex(source, "source")
    if direction not in (AUTO, TOP_DOWN, BOTTOM_UP):
        raise ValueError(f"unknown direction {direction!r}")
    s = slices if slices is not None else Slices(graph, config.get("tasks") if tasks is None else tasks)
    threads = int(threads or os.cpu_count() or 1)
    own_pool = pool is None and threads > 1
    if own_pool:
        pool = ThreadPoolExecutor(max_workers=threads)
    try:
        return _run(s, source, direction, pool if threads > 1 else None, threads, alpha, beta)
    finally:
        if own_pool:
            pool.shutdown()


def _run(s: Slices, source: int, mode: str, pool, threads: int, alpha: float,
         beta: float) -> PlainResult:
    def run_all(calls):
        return list(pool.map(lambda c: c(), calls)) if pool is not None else [c() for c in calls]

    start = time.perf_counter()
    frontier, summary = first_frontier(s.degrees, s.bounds, source, mode, alpha, beta)
    logs = []  # (level, discoveries)
    directions = []
    while summary.frontier_size > 0:
        directions.append(frontier.direction)
        slices = s.inn if frontier.direction == BOTTOM_UP else s.out
        active = np.flatnonzero(summary.frontier_counts).tolist()
        found = run_all([lambda p=slices[t], f=frontier: step_smp(p, f) for t in active])
        logs += [(frontier.level, d) for d in found]
        frontier, summary = advance(frontier, found, s.degrees)
    cuts = np.linspace(0, s.num_vertices, max(1, threads) + 1).round().astype(int)  # per thread
    pieces = run_all([lambda lo=lo, hi=hi: _assemble(s, source, logs, lo, hi)
                      for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)])
    elapsed = time.perf_counter() - start
    distances = np.concatenate([d for d, _ in pieces])
    parents = np.concatenate([p for _, p in pieces])
    return PlainResult(source, distances, parents, elapsed, directions)


def _assemble(s: Slices, source: int, logs, lo: int, hi: int):
    tasks = tasks_overlapping(s.bounds, lo, hi)
    mine = [(level, d) for level, d in logs if d.offsets is not None or d.task in tasks]
    return assemble_range(*[d for _, d in mine], source=source, lo=lo, hi=hi, bounds=s.bounds,
                          levels=[level for level, _ in mine])


def tasks_overlapping(bounds, lo: int, hi: int) -> range:
    """The tasks whose vertex ranges overlap ``[lo, hi)``: the bottom-up steps whose
    outputs a result slice reads (it reads every top-down step's, whose buckets may hold
    any vertex)."""
    first, last = (int(t) for t in np.searchsorted(bounds, [lo, hi - 1], side="right") - 1)
    return range(first, last + 1)


def assemble_range(*logs, source: int, lo: int, hi: int, bounds, levels):
    """Distances and parents of the vertices ``[lo, hi)``, from the steps' records of a
    whole search (any range, not only whole tasks): this loop's result assembly, one
    range per thread (taskbfs's one-task search claims chunks instead:
    ``taskbfs.bfs.state.assemble_all``).

    Parameters
    ----------
    *logs : Discoveries
        Step outputs: every top-down step's (bucketed by owner) and the bottom-up steps'
        of the tasks whose ranges overlap ``[lo, hi)``.
    source : int
    lo, hi : int
        The vertex range.
    bounds : ndarray of int64
        The task ranges (T + 1), to find the top-down buckets that can hold the range.
    levels : sequence of int
        The level each log's step ran at (its discoveries are at ``level + 1``).

    Returns
    -------
    (distances, parents) : ndarrays of ``result_dtype`` over ``[lo, hi)``, -1 for unreached.
    """
    dtype = result_dtype(int(bounds[-1]))
    distances = np.full(hi - lo, -1, dtype=dtype)
    parents = np.full(hi - lo, -1, dtype=dtype)
    tasks = tasks_overlapping(bounds, lo, hi)
    for d, level in zip(logs, levels, strict=True):
        if d.depths is not None:
            record_pairs_at(d.vertices, d.parents, d.depths, lo, hi, parents, distances)
            continue
        if d.offsets is not None:
            start, stop = int(d.offsets[tasks.start]), int(d.offsets[tasks.stop])
        else:
            start, stop = 0, d.vertices.size
        if stop > start:
            record_pairs(d.vertices, d.parents, start, stop, lo, hi, level + 1, parents, distances)
    if lo <= source < hi:
        distances[source - lo] = 0
        parents[source - lo] = source
    return distances, parents
