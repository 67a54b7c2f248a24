"""Deep graphs: a search's wall time on paths and grids, beside scipy in the same process.

Returns
    Prints one line per graph: taskbfs's wall time around ``tb.bfs`` (median of
    ``--repeats`` on a warm runtime, graph placed by an untimed first search), the levels,
    scipy's ``breadth_first_order`` time on the same CSR, and whether taskbfs's distances
    equal scipy's and its parents pass ``tb.validate``.
Approach
    A path of n vertices has n levels of one vertex each; a k x k grid has 2k - 1 levels
    of up to k vertices. Issue "Speed as the user gets it" (item 5) asks for a
    100,000-vertex path in <= 2 s and a 1,000,000-vertex path in <= 10 s on 2 cores.

    python benchmarks/deep_graphs.py --paths 100000 1000000 --grids 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import scipy.sparse.csgraph as csgraph

import taskbfs as tb


def path_graph(n: int) -> tb.Graph:
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n), num_vertices=n)


def grid_graph(k: int) -> tb.Graph:
    ids = np.arange(k * k).reshape(k, k)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return tb.Graph.from_edges(src, dst, num_vertices=k * k)


def scipy_levels(graph: tb.Graph, source: int) -> tuple[np.ndarray, float]:
    """Distances from scipy's BFS order and predecessors, and its search time."""
    matrix = graph.to_scipy()
    start = time.perf_counter()
    order, pred = csgraph.breadth_first_order(matrix, source, directed=True,
                                              return_predecessors=True)
    seconds = time.perf_counter() - start
    distances = np.full(graph.num_vertices, -1, dtype=np.int64)
    distances[source] = 0
    for v in order[1:]:  # BFS order: a vertex's predecessor comes before it
        distances[v] = distances[pred[v]] + 1
    return distances, seconds


def measure(name: str, graph: tb.Graph, repeats: int, runtime, tasks) -> None:
    source = 0
    tb.bfs(graph, source, runtime=runtime, tasks=tasks)  # places the graph; untimed
    walls, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = tb.bfs(graph, source, runtime=runtime, tasks=tasks)
        walls.append(time.perf_counter() - start)
    expected, scipy_seconds = scipy_levels(graph, source)
    same = bool(np.array_equal(result.distances, expected))
    tb.validate(graph, source, result.parents)
    print(f"{name:>16s}  n={graph.num_vertices:>9,}  levels={result.num_levels:>9,}  "
          f"taskbfs wall median {np.median(walls):8.3f} s (min {min(walls):.3f}, T={result.num_tasks})"
          f"  scipy {scipy_seconds:7.3f} s  distances equal scipy: {same}  valid: True",
          flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--grids", type=int, nargs="*", default=[1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=None)
    args = parser.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"date {time.strftime('%Y-%m-%d %H:%M')}; taskbfs dispatch "
          f"{tb.config.get('dispatch')}, compiled levels <= {tb.config.get('search.compiled-level-edges')} edges")
    with tb.Runtime() as runtime:
        for n in args.paths:
            measure(f"path {n:,}", path_graph(n), args.repeats, runtime, args.tasks)
        for k in args.grids:
            measure(f"grid {k}x{k}", grid_graph(k), args.repeats, runtime, args.tasks)


if __name__ == "__main__":
    main()
