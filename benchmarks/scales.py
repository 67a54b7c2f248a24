"""taskbfs on Graph500 Kronecker graphs against scipy, and where the time goes.

For each scale: generate the graph, pick search keys (degree >= 1), run taskbfs on the
embedded default cluster for several task counts T and scipy's breadth_first_order on the
same keys, check that distances agree, and print MTEPS (Graph500 traversed edges / time,
harmonic mean and median over the keys; "x scipy" compares medians) and the share of each
search's time spent outside the kernels (no step and no barrier running: the client's
work, task submission, scheduling, messages, the result's assembly and return). A search's
time is ``result.elapsed``, the whole ``tb.bfs`` call.

    python benchmarks/scales.py --scales 18 20 22 --tasks 8 32 128 --keys 8
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy.sparse.csgraph import breadth_first_order

import taskbfs as tb


def busy_seconds(result) -> float:
    """Length of the union of all step-task and barrier intervals of one search."""
    intervals = list(zip(result.trace["start"], result.trace["stop"], strict=True))
    intervals += [(row.stop - row.barrier_seconds, row.stop) for row in result.levels.itertuples()]
    intervals.sort()
    total, end = 0.0, -np.inf
    for start, stop in intervals:
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def scipy_search(matrix, source):
    start = time.perf_counter()
    # The CSR is already symmetric: directed=False would re-symmetrise it on every call
    # (3.4x slower at scale 20), which is not the search we mean to compare with.
    order = breadth_first_order(matrix, source, directed=True, return_predecessors=False)
    return time.perf_counter() - start, order


def harmonic_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return len(values) / np.sum(1.0 / values)


def run_scale(scale, task_counts, num_keys, runtime, seed):
    t0 = time.perf_counter()
    graph = tb.kronecker(scale, edgefactor=16, seed=seed)
    build = time.perf_counter() - t0
    keys = tb.search_keys(graph, num_keys, seed=seed)
    matrix = graph.to_scipy()
    print(f"\nscale {scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges "
          f"(generated + built in {build:.1f} s), {len(keys)} keys")
    tb.bfs(graph, int(keys[0]), tasks=task_counts[0], runtime=runtime)  # warm-up: JIT, placement
    scipy_teps, reference = [], {}
    for key in keys:
        seconds, order = scipy_search(matrix, int(key))
        edges = graph.degrees()[order].sum() // 2
        scipy_teps.append(edges / seconds)
        reference[int(key)] = order.size
    rows = [("scipy breadth_first_order", harmonic_mean(scipy_teps) / 1e6,
             float(np.median(scipy_teps)) / 1e6, float("nan"), float("nan"))]
    for tasks in task_counts:
        tb.bfs(graph, int(keys[0]), tasks=tasks, runtime=runtime)  # place this T's partitions
        teps, outside, levels = [], [], []
        for key in keys:
            result = tb.bfs(graph, int(key), tasks=tasks, runtime=runtime)
            assert result.reached == reference[int(key)], "taskbfs and scipy disagree"
            teps.append(result.teps)
            outside.append(1.0 - busy_seconds(result) / result.elapsed)
            levels.append(result.num_levels)
        rows.append((f"taskbfs T={tasks}", harmonic_mean(teps) / 1e6, float(np.median(teps)) / 1e6,
                     float(np.mean(outside)), float(np.mean(levels))))
    print(f"{'':28s}{'MTEPS hmean':>12s}{'median':>9s}{'x scipy':>9s}{'outside kernels':>17s}"
          f"{'levels':>8s}")
    base = rows[0][2]
    for name, hmean, median, share, levels in rows:
        share_text = "" if np.isnan(share) else f"{100 * share:.0f}%"
        level_text = "" if np.isnan(levels) else f"{levels:.1f}"
        print(f"{name:28s}{hmean:12.1f}{median:9.1f}{median / base:9.2f}{share_text:>17s}"
              f"{level_text:>8s}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[18, 20, 22])
    parser.add_argument("--tasks", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"{__import__('os').cpu_count()} cores; date {time.strftime('%Y-%m-%d')}")
    with tb.Runtime(args.scheduler) as rt:
        print(f"cluster: {rt.resources()}")
        for scale in args.scales:
            run_scale(scale, args.tasks, args.keys, rt, args.seed)


if __name__ == "__main__":
    main()
