"""Searches of a graph built on W worker processes: wall time per search and level.

Returns
    One line per dispatch mode (``--dispatch``, default both: "auto", each owner running
    the levels in one task and trading pieces worker to worker, and "tasks", every level
    dispatched; keys interleaved, so the two are paired): W, the direction mode, the
    median wall time around ``tb.bfs`` over ``--keys`` Graph500 keys × ``--repeats``, and
    the median of each search's wall time divided by its levels (ms per level).
Approach
    A ``LocalCluster`` of W one-thread worker processes on 127.0.0.1; the Kronecker graph
    generated on them (``tb.kronecker(scale, runtime=rt)``: its ranges stay on the workers,
    so every level is dispatched: steps, owner barriers, the client's round trip); cpu
    strategy; two untimed searches first. What it measures is the coordination of a
    dispatched level on several owners (tasks per level, bytes to the client), which is
    the same for CPU and GPU owners; ``benchmarks/multi_gpu.py`` measures GPU workers.
    Compare two versions by alternating runs (``PYTHONPATH`` of each checkout):

    PYTHONPATH=$PWD python benchmarks/owner_workers.py --workers 4 --direction auto
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--direction", default="auto", choices=("auto", "top-down", "bottom-up"))
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dispatch", nargs="+", default=["auto", "tasks"],
                        choices=("auto", "tasks"))
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    import taskbfs as tb

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client, tb.Runtime(client) as rt:
        graph = tb.kronecker(args.scale, 16, seed=1, runtime=rt)
        keys = tb.search_keys(graph, args.keys).tolist()
        for dispatch in args.dispatch:
            for source in keys[:2]:
                tb.bfs(graph, source, runtime=rt, strategy="cpu", direction=args.direction,
                       dispatch=dispatch)
        walls = {d: [] for d in args.dispatch}
        levels = {d: [] for d in args.dispatch}
        for _ in range(args.repeats):
            for source in keys:
                for dispatch in args.dispatch:
                    start = time.perf_counter()
                    r = tb.bfs(graph, source, runtime=rt, strategy="cpu",
                               direction=args.direction, dispatch=dispatch)
                    walls[dispatch].append(time.perf_counter() - start)
                    levels[dispatch].append(len(r.levels))
        for dispatch in args.dispatch:
            per_level = np.array(walls[dispatch]) / np.array(levels[dispatch])
            print(f"W={args.workers} scale={args.scale} direction={args.direction} "
                  f"dispatch={dispatch} ranges={r.num_tasks} median "
                  f"{np.median(walls[dispatch]):.4f} s, {1000 * np.median(per_level):.2f} ms "
                  f"a level", flush=True)

if __name__ == "__main__":
    main()
