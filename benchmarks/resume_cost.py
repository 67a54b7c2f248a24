"""What the bookkeeping of a resumable search costs when nothing fails (docs/resume.md).

Every owner barrier of a dispatched search sends the client the vertices it reached (4
bytes a vertex, in its report), and the client keeps their levels (one array of n), so
that a search that loses a worker can resume from its last completed level. This runs
the same dispatched searches (``dispatch="tasks"``, a LocalCluster of two worker
processes with one thread each, on 127.0.0.1) with the bookkeeping and without it,
alternating search by search in one process, and prints the wall times around
``tb.bfs``. "Without" is a stand-in made here, not a setting: the barriers' reached ids
replaced by nothing (on the workers) and the client's copy into its array skipped; a
search so run could not resume.

    PYTHONPATH=$PWD python benchmarks/resume_cost.py --scale 14 --pairs 40
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from distributed import Client, LocalCluster

import taskbfs as tb
from taskbfs.bfs import owners


def _bookkeeping(on: bool) -> None:
    """Turn the barriers' reached ids (and the client's copy) on or off in this process
    (the originals kept in the module the first time, before any change)."""
    saved = vars(owners)
    reached = saved.setdefault("_bench_reached", owners._reached_bytes)
    complete = saved.setdefault("_bench_complete", owners.KeptLevels.complete)
    owners._reached_bytes = reached if on else _no_ids
    owners.KeptLevels.complete = complete if on else _complete_without_levels


def _no_ids(front, num_vertices: int) -> bytes:
    return b""


def _complete_without_levels(self, summary, reached, exchange=None) -> None:
    self.summaries.append(summary)
    if exchange is not None:
        self.exchange.append(exchange)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=14)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--direction", default="auto")
    args = parser.parse_args()
    graph = tb.kronecker(args.scale, seed=1)
    sources = tb.search_keys(graph, 8, seed=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client, tb.Runtime(client) as rt:
        def search(source, on: bool) -> tuple[float, int]:
            client.run(_bookkeeping, on)
            _bookkeeping(on)
            start = time.perf_counter()
            r = tb.bfs(graph, int(source), tasks=args.tasks, runtime=rt, dispatch="tasks",
                       direction=args.direction)
            return time.perf_counter() - start, len(r.levels)

        for source in sources[:4]:  # placement, compilation, warm-up
            search(source, True)
            search(source, False)
        times = {True: [], False: []}
        levels = []
        for i in range(args.pairs):
            source = sources[i % len(sources)]
            for on in ((True, False) if i % 2 else (False, True)):
                seconds, depth = search(source, on)
                times[on].append(seconds)
            levels.append(depth)
    with_, without = np.array(times[True]), np.array(times[False])
    print(json.dumps({
        "scale": args.scale, "tasks": args.tasks, "pairs": args.pairs,
        "levels_median": float(np.median(levels)),
        "with_median_s": float(np.median(with_)), "without_median_s": float(np.median(without)),
        "ratio_of_medians": float(np.median(with_) / np.median(without)),
        "median_of_pair_ratios": float(np.median(with_ / without)),
        "with_min_s": float(with_.min()), "without_min_s": float(without.min())}))


if __name__ == "__main__":
    main()
