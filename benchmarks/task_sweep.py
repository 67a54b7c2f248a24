"""Cheap tasks: GTEPS against T for the hybrid and gpu strategies, as the user times them.

Issue 42's target: on one GPU worker (the embedded runtime), T = 128 at >= 0.8x the GTEPS
of T = 1. One Kronecker graph per scale, ``--keys`` search keys; for each strategy and T,
one untimed warm-up search (the graph placed, the kernels loaded), then ``--repeats``
rounds over the keys, T values interleaved within a round so that machine noise hits them
alike, in groups of at most four with T = 1 in each (a runtime keeps the placements of four
T values of a graph: more would place it again in every round); each T's ratio is to the
T = 1 of its group. GTEPS = traversed edges of a round / wall seconds around ``tb.bfs``. Every search's
distances are compared with T = 1's for the same key (any difference fails the run).

    python benchmarks/task_sweep.py --scale 22 24 --keys 4 --tasks 1 2 4 16 64 128 \
        --strategies hybrid gpu --repeats 3 [--csv out.csv]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb

#: T values a round interleaves (T = 1 among them): the placements a runtime keeps.
GROUP = 4


def sweep(graph, keys, tasks, strategy, repeats, runtime) -> dict:
    """``{T: (GTEPS of each round, median GTEPS of its group's T = 1)}``, checking every
    search against T = 1's distances."""
    expected = {int(k): tb.bfs(graph, int(k), tasks=1, strategy=strategy,
                               runtime=runtime).distances for k in keys}
    others = [t for t in tasks if t != 1]
    groups = [[1, *others[i:i + GROUP - 1]] for i in range(0, max(len(others), 1), GROUP - 1)]
    result = {}
    for group in groups:
        runs = {t: [] for t in group}
        for t in group:  # warm-up: slices placed, kernels loaded
            tb.bfs(graph, int(keys[0]), tasks=t, strategy=strategy, runtime=runtime)
        for _ in range(repeats):
            for t in group:
                runs[t].append(_round(graph, keys, t, strategy, runtime, expected))
        one = float(np.median(runs[1]))
        result.update({t: (v, one) for t, v in runs.items() if t not in result})
    return result


def _round(graph, keys, tasks, strategy, runtime, expected) -> float:
    """GTEPS of one search per key: traversed edges over wall seconds around ``tb.bfs``."""
    edges, seconds = 0, 0.0
    for key in keys:
        start = time.perf_counter()
        r = tb.bfs(graph, int(key), tasks=tasks, strategy=strategy, runtime=runtime)
        seconds += time.perf_counter() - start
        edges += r.traversed_edges
        if not np.array_equal(r.distances, expected[int(key)]):
            raise AssertionError(f"T={tasks} {strategy} key {key}: distances differ from T=1")
    return edges / seconds / 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, nargs="+", default=[22])
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 2, 4, 16, 64, 128])
    parser.add_argument("--strategies", nargs="+", default=["hybrid", "gpu"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--csv")
    args = parser.parse_args(argv)
    rows = []
    with tb.Runtime() as rt:
        for scale in args.scale:
            start = time.perf_counter()
            g = tb.kronecker(scale=scale, edgefactor=16, seed=1)
            print(f"scale {scale}: {g.num_vertices} vertices, {g.num_arcs} arcs, built in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
            keys = tb.graph500.search_keys(g, args.keys, seed=2)
            for strategy in args.strategies:
                runs = sweep(g, keys, args.tasks, strategy, args.repeats, rt)
                for t, (values, one) in sorted(runs.items()):
                    median = float(np.median(values))
                    rows.append({"scale": scale, "strategy": strategy, "tasks": t,
                                 "gteps": median, "min": min(values), "max": max(values),
                                 "vs_one_task": median / one})
                    print(f"scale {scale} {strategy:6s} T={t:4d}: {median:7.2f} GTEPS "
                          f"({min(values):.2f}..{max(values):.2f}), {median / one:.2f}x "
                          f"T=1", flush=True)
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
