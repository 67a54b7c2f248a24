"""Runtime cost of one BFS level, by number of active tasks, with next to no kernel work.

The graph is a comb: the source joins the heads of P paths of L vertices, path p owning
vertices [1 + p L, 1 + (p + 1) L). With T = P tasks cut by vertex count, every level has
exactly one frontier vertex in every task, so a level costs T step tasks + one barrier
and its time is almost all runtime overhead (task submission, scheduling, messages).
Also prints where one level's time goes for T = 1 (the hops of the level chain). Small
levels (``bfs(..., small_level_edges=)``) are off unless asked for: with them the whole
comb would run inside one task.

    python benchmarks/level_overhead.py --tasks 1 8 32 128 --length 200
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
    parser.add_argument("--lookahead", type=int, default=None,
                        help="levels submitted ahead (default: bfs's default)")
    parser.add_argument("--strategy", default="hybrid", choices=("hybrid", "fixed", "cpu", "gpu"),
                        help="placement strategy (gpu: every step on the GPU worker)")
    parser.add_argument("--threads", type=int, default=None,
                        help="embedded cluster only: CPU worker threads (default: all cores)")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="Python's GIL switch interval in ms (default: Python's, 5 ms)")
    parser.add_argument("--gpu-barrier", action="store_true",
                        help="a level's barrier on the GPU worker when all of its steps ran "
                             "there (config.BARRIER_FOLLOWS_GPU_STEPS)")
    parser.add_argument("--small-level-edges", type=int, default=0,
                        help="bfs's small_level_edges (default 0: every level as T steps and "
                             "a barrier, which is what this measures; the comb's levels are "
                             "all small)")
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args()
    if args.gpu_barrier:
        tb.config.BARRIER_FOLLOWS_GPU_STEPS = True
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1e3)
    runtime = (tb.Runtime(args.scheduler) if args.scheduler else tb.Runtime(threads=args.threads))
    with runtime as rt:
        print(f"cluster: {rt.resources()}; strategy {args.strategy}; barrier follows GPU steps: "
              f"{tb.config.BARRIER_FOLLOWS_GPU_STEPS}; GIL switch interval "
              f"{sys.getswitchinterval() * 1e3:g} ms; {time.strftime('%Y-%m-%d %H:%M')}")
        print(f"{'T':>5s}{'ms / level':>12s}{'ms / task':>11s}")
        base = None
        for tasks in args.tasks:
            graph = comb(tasks, args.length)
            run = dict(tasks=tasks, runtime=rt, direction="top-down", balance="vertices",
                       lookahead=args.lookahead, strategy=args.strategy,
                       small_level_edges=args.small_level_edges)
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
