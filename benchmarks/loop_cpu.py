"""The wall and CPU time of ``tb.bfs`` calls: what the level loop costs, also on a busy machine.

Returns
    Prints one line per case: the median wall time around ``tb.bfs`` and the median CPU
    time of this process over the same window (``time.process_time``: the embedded
    cluster's scheduler, worker and client are threads of this process, so it counts all
    of the search's work and none of other processes'), over ``--searches`` warm calls
    after two untimed ones.
Approach
    On a shared machine the wall time of a search swings with other processes' load; its
    CPU time much less, so that a before/after pair of runs can be compared by both. Cases:
    a path (one vertex per level: the one-task search's compiled levels), a Kronecker
    graph by default (one task) and with ``dispatch="tasks"`` (every level dispatched).

    python benchmarks/loop_cpu.py --path 100000 --scale 16 --searches 21
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import taskbfs as tb


def measure(graph: tb.Graph, source: int, searches: int, runtime, **kwargs) -> tuple[float, float]:
    """Median wall and CPU seconds of ``searches`` calls (after two untimed ones)."""
    for _ in range(2):
        tb.bfs(graph, source, runtime=runtime, **kwargs)
    walls, cpus = [], []
    for _ in range(searches):
        wall, cpu = time.perf_counter(), time.process_time()
        tb.bfs(graph, source, runtime=runtime, **kwargs)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return float(np.median(walls)), float(np.median(cpus))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=int, default=100_000, help="vertices of the path")
    parser.add_argument("--scale", type=int, default=16, help="of the Kronecker graph")
    parser.add_argument("--searches", type=int, default=21)
    args = parser.parse_args()
    n = args.path
    path = tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n), num_vertices=n)
    kron = tb.kronecker(args.scale, seed=1)
    source = int(tb.search_keys(kron, 1, seed=1)[0])
    print(f"machine: {platform.machine()}; date {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    cases = [(f"path {n:,}", path, 0, {}),
             (f"kron{args.scale} default", kron, source, {}),
             (f"kron{args.scale} tasks", kron, source, {"dispatch": "tasks"})]
    with tb.Runtime() as runtime:
        for name, graph, s, kwargs in cases:
            wall, cpu = measure(graph, s, args.searches, runtime, **kwargs)
            print(f"{name:>16}: wall median {1e3 * wall:9.2f} ms  cpu median {1e3 * cpu:9.2f} ms")


if __name__ == "__main__":
    main()
