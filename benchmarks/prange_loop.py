"""A plain direction-optimizing BFS in numba ``prange`` (no Dask, no tasks): issue 23's peer.

Returns
    :func:`prange_bfs` → ``(parents, distances)`` (int64, -1 unreached,
    ``parents[source] == source``).
Approach
    Beamer's direction-optimizing loop as a tuned shared-memory code writes it: top-down
    levels split the frontier into one chunk per thread, each thread claims unvisited
    neighbours with an atomic OR on the visited bitmap and writes them to its own buffer,
    then the buffers are joined by a prefix sum; bottom-up levels run over the bitmap's
    words in parallel, each unvisited vertex stopping at its first neighbour in the
    frontier bitmap. The same switch rule (α, β) as taskbfs. Threads: ``numba.set_num_threads``.

    python benchmarks/prange_loop.py --scale 21 --keys 8 --threads 1 2 4 8 16
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit, prange

import taskbfs as tb
from taskbfs import config
from taskbfs.kernels.atomics import fetch_or


@njit(parallel=True, cache=True)
def _top_down(indptr, indices, frontier, visited, parents, distances, level, buf, bases,
              degrees):
    chunks = bases.size - 1
    size = frontier.size
    counts = np.zeros(chunks, dtype=np.int64)
    edges = np.zeros(chunks, dtype=np.int64)
    for c in prange(chunks):
        lo = size * c // chunks
        hi = size * (c + 1) // chunks
        base = bases[c]
        n = 0
        e = 0
        for i in range(lo, hi):
            u = frontier[i]
            for k in range(indptr[u], indptr[u + 1]):
                v = indices[k]
                bit = np.uint64(1) << np.uint64(v & 63)
                if visited[v >> 6] & bit:
                    continue
                if fetch_or(visited, v >> 6, bit) & bit:
                    continue
                parents[v] = u
                distances[v] = level + 1
                buf[base + n] = v
                n += 1
                e += degrees[v]
        counts[c] = n
        edges[c] = e
    starts = np.zeros(chunks + 1, dtype=np.int64)
    for c in range(chunks):
        starts[c + 1] = starts[c] + counts[c]
    out = np.empty(starts[-1], dtype=np.int64)
    for c in prange(chunks):
        out[starts[c]:starts[c + 1]] = buf[bases[c]:bases[c] + counts[c]]
    return out, edges.sum()


@njit(parallel=True, cache=True)
def _bottom_up(indptr, indices, visited, front_bits, next_bits, parents, distances, level,
               degrees):
    words = visited.size
    n = parents.size
    found = np.zeros(words, dtype=np.int64)
    edges = np.zeros(words, dtype=np.int64)
    for w in prange(words):
        todo = ~visited[w]
        if todo == 0:
            continue
        f = 0
        e = 0
        for b in range(64):
            v = (w << 6) + b
            if v >= n or not (todo >> np.uint64(b)) & np.uint64(1):
                continue
            for k in range(indptr[v], indptr[v + 1]):
                u = indices[k]
                if (front_bits[u >> 6] >> np.uint64(u & 63)) & np.uint64(1):
                    parents[v] = u
                    distances[v] = level + 1
                    next_bits[w] |= np.uint64(1) << np.uint64(b)
                    f += 1
                    e += degrees[v]
                    break
        found[w] = f
        edges[w] = e
    for w in prange(words):
        visited[w] |= next_bits[w]
    return found.sum(), edges.sum()


@njit(parallel=True, cache=True)
def _bits_to_list(bits, n):
    words = bits.size
    counts = np.zeros(words + 1, dtype=np.int64)
    for w in prange(words):
        c = 0
        x = bits[w]
        while x:
            x &= x - np.uint64(1)
            c += 1
        counts[w + 1] = c
    for w in range(words):
        counts[w + 1] += counts[w]
    out = np.empty(counts[-1], dtype=np.int64)
    for w in prange(words):
        k = counts[w]
        for b in range(64):
            if (bits[w] >> np.uint64(b)) & np.uint64(1):
                out[k] = (w << 6) + b
                k += 1
    return out


@njit(parallel=True, cache=True)
def _list_to_bits(frontier, bits):
    bits[:] = 0
    for i in range(frontier.size):
        v = frontier[i]
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


def prange_bfs(graph: tb.Graph, source: int, alpha=None, beta=None):
    """Direction-optimizing BFS from ``source`` (see the module docstring)."""
    alpha = config.get("direction.alpha") if alpha is None else alpha
    beta = config.get("direction.beta") if beta is None else beta
    n = graph.num_vertices
    indptr, indices = graph.indptr, graph.indices
    degrees = np.diff(indptr)
    words = (n + 63) >> 6
    visited = np.zeros(words, dtype=np.uint64)
    parents = np.full(n, -1, dtype=np.int64)
    distances = np.full(n, -1, dtype=np.int64)
    parents[source], distances[source] = source, 0
    visited[source >> 6] |= np.uint64(1) << np.uint64(source & 63)
    frontier = np.array([source], dtype=np.int64)
    front_bits = np.zeros(words, dtype=np.uint64)
    unexplored = int(degrees.sum()) - int(degrees[source])
    m_f, size, level, bottom_up = int(degrees[source]), 1, 0, False
    while size:
        previous = size
        if not bottom_up and m_f > unexplored / alpha:
            bottom_up = True
            _list_to_bits(frontier, front_bits)
        if bottom_up:
            next_bits = np.zeros(words, dtype=np.uint64)
            size, m_f = _bottom_up(indptr, indices, visited, front_bits, next_bits, parents,
                                   distances, level, degrees)
            front_bits = next_bits
            if size < previous and size < n / beta:
                bottom_up = False
                frontier = _bits_to_list(front_bits, n)
        else:
            chunks = numba.get_num_threads()
            ends = np.concatenate([[0], np.cumsum(degrees[frontier])])
            bases = ends[(np.arange(chunks + 1) * frontier.size) // chunks]
            buf = np.empty(int(ends[-1]), dtype=np.int64)
            frontier, m_f = _top_down(indptr, indices, frontier, visited, parents, distances,
                                      level, buf, bases, degrees)
            size = frontier.size
        unexplored -= m_f
        level += 1
    return parents, distances


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=21)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    args = parser.parse_args()
    graph = tb.kronecker(args.scale, 16, seed=1)
    keys = tb.search_keys(graph, args.keys, seed=1)
    for threads in args.threads:
        numba.set_num_threads(threads)
        prange_bfs(graph, int(keys[0]))
        times = []
        for key in keys:
            start = time.perf_counter()
            prange_bfs(graph, int(key))
            times.append(time.perf_counter() - start)
        print(f"threads {threads}: median {np.median(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
