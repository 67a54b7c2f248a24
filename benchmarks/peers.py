"""The peers taskbfs is compared with: scipy, a plain numba loop, the plain GPU loop, GAP.

Returns
    :func:`peers` → the :class:`Peer` objects a question script times beside ``tb.bfs``,
    each with ``name``, ``why_not`` (None when usable, else why: "not installed", "no GPU"),
    ``prepare(graph)`` (the peer's own structures, untimed) and ``search(key)`` →
    ``(seconds, distances or None)``; and :func:`numba_bfs`, the plain direction-optimizing
    loop, on its own.
Approach
    What a user would otherwise run, on the same graph and keys:

    * ``scipy``: ``scipy.sparse.csgraph.breadth_first_order`` (one thread);
    * ``numba``: :func:`numba_bfs`, Beamer's direction-optimizing BFS as a shared-memory
      code writes it in numba ``prange`` (no Dask, no tasks, none of taskbfs's kernels):
      top-down levels split the frontier into a chunk per thread, each claiming unvisited
      neighbours and writing them to its own buffer (two threads may claim one vertex: the
      join keeps the vertex once, with the parent that stuck), bottom-up levels run over the
      unvisited vertices in parallel, each stopping at its first neighbour in the frontier;
      the switch rule of ``plain_gpu_loop.switch_direction`` with taskbfs's α and β;
    * ``gpu loop``: ``plain_gpu_loop.py`` (CuPy, raw CUDA kernels), where CuPy and a GPU are;
    * ``gap``: the GAP benchmark suite's ``bfs`` binary (``$GAPBS_DIR/bfs`` or ``bfs`` on
      the PATH) on the same graph written as an edge list, its own "Trial Time" (GAP's clock,
      not a wall around a process) and its own verifier (``-v``), where it is installed.

    Every distances array a peer returns is checked against scipy's by the caller
    (``harness.Reference``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plain_gpu_loop  # noqa: E402
from plain_gpu_loop import AUTO, BOTTOM_UP, TOP_DOWN, switch_direction  # noqa: E402

import taskbfs as tb  # noqa: E402


# ------------------------------------------------------------------ the plain numba loop
@njit(parallel=True, cache=True)
def _top_down(indptr, indices, frontier, parents, distances, level, buf, bases):
    chunks = bases.size - 1
    size = frontier.size
    counts = np.zeros(chunks, dtype=np.int64)
    for c in prange(chunks):
        lo = size * c // chunks
        hi = size * (c + 1) // chunks
        base = bases[c]
        n = 0
        for i in range(lo, hi):
            u = frontier[i]
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                if distances[v] < 0:  # a benign race: two threads may both claim v
                    distances[v] = level + 1
                    parents[v] = u
                    buf[base + n] = v
                    n += 1
        counts[c] = n
    # keep a claimed vertex once: in the buffer of the thread whose parent stuck
    keep = np.zeros(chunks + 1, dtype=np.int64)
    for c in prange(chunks):
        m = 0
        for i in range(bases[c], bases[c] + counts[c]):
            v = buf[i]
            u_lo = size * c // chunks
            u_hi = size * (c + 1) // chunks
            p = parents[v]
            # the parent is one of this chunk's frontier vertices: this chunk keeps v
            j = np.searchsorted(frontier[u_lo:u_hi], p)
            if j < u_hi - u_lo and frontier[u_lo + j] == p:
                buf[bases[c] + m] = v
                m += 1
        keep[c + 1] = m
    for c in range(chunks):
        keep[c + 1] += keep[c]
    out = np.empty(keep[-1], dtype=np.int64)
    arcs = np.zeros(chunks, dtype=np.int64)
    for c in prange(chunks):
        a = 0
        for i in range(keep[c + 1] - keep[c]):
            v = buf[bases[c] + i]
            out[keep[c] + i] = v
            a += indptr[v + 1] - indptr[v]
        arcs[c] = a
    out.sort()  # sorted, so that the next level's chunks can find their parents
    return out, arcs.sum()


@njit(parallel=True, cache=True)
def _bottom_up(indptr, indices, in_front, next_front, parents, distances, level):
    n = parents.size
    found = np.zeros(n, dtype=np.int64)
    for v in prange(n):
        next_front[v] = 0
        if distances[v] >= 0:
            continue
        for k in range(indptr[v], indptr[v + 1]):
            u = indices[k]
            if in_front[u]:
                parents[v] = u
                distances[v] = level + 1
                next_front[v] = 1
                found[v] = indptr[v + 1] - indptr[v]
                break
    return np.count_nonzero(next_front), found.sum()


def numba_bfs(graph, source: int, alpha: float | None = None, beta: float | None = None,
              direction: str = AUTO):
    """Direction-optimizing BFS from ``source`` in numba ``prange``: ``(parents,
    distances, directions)`` (int64, -1 unreached, ``parents[source] == source``; the
    direction of each level). Threads: ``numba.set_num_threads``. A directed graph's
    bottom-up levels read its transpose (built here, untimed by :class:`NumbaPeer`)."""
    alpha = tb.config.get("direction.alpha") if alpha is None else alpha
    beta = tb.config.get("direction.beta") if beta is None else beta
    n = graph.num_vertices
    indptr, indices = graph.indptr, graph.indices
    inn = graph.transpose() if graph.directed else graph
    degrees = np.diff(indptr)
    parents = np.full(n, -1, dtype=np.int64)
    distances = np.full(n, -1, dtype=np.int64)
    parents[source], distances[source] = source, 0
    frontier = np.array([source], dtype=np.int64)
    front = np.zeros(n, dtype=np.uint8)
    size, arcs, previous, level = 1, int(degrees[source]), 0, 0
    unexplored = int(degrees.sum()) - arcs
    current = switch_direction(direction, TOP_DOWN, size, arcs, unexplored, n, alpha, beta)
    directions = []
    while size:
        directions.append(current)
        if current == BOTTOM_UP:
            if frontier is not None:  # queue -> flags
                front[:] = 0
                front[frontier] = 1
                frontier = None
            nxt = np.empty(n, dtype=np.uint8)
            new_size, new_arcs = _bottom_up(inn.indptr, inn.indices, front, nxt, parents,
                                            distances, level)
            front = nxt
        else:
            if frontier is None:  # flags -> queue
                frontier = np.flatnonzero(front).astype(np.int64)
            chunks = max(1, min(numba.get_num_threads(), frontier.size))
            ends = np.concatenate([[0], np.cumsum(degrees[frontier])])
            bases = ends[(np.arange(chunks + 1) * frontier.size) // chunks]
            buf = np.empty(int(ends[-1]), dtype=np.int64)
            frontier, new_arcs = _top_down(indptr, indices, frontier, parents, distances,
                                           level, buf, bases)
            new_size = frontier.size
        unexplored -= int(new_arcs)
        previous, size, arcs = size, int(new_size), int(new_arcs)
        current = switch_direction(direction, current, size, arcs, unexplored, n, alpha, beta,
                                   previous_size=previous)
        level += 1
    return parents, distances, directions


@njit(cache=True)
def tree_depths(parents, source):  # pragma: no cover - numba
    """Depth of every vertex in a parent tree (-1 unreached); all -2 if the tree is broken."""
    n = parents.size
    depth = np.full(n, -1, np.int64)
    depth[source] = 0
    stack = np.empty(n, np.int64)
    for v in range(n):
        if parents[v] < 0 or depth[v] >= 0:
            continue
        top = 0
        u = v
        while depth[u] == -1:
            if parents[u] < 0 or parents[u] == u:
                return np.full(n, -2, np.int64)
            depth[u] = -3  # on the chain being walked: a cycle comes back here
            stack[top] = u
            top += 1
            u = parents[u]
        if depth[u] == -3:
            return np.full(n, -2, np.int64)
        d = depth[u]
        while top > 0:
            top -= 1
            d += 1
            depth[stack[top]] = d
    return depth


# ------------------------------------------------------------------ peers
class Peer:
    """One peer: ``why_not`` (None when usable), ``prepare(graph)``, ``search(key)``."""

    name = "peer"
    why_not: str | None = None

    def prepare(self, graph) -> None:
        self.graph = graph

    def search(self, key: int):
        raise NotImplementedError


class ScipyPeer(Peer):
    name = "scipy"

    def prepare(self, graph):
        self.graph = graph
        self.matrix = graph.to_scipy()

    def search(self, key):
        import harness
        from scipy.sparse.csgraph import breadth_first_order

        start = time.perf_counter()
        # directed=True: the CSR holds both arcs of an undirected edge already
        order, pred = breadth_first_order(self.matrix, key, directed=True,
                                          return_predecessors=True)
        seconds = time.perf_counter() - start
        return seconds, harness.depths(order, pred, key, self.graph.num_vertices)


class NumbaPeer(Peer):
    def __init__(self, threads: int | None = None):
        self.threads = threads or numba.config.NUMBA_NUM_THREADS
        self.name = f"numba ({self.threads} threads)"

    def prepare(self, graph):
        self.graph = graph
        numba.set_num_threads(self.threads)
        numba_bfs(graph, int(np.argmax(graph.degrees())))  # compiled or loaded: untimed

    def search(self, key):
        numba.set_num_threads(self.threads)
        start = time.perf_counter()
        _, distances, _ = numba_bfs(self.graph, key)
        return time.perf_counter() - start, distances


class GpuLoopPeer(Peer):
    name = "gpu loop"

    def __init__(self):
        self.why_not = plain_gpu_loop.cupy_status()

    def prepare(self, graph):
        self.graph = graph
        self.device_graph = plain_gpu_loop.upload_graph(graph)
        plain_gpu_loop.plain_gpu_bfs(self.device_graph, int(np.argmax(graph.degrees())))

    def search(self, key):
        import cupy

        start = time.perf_counter()
        parents, _ = plain_gpu_loop.plain_gpu_bfs(self.device_graph, key)
        host = cupy.asnumpy(parents)  # the user's answer in hand, as tb.bfs returns it
        seconds = time.perf_counter() - start
        return seconds, tree_depths(host.astype(np.int64), key)


class GapPeer(Peer):
    """GAP's ``bfs`` on the graph written as an edge list; its own trial time and
    verifier (distances are not returned: ``None``)."""

    name = "gap"

    def __init__(self):
        gap_dir = os.environ.get("GAPBS_DIR")
        self.binary = (str(Path(gap_dir) / "bfs") if gap_dir else None) or shutil.which("bfs")
        if not self.binary or not Path(self.binary).exists():
            self.why_not = "not installed (set GAPBS_DIR to a built gapbs)"

    def prepare(self, graph):
        self.graph = graph
        self.tmp = tempfile.TemporaryDirectory(prefix="taskbfs-gap-")
        self.path = Path(self.tmp.name) / "graph.el"
        a = graph.to_scipy().tocoo()
        keep = a.row < a.col if not graph.directed else slice(None)
        np.savetxt(self.path, np.c_[a.row[keep], a.col[keep]], fmt="%d")

    def search(self, key):
        argv = [self.binary, "-f", str(self.path), "-r", str(key), "-n", "1", "-v"]
        if not self.graph.directed:
            argv.insert(3, "-s")
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        if "Verification:           PASS" not in out and "PASS" not in out:
            raise AssertionError(f"gap, key {key}: its verifier did not pass:\n{out}")
        return float(re.findall(r"Trial Time:\s+([0-9.]+)", out)[-1]), None


def peers(names=("scipy", "numba", "gpu loop", "gap"), threads: int | None = None) -> list:
    """The peers of ``names`` (each reports ``why_not`` when it cannot run here)."""
    made = {"scipy": ScipyPeer, "numba": lambda: NumbaPeer(threads),
            "gpu loop": GpuLoopPeer, "gap": GapPeer}
    return [made[n]() for n in names]
