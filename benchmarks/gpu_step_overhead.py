"""The GPU step task's fixed host cost: where a small step's time goes, without Dask.

Returns (prints) per level of a BFS run by a plain loop over ``step_cuda`` (the GPU step
task's implementation, device cache included): direction, frontier size, ms per step, and
a cProfile of all the steps (host functions by own time), so that launch, copy and sync
costs show up one by one.
Approach: the level loop of ``benchmarks/plain_loop.py`` with ``step_cuda`` in place of
``step_smp``, on a Kronecker graph; the first search warms the device cache and the
kernels, the next ``--searches`` are profiled.

    python benchmarks/gpu_step_overhead.py --scale 16 --tasks 4 --direction top-down
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import taskbfs as tb
from taskbfs.bfs.placement import _slices
from taskbfs.bfs.state import advance, first_frontier
from taskbfs.bfs.steps import step_cuda
from taskbfs.graph import partition
from taskbfs.kernels.direction import BOTTOM_UP


def search(degrees, slices, bounds, source, direction, rows=None):
    frontier, summary = first_frontier(degrees, bounds, source, direction)
    while summary.frontier_size > 0:
        active = np.flatnonzero(summary.frontier_counts).tolist()
        found = []
        for t in active:
            start = time.perf_counter()
            found.append(step_cuda(slices[t], frontier))
            if rows is not None:
                rows.append((frontier.level, frontier.direction, int(summary.frontier_counts[t]),
                             time.perf_counter() - start))
        frontier, summary = advance(frontier, found, degrees)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--direction", default="top-down")
    parser.add_argument("--searches", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    graph = tb.kronecker(args.scale)
    parts = partition(graph, args.tasks)
    bounds = np.ascontiguousarray(parts.bounds, dtype=np.int64)
    slices = _slices(graph, parts, graph.token)
    keys = tb.search_keys(graph, args.searches + 1)
    degrees = graph.degrees()  # once: an O(n) pass, not part of a step
    search(degrees, slices, bounds, int(keys[0]), args.direction)  # warm-up
    rows = []
    profile = cProfile.Profile()
    profile.enable()
    for key in keys[1:]:
        search(degrees, slices, bounds, int(key), args.direction, rows)
    profile.disable()
    print(f"scale {args.scale}, T = {args.tasks}, direction {args.direction}, "
          f"{args.searches} searches; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'level':>5s} {'direction':>10s} {'frontier':>10s} {'ms / step':>10s}")
    for level, direction, size, seconds in rows[: len(rows) // args.searches]:
        print(f"{level:5d} {direction:>10s} {size:10d} {seconds * 1e3:10.3f}")
    small = [s for _l, d, n, s in rows if n <= 64 and d != BOTTOM_UP]
    if small:
        print(f"top-down steps with <= 64 frontier vertices: {len(small)}, median "
              f"{np.median(small) * 1e3:.3f} ms")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
