"""Task granularity: MTEPS against T, the search included in one task and dispatched.

Issue 22's sweep (the paper's Fig. 9): one Kronecker graph, ``--keys`` search keys, the
embedded runtime (``--threads`` worker threads, default every core), strategy ``cpu``;
for each T of ``--tasks`` and each ``--dispatch`` mode, one untimed warm-up search, then
``--repeats`` rounds over the keys. MTEPS = traversed edges of a round / wall seconds
around ``tb.bfs`` (the user's stopwatch). Rounds interleave the modes and up to four T
values (the placements a runtime keeps: more would place the graph again in every
round), so that machine noise hits them alike; each row gives the median MTEPS of the
rounds, its spread (min..max), and the ratio to the best T of its mode.

    python benchmarks/granularity.py --scale 21 --keys 4 --tasks 1 4 16 64 128 256 \
        --dispatch auto tasks --repeats 3 [--threads 16] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb

#: T values whose rounds interleave: a runtime keeps the slices of 4 placements of a graph
#: (one per T), so a round over more T values would place the graph again in every round.
GROUP = 4


def sweep(graph, keys, tasks, dispatches, repeats, runtime, strategy="cpu", group_size=GROUP):
    """``{(dispatch, T): [MTEPS of each round]}``: T values in groups of ``group_size``,
    the rounds of a group interleaved."""
    runs = {(d, t): [] for d in dispatches for t in tasks}
    for first in range(0, len(tasks), group_size):
        group = [(d, t) for d in dispatches for t in tasks[first:first + group_size]]
        for d, t in group:  # warm-up: slices placed, kernels loaded
            tb.bfs(graph, int(keys[0]), tasks=t, strategy=strategy, runtime=runtime, dispatch=d)
        for _ in range(repeats):
            for d, t in group:
                runs[d, t].append(_round(graph, keys, t, d, strategy, runtime))
    return runs


def _round(graph, keys, tasks, dispatch, strategy, runtime) -> float:
    """MTEPS of one search per key: traversed edges over wall seconds around ``tb.bfs``."""
    edges, seconds = 0, 0.0
    for key in keys:
        start = time.perf_counter()
        r = tb.bfs(graph, int(key), tasks=tasks, strategy=strategy, runtime=runtime,
                   dispatch=dispatch)
        seconds += time.perf_counter() - start
        edges += r.traversed_edges
    return edges / seconds / 1e6


def table(runs) -> list[dict]:
    rows = []
    for d in dict.fromkeys(d for d, _ in runs):
        medians = {t: float(np.median(v)) for (dd, t), v in runs.items() if dd == d}
        best = max(medians.values())
        for t, m in medians.items():
            v = runs[d, t]
            rows.append({"dispatch": d, "tasks": t, "mteps": m, "min": min(v), "max": max(v),
                         "of_best": m / best})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=21)
    parser.add_argument("--edgefactor", type=int, default=16)
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 2, 4, 16, 64, 128, 256])
    parser.add_argument("--dispatch", nargs="+", default=["auto", "tasks"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--group", type=int, default=GROUP,
                        help="T values whose rounds interleave (default 4: more place the graph "
                             "again in every round, as the sweeps before session 13 did)")
    args = parser.parse_args()
    graph = tb.kronecker(args.scale, args.edgefactor, seed=1)
    keys = tb.search_keys(graph, args.keys, seed=1)
    with tb.Runtime(threads=args.threads, dashboard_address=None) as rt:
        runs = sweep(graph, keys, args.tasks, args.dispatch, args.repeats, rt,
                     group_size=args.group)
    rows = table(runs)
    print(f"scale {args.scale}, ef {args.edgefactor}, {args.keys} keys, threads "
          f"{args.threads or 'all'}, {args.repeats} rounds, T values interleaved by "
          f"{args.group}; MTEPS median (min..max), x best")
    for r in rows:
        print(f"  {r['dispatch']:>5} T={r['tasks']:>4}: {r['mteps']:8.0f} "
              f"({r['min']:.0f}..{r['max']:.0f})  {r['of_best']:.2f}")
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
