"""Where a search's wall time goes outside its task: a cProfile of ``tb.bfs`` in the
caller's thread (the client's side: checks, placement lookups, the resident call and its
answer, the result), warm, on one graph. Compare two T to see what grows with the tasks;
``level_profile.py`` profiles the task's own body.

    python benchmarks/device/call_profile.py --scale 22 --tasks 128 --strategy gpu
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import taskbfs as tb


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--strategy", default="gpu")
    parser.add_argument("--searches", type=int, default=8)
    parser.add_argument("--lines", type=int, default=40)
    args = parser.parse_args(argv)
    graph = tb.kronecker(args.scale, 16, seed=1)
    keys = [int(k) for k in tb.search_keys(graph, args.searches, seed=2)]
    kw = dict(tasks=args.tasks, strategy=args.strategy)
    for key in keys:  # warm: graph placed, kernels loaded
        tb.bfs(graph, key, **kw)
    walls, profile = [], cProfile.Profile()
    for key in keys:
        start = time.perf_counter()
        profile.enable()
        tb.bfs(graph, key, **kw)
        profile.disable()
        walls.append((time.perf_counter() - start) * 1e3)
    print(f"scale {args.scale}, {args.strategy}, T = {args.tasks}: tb.bfs ms "
          f"{[round(w, 2) for w in walls]} (median {np.median(walls):.2f})")
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(args.lines)
    stats.sort_stats("tottime").print_stats(args.lines)


if __name__ == "__main__":
    main()
