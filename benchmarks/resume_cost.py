"""Wall time of dispatched searches: what the per-level bookkeeping of a resumable search
costs when nothing fails (docs/resume.md).

Every owner barrier of a dispatched search sends the client the vertices it reached, and
the client keeps their levels (one array of n), so that a search that loses a worker can
resume from its last completed level. This runs the same dispatched searches
(``dispatch="tasks"``, a LocalCluster of two worker processes with one thread each, on
127.0.0.1) and prints their wall times around ``tb.bfs``; run it alternately with
PYTHONPATH on a tree with the bookkeeping and one without (e.g. the commit before it) and
compare the medians (the machine is shared: alternate several rounds).

    for i in 1 2 3; do for t in $BASE $PWD; do
        PYTHONPATH=$t python benchmarks/resume_cost.py --scale 14 --label $t; done; done
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from distributed import Client, LocalCluster

import taskbfs as tb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=14)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--searches", type=int, default=16)
    parser.add_argument("--direction", default="auto")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    graph = tb.kronecker(args.scale, seed=1)
    sources = tb.search_keys(graph, args.searches, seed=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client, tb.Runtime(client) as rt:
        def search(source):
            start = time.perf_counter()
            r = tb.bfs(graph, int(source), tasks=args.tasks, runtime=rt, dispatch="tasks",
                       direction=args.direction)
            return time.perf_counter() - start, len(r.levels)

        for source in sources[:3]:  # placement, compilation, warm-up
            search(source)
        times, levels = zip(*(search(s) for s in sources))
    print(json.dumps({"label": args.label, "scale": args.scale, "tasks": args.tasks,
                      "median_s": float(np.median(times)), "min_s": float(np.min(times)),
                      "levels": int(np.median(levels)), "times": [round(t, 4) for t in times]}))


if __name__ == "__main__":
    main()
