"""taskbfs's CPU kernels in a plain Python level loop, without Dask: the "no runtime" peer.

Returns
    :func:`plain_bfs` → :class:`PlainResult` (distances, parents, elapsed seconds, levels),
    the same arrays :func:`taskbfs.bfs` returns, from the same kernels.
Approach
    The level loop of ``taskbfs/bfs/core.py`` and the barrier of ``taskbfs/bfs/state.py``
    with the Dask runtime taken out: the graph is cut into the same T vertex ranges
    (``taskbfs.graph.partition``, same balance), each level calls
    ``taskbfs.kernels.top_down_step`` / ``bottom_up_step`` once per range with work (with
    the same per-step output buffers as ``taskbfs/bfs/steps.py``), serially or on a
    ``ThreadPoolExecutor`` (the kernels release the GIL, as on the embedded cluster's
    worker threads), then ``taskbfs.kernels.merge.merge_discoveries`` merges the
    discoveries in task order and Beamer's switch rule (α, β from ``taskbfs.config``)
    picks the next level's direction exactly as ``taskbfs.kernels.direction.switch_direction`` does. What is
    left between this loop and ``taskbfs.bfs`` is the runtime: task submission,
    scheduling, messages, futures, the trace.
Encoding
    As in the kernels: uint64 bitmaps, per-task frontiers grouped by owner with T + 1
    offsets, ``parents[source] == source``, ``-1`` unreached.

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
from taskbfs.graph import partition
from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.cpu import bottom_up_step, frontier_edge_count, top_down_step
from taskbfs.kernels.direction import AUTO, BOTTOM_UP, TOP_DOWN, concat, switch_direction
from taskbfs.kernels.merge import frontier_bitmap, merge_discoveries


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
    """The T per-task CSR slices of a graph (what ``place_graph`` scatters), built once.

    ``indptr`` is local (starts at 0), ``indices`` a view of global neighbour ids;
    ``tindices``/``tindptr`` the transpose's slices for bottom-up steps of a directed graph.
    """

    def __init__(self, graph, tasks: int, balance: str = config.DEFAULT_BALANCE):
        parts = partition(graph, tasks, balance=balance)
        self.bounds = np.ascontiguousarray(parts.bounds, dtype=np.int64)
        self.num_tasks = parts.num_tasks
        self.num_vertices = graph.num_vertices
        self.degrees = graph.degrees()
        self.index_dtype = graph.indices.dtype
        self.out = _cut(graph, self.bounds)
        self.inn = _cut(graph.transpose(), self.bounds) if graph.directed else self.out


def _cut(graph, bounds):
    out = []
    for t in range(bounds.size - 1):
        lo, hi = int(bounds[t]), int(bounds[t + 1])
        start, stop = graph.indptr[lo], graph.indptr[hi]
        out.append((lo, hi, graph.indptr[lo : hi + 1] - start, graph.indices[start:stop]))
    return out


def plain_bfs(graph, source: int, tasks: int = config.DEFAULT_TASKS, threads: int | None = None,
              direction: str = AUTO, slices: Slices | None = None, pool=None,
              alpha: float = config.DO_ALPHA, beta: float = config.DO_BETA) -> PlainResult:
    """BFS from ``source`` with taskbfs's kernels over T slices, in a plain loop.

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
        ``elapsed`` covers the state allocation, every level and every merge (as
        ``BFSResult.elapsed`` does), not the slicing or the pool start.
    """
    source = graph.check_vertex(source, "source")
    if direction not in (AUTO, TOP_DOWN, BOTTOM_UP):
        raise ValueError(f"unknown direction {direction!r}")
    s = slices if slices is not None else Slices(graph, tasks)
    threads = int(threads or os.cpu_count() or 1)
    own_pool = pool is None and threads > 1
    if own_pool:
        pool = ThreadPoolExecutor(max_workers=threads)
    try:
        return _run(s, source, direction, pool if threads > 1 else None, alpha, beta)
    finally:
        if own_pool:
            pool.shutdown()


def _run(s: Slices, source: int, mode: str, pool, alpha: float, beta: float) -> PlainResult:
    start = time.perf_counter()
    n, num_tasks, bounds, degrees = s.num_vertices, s.num_tasks, s.bounds, s.degrees
    visited = empty_bitmap(n)
    parents = np.full(n, -1, dtype=np.int64)
    distances = np.full(n, -1, dtype=np.int64)
    unvisited = np.diff(bounds).astype(np.int64)
    unexplored = int(degrees.sum())
    src = np.array([source], dtype=np.int64)
    found = [(src, src.copy())]
    level, direction = 0, TOP_DOWN
    directions = []
    while True:
        # ---- the barrier (state._advance)
        cand_v = concat([f[0] for f in found])
        cand_p = concat([f[1] for f in found])
        frontier = np.empty(cand_v.size, dtype=np.int64)
        offsets = np.empty(num_tasks + 1, dtype=np.int64)
        task_edges = np.empty(num_tasks, dtype=np.int64)
        n_new = merge_discoveries(cand_v, cand_p, level, visited, parents, distances, bounds,
                                  degrees, frontier, offsets, task_edges)
        if n_new == 0:
            break
        frontier = frontier[:n_new]
        counts = np.diff(offsets)
        unvisited -= counts
        frontier_edges = int(task_edges.sum())
        unexplored -= frontier_edges
        direction = switch_direction(mode, direction, n_new, frontier_edges, unexplored, n,
                                    alpha, beta)
        directions.append(direction)
        # ---- the level's steps (one per range with work)
        if direction == BOTTOM_UP:
            bits = empty_bitmap(n)
            frontier_bitmap(frontier, bits)
            active = np.flatnonzero(unvisited).tolist()

            def step(t, bits=bits):
                lo, hi, indptr, indices = s.inn[t]
                out_v = np.empty(hi - lo, dtype=indices.dtype)
                out_p = np.empty(hi - lo, dtype=indices.dtype)
                k, _ = bottom_up_step(indptr, indices, lo, hi, visited, bits, out_v, out_p)
                return out_v[:k], out_p[:k]
        else:
            active = np.flatnonzero(counts).tolist()

            def step(t, frontier=frontier, offsets=offsets):
                lo, _, indptr, indices = s.out[t]
                mine = frontier[offsets[t] : offsets[t + 1]]
                size = frontier_edge_count(indptr, lo, mine)
                out_v = np.empty(size, dtype=indices.dtype)
                out_p = np.empty(size, dtype=indices.dtype)
                k, _ = top_down_step(indptr, indices, lo, mine, visited, out_v, out_p)
                return out_v[:k], out_p[:k]

        found = list(pool.map(step, active)) if pool is not None else [step(t) for t in active]
        level += 1
    elapsed = time.perf_counter() - start
    return PlainResult(source, distances, parents, elapsed, directions)
