"""Runtime cost of one BFS level, by number of active tasks, with next to no kernel work.

The graph is a comb: the source joins the heads of P paths of L vertices, path p owning
vertices [1 + p L, 1 + (p + 1) L). With T = P tasks cut by vertex count, every level has
exactly one frontier vertex in every task, so a level costs T step tasks + one barrier
and its time is almost all runtime overhead (task submission, scheduling, messages).
Also prints where one level's time goes for T = 1 (the hops of the level chain). Every
step and barrier is a Dask task of its own (``bfs(..., dispatch="tasks")``) unless
``--dispatch auto`` is given: then, on a cluster where one worker holds the graph (the
embedded one), the whole comb runs as one task with its levels included, and the table
shows what an included level costs instead. ms / level is the call's wall time
(``result.elapsed``) over its levels.

    python benchmarks/level_overhead.py --tasks 1 8 32 128 --length 200
    python benchmarks/level_overhead.py --tasks 1 8 --dispatch auto
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import taskbfs as tb


def comb(paths: int, length: int) -> tb.Graph:
    heads = 1 + np.arange(paths) * length
    along = (heads[:, None] + np.arange(length - 1)[None, :]).ravel()
    src = np.concatenate([np.zeros(paths, dtype=np.int64), along])
    dst = np.concatenate([heads, along + 1])
    return tb.Graph.from_edges(src, dst, num_vertices=1 + paths * length)


def level_hops(result) -> np.ndarray:
    """Median ms of: barrier end → next step start, step, step end → barrier start, barrier."""
    trace = result.trace.groupby("level").agg(start=("start", "min"), stop=("stop", "max"))
    levels = result.levels.set_index("level")
    rows = []
    for level in levels.index[2:-2]:
        barrier_stop = levels.loc[level, "stop"]
        barrier_start = barrier_stop - levels.loc[level, "barrier_seconds"]
        rows.append((trace.loc[level, "start"] - levels.loc[level, "start"],
                     trace.loc[level, "stop"] - trace.loc[level, "start"],
                     barrier_start - trace.loc[level, "stop"],
                     barrier_stop - barrier_start))
    return np.median(np.array(rows), axis=0) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--length", type=int, default=200)
    parser.add_argument("--strategy", default="hybrid", choices=("hybrid", "fixed", "cpu", "gpu"),
                        help="placement strategy (gpu: every step on the GPU worker)")
    parser.add_argument("--threads", type=int, default=None,
                        help="embedded cluster only: CPU worker threads (default: all cores)")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="Python's GIL switch interval in ms (default: Python's, 5 ms)")
    parser.add_argument("--dispatch", default="tasks", choices=("tasks", "auto"),
                        help="bfs's dispatch (default tasks: every level as T step tasks and "
                             "a barrier task, which is what this measures; auto: the whole "
                             "search in one task where the runtime can include it)")
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1e3)
    runtime = (tb.Runtime(args.scheduler) if args.scheduler else tb.Runtime(threads=args.threads))
    with runtime as rt:
        print(f"cluster: {rt.resources()}; strategy {args.strategy}; dispatch {args.dispatch}; "
              f"GIL switch interval "
              f"{sys.getswitchinterval() * 1e3:g} ms; {time.strftime('%Y-%m-%d %H:%M')}")
        print(f"{'T':>5s}{'ms / level':>12s}{'ms / task':>11s}")
        base = None
        for tasks in args.tasks:
            graph = comb(tasks, args.length)
            run = dict(tasks=tasks, runtime=rt, direction="top-down", balance="vertices",
                       strategy=args.strategy, dispatch=args.dispatch)
            tb.bfs(graph, 0, **run)  # warm-up: compilation, placement
            result = tb.bfs(graph, 0, **run)
            per_level = result.elapsed / result.num_levels * 1e3
            base = per_level if base is None else base
            per_task = (per_level - base) / (tasks - 1) if tasks > 1 else float("nan")
            print(f"{tasks:5d}{per_level:12.2f}{per_task:11.3f}")
            if tasks == 1:
                hops = level_hops(result)
        print("one level at T = 1, median ms: barrier end -> step start {:.2f} | step {:.2f} | "
              "step end -> barrier start {:.2f} | barrier {:.2f}".format(*hops))


if __name__ == "__main__":
    main()
