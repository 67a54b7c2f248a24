"""Independent BFS references that the tests compare taskbfs with.

What it returns
---------------
Hop distances from a source (``-1`` = unreached) and, for the naive BFS, a Graph500
parent array (``parents[source] == source``, ``-1`` unreached).

Approach
--------
``naive_bfs`` / ``naive_bfs_parents``: textbook queue BFS in plain Python over an
adjacency built here from the *raw* edge list (self-loops and duplicate edges left in;
undirected edges added both ways), so it shares no code with ``taskbfs.Graph``.
``scipy_distances`` / ``scipy_parents``: ``scipy.sparse.csgraph`` on ``graph.to_scipy()``,
a second, compiled reference for large graphs.

Source: CLRS BFS; Graph500 specification ("Kernel 2 Output") for the parent convention.
"""

from __future__ import annotations

from collections import deque

import numpy as np


def adjacency(src, dst, num_vertices: int, directed: bool) -> list[list[int]]:
    """Out-neighbour lists straight from the edge list, duplicates and self-loops kept."""
    adj: list[list[int]] = [[] for _ in range(num_vertices)]
    for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), strict=True):
        adj[u].append(v)
        if not directed:
            adj[v].append(u)
    return adj


def naive_bfs_parents(src, dst, num_vertices: int, source: int, directed: bool = False):
    """Queue BFS from ``source``; returns ``(distances, parents)`` as int64 arrays.

    Each vertex's parent is the first vertex that discovered it.
    """
    adj = adjacency(src, dst, num_vertices, directed)
    dist = [-1] * num_vertices
    parent = [-1] * num_vertices
    dist[source] = 0
    parent[source] = source
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if dist[v] == -1:
                dist[v] = dist[u] + 1
                parent[v] = u
                queue.append(v)
    return np.array(dist, dtype=np.int64), np.array(parent, dtype=np.int64)


def naive_bfs(src, dst, num_vertices: int, source: int, directed: bool = False) -> np.ndarray:
    """Hop distances from ``source`` (int64, ``-1`` unreached), by a plain queue BFS."""
    return naive_bfs_parents(src, dst, num_vertices, source, directed)[0]


def scipy_distances(graph, source: int) -> np.ndarray:
    """Hop distances from ``source`` by ``scipy.sparse.csgraph.shortest_path`` (unweighted)."""
    from scipy.sparse.csgraph import shortest_path

    d = shortest_path(graph.to_scipy(), directed=graph.directed, unweighted=True, indices=source)
    out = np.full(graph.num_vertices, -1, dtype=np.int64)
    finite = np.isfinite(d)
    out[finite] = d[finite].astype(np.int64)
    return out


def scipy_parents(graph, source: int) -> np.ndarray:
    """A Graph500 parent array from ``scipy.sparse.csgraph.breadth_first_order``."""
    from scipy.sparse.csgraph import breadth_first_order

    _, pred = breadth_first_order(
        graph.to_scipy(), source, directed=graph.directed, return_predecessors=True
    )
    parents = pred.astype(np.int64)
    parents[parents < 0] = -1  # scipy marks "no predecessor" with -9999
    parents[source] = source
    return parents


def serial_barrier(frontier, discoveries, degrees):
    """A level's barrier written plainly, the reference for the compiled ones: ``(next
    Frontier, LevelSummary)`` from the level's raw step outputs (``Discoveries`` in task
    order, pairs as the steps found them). Top-down: owner by owner, steps in task order,
    the first unvisited occurrence of each candidate wins (the visited bits are updated in
    place); bottom-up: each step's own vertices as found. The summary is taskbfs's one
    switch rule (``level_tasks.next_level``)."""
    from taskbfs.search.level_tasks import next_level
    from taskbfs.search.state import BOTTOM_UP

    bounds = frontier.bounds
    num_tasks = bounds.size - 1
    visited = frontier.visited_bits
    examined = np.zeros(num_tasks, dtype=np.int64)
    found = np.zeros(num_tasks, dtype=np.int64)
    for d in discoveries:
        if d.task >= 0:  # a level -1 names the sources as no task's step
            examined[d.task], found[d.task] = d.edges_examined, d.vertices.size
    accepted = [[] for _ in range(num_tasks)]
    for d in discoveries:
        owners = np.searchsorted(bounds, d.vertices, side="right") - 1
        for v, owner in zip(d.vertices.tolist(), owners.tolist(), strict=True):
            accepted[owner].append(v)
    for t in range(num_tasks):
        unique = []
        for v in accepted[t]:
            word, bit = v >> 6, np.uint64(1) << np.uint64(v & 63)
            if frontier.direction == BOTTOM_UP or not visited[word] & bit:
                visited[word] |= bit
                unique.append(v)
        accepted[t] = unique
    counts = np.array([len(a) for a in accepted], dtype=np.int64)
    vertices = np.array([v for a in accepted for v in a], dtype=np.int64)
    edges = np.array([int(degrees[a].sum()) for a in accepted], dtype=np.int64)
    bits = np.zeros_like(visited)
    for v in vertices.tolist():
        bits[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
    return next_level(frontier, counts, edges, vertices, bits, edges_examined=examined,
                      found=found, start=0.0)
