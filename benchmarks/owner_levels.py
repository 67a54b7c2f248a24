"""Cost of one dispatched level as the number of tasks T grows, with one step a level.

Returns
    Prints per T the median ms per level of ``--repeats`` searches, wall (``result.elapsed``
    over its levels) and CPU (the process's CPU time around ``tb.bfs``, every thread of
    the embedded runtime's in-process workers included: less sensitive to a loaded machine
    than the wall time), T values alternating within each round so that a loaded machine
    slows all of them alike, and the ratio to the smallest T.
Approach
    A path of ``--length`` vertices followed by isolated vertices up to ``max(T)``
    vertices, cut by vertex count: every level has one frontier vertex, so it runs one or
    two step tasks and one owner barrier whatever T is; what grows with T is the
    per-range work of the level loop (the owner's frontier view, its barrier, its report,
    the client's sums). Every level goes through the Dask scheduler
    (``dispatch="tasks"``) on the embedded runtime; each search is checked against the
    path's distances.

    python benchmarks/owner_levels.py --tasks 4 300 3000 --length 200 --repeats 5
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import taskbfs as tb


def path_and_isolated(length: int, n: int) -> tb.Graph:
    """A path over vertices 0 .. length - 1, then isolated vertices up to ``n``."""
    return tb.Graph.from_edges(np.arange(length - 1), np.arange(1, length), num_vertices=n)


def ms_per_level(graph: tb.Graph, tasks: int, length: int, runtime) -> tuple[float, float]:
    """``(wall, CPU)`` ms per level of one search."""
    cpu = time.process_time()
    r = tb.bfs(graph, 0, tasks=tasks, balance="vertices", dispatch="tasks", runtime=runtime)
    cpu = time.process_time() - cpu
    want = np.full(graph.num_vertices, -1)
    want[:length] = np.arange(length)
    if not np.array_equal(r.distances, want):
        raise AssertionError(f"T = {tasks}: wrong distances")
    return 1e3 * r.elapsed / len(r.levels), 1e3 * cpu / len(r.levels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[4, 300, 3000])
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    graph = path_and_isolated(args.length, max(max(args.tasks), args.length))
    print(f"# {platform.node()} {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"path of {args.length} + isolated up to {graph.num_vertices} vertices")
    with tb.Runtime() as rt:
        for t in args.tasks:  # place each partition and warm up, untimed
            ms_per_level(graph, t, args.length, rt)
        times = {t: [] for t in args.tasks}
        for _ in range(args.repeats):
            for t in args.tasks:
                times[t].append(ms_per_level(graph, t, args.length, rt))
    base = np.median(times[args.tasks[0]], axis=0)
    print(f"{'T':>6} {'wall ms/level':>14} {'ratio':>6} {'CPU ms/level':>13} {'ratio':>6}  wall runs")
    for t in args.tasks:
        wall, cpu = np.median(times[t], axis=0)
        runs = " ".join(f"{w:.1f}" for w, _ in times[t])
        print(f"{t:>6} {wall:>14.2f} {wall / base[0]:>6.2f} {cpu:>13.2f} {cpu / base[1]:>6.2f}  {runs}")


if __name__ == "__main__":
    main()
