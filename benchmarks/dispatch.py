"""A search as one task with its levels included, against every level dispatched, paired per key.

``tb.bfs(..., dispatch="auto")`` lets the runtime run the whole search as one task on the
worker that holds the graph (``Runtime.include_site``; on the embedded cluster it does),
its steps and barriers included; ``dispatch="tasks"`` makes every step and barrier a Dask
task of its own. For each search key the searches with each setting run back to back, in
an order that alternates from key to key (so that drift on a shared machine does not
favour one setting), on the embedded default cluster (or ``--scheduler``). Times are the
wall time around the ``tb.bfs`` call (what its user waits; ``r.elapsed`` is the same
window measured inside). Prints, per setting: median ms per search, the median of
``r.search_seconds`` (first submission to the result in hand), harmonic-mean MTEPS over
the wall times, the median per-key ratio of its wall time to the first setting's, and how
many levels had every step included; then the level table of the first key for each
setting. Every search's distances are checked against the first setting's.

    python benchmarks/dispatch.py --scale 20 --keys 16 --tasks 2
    python benchmarks/dispatch.py --scale 12 --keys 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb


def harmonic_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return len(values) / np.sum(1.0 / values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--edgefactor", type=int, default=16)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=None, help="T (default: bfs's default)")
    parser.add_argument("--dispatch", nargs="+", default=["auto", "tasks"],
                        choices=["auto", "tasks"], help="settings to compare (the first is the "
                                                        "reference of the ratio)")
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--direction", default="auto")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scheduler", default=None, help="a scheduler address (default: the "
                                                          "embedded cluster)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    graph = tb.kronecker(args.scale, edgefactor=args.edgefactor, seed=args.seed)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
    print(f"scale {args.scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges "
          f"(built in {time.perf_counter() - t0:.1f} s), {len(keys)} keys, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    runtime = tb.Runtime(args.scheduler) if args.scheduler else tb.Runtime()
    with runtime as rt:
        run = dict(tasks=args.tasks, strategy=args.strategy, direction=args.direction,
                   runtime=rt)

        def search(key, dispatch):
            start = time.perf_counter()
            r = tb.bfs(graph, key, dispatch=dispatch, **run)
            return r, time.perf_counter() - start

        for dispatch in args.dispatch:  # warm-up: compilation, placement
            search(keys[0], dispatch)
        tasks = tb.default_tasks(rt, args.strategy) if args.tasks is None else args.tasks
        print(f"cluster: {rt.resources()}; T = {tasks}; strategy {args.strategy}, "
              f"direction {args.direction}")
        wall = {d: [] for d in args.dispatch}
        inner = {d: [] for d in args.dispatch}
        teps = {d: [] for d in args.dispatch}
        inside = {d: [] for d in args.dispatch}
        first_levels = {}
        for i, key in enumerate(keys):
            order = args.dispatch if i % 2 == 0 else args.dispatch[::-1]
            reference = None
            for dispatch in order:
                r, seconds = search(key, dispatch)
                if reference is None:
                    reference = r.distances
                elif not np.array_equal(reference, r.distances):
                    raise SystemExit(f"key {key}: dispatch {dispatch} changed the distances")
                wall[dispatch].append(seconds)
                inner[dispatch].append(r.search_seconds)
                teps[dispatch].append(r.traversed_edges / seconds)
                steps = r.trace.groupby("level")["included"].all()
                inside[dispatch].append((int(steps.sum()), len(steps)))
                if i == 0:
                    first_levels[dispatch] = r.levels
    base = np.asarray(wall[args.dispatch[0]])
    print(f"\n{'dispatch':>10s}{'ms / search':>13s}{'search_seconds ms':>19s}{'MTEPS hmean':>13s}"
          f"{'time ratio':>12s}{'levels included / all':>24s}")
    for dispatch in args.dispatch:
        ratio = float(np.median(np.asarray(wall[dispatch]) / base))
        included = np.sum([a for a, _ in inside[dispatch]])
        total = np.sum([b for _, b in inside[dispatch]])
        print(f"{dispatch:>10s}{np.median(wall[dispatch]) * 1e3:13.1f}"
              f"{np.median(inner[dispatch]) * 1e3:19.1f}"
              f"{harmonic_mean(teps[dispatch]) / 1e6:13.1f}{ratio:12.3f}"
              f"{f'{included} / {total}':>24s}")
    for dispatch in args.dispatch:
        print(f"\nfirst key, dispatch={dispatch}:")
        print(first_levels[dispatch][["level", "direction", "frontier_size", "frontier_edges",
                                      "tasks", "start", "stop"]].to_string(index=False))


if __name__ == "__main__":
    main()
