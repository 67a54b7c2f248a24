"""Where a search's host time goes on a GPU worker: a cProfile of ``run_search`` (the search
task's body) called in this thread, or with ``--call`` of ``tb.bfs`` on the embedded
runtime (the client's side too: checks, placement lookups, the resident call and its
answer, the result), warm, on one graph.

The search task runs on a worker thread that cProfile of the caller cannot see; calling
its body here shows the level loop itself (placement, kernel launches, read-backs, the
barrier's bookkeeping). Kernels run asynchronously: their time lands on the call that
waits for them (a read-back). Compare two T to see what grows with the tasks.

    python benchmarks/device/level_profile.py --scale 24 --tasks 1 --strategy hybrid --searches 8
    python benchmarks/device/level_profile.py --scale 22 --tasks 128 --call
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import taskbfs as tb
from taskbfs import config
from taskbfs.runtime import Policy
from taskbfs.search.included import run_search
from taskbfs.search.warmup import _bundle


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--strategy", default="gpu")
    parser.add_argument("--searches", type=int, default=8)
    parser.add_argument("--lines", type=int, default=45)
    parser.add_argument("--call", action="store_true", help="profile tb.bfs, not the task's body")
    args = parser.parse_args(argv)
    keys, search = searches(args.scale, args.tasks, args.strategy, args.searches, args.call)
    for source in keys:
        search(source)  # warm: kernels compiled and loaded, graph and buffers on the device
    walls = []
    profile = cProfile.Profile()
    for source in keys:
        start = time.perf_counter()
        profile.enable()
        search(source)
        profile.disable()
        walls.append((time.perf_counter() - start) * 1e3)
    what = "tb.bfs" if args.call else "run_search"
    print(f"scale {args.scale}, {args.strategy}, T = {args.tasks}: {what} ms "
          f"{[round(w, 2) for w in walls]} (median {np.median(walls):.2f})")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.lines)
    stats.sort_stats("cumulative").print_stats(args.lines)


def searches(scale: int, tasks: int, strategy: str, count: int, call: bool):
    """``(sources, search)``: ``count`` sources of a scale-``scale`` Kronecker graph spread
    over its vertex ids, and :func:`searcher` over that graph."""
    graph = tb.kronecker(scale, 16, seed=1)
    degrees = graph.degrees()
    keys = np.flatnonzero(degrees)[:: max(1, graph.num_vertices // 97)][:count]
    return keys, searcher(graph, degrees, tasks, strategy, call)


def searcher(graph, degrees, tasks: int, strategy: str, call: bool):
    """``search(source)``: ``tb.bfs`` on the embedded runtime (``call``), or the search
    task's body (``run_search``) called in this thread, on the GPU worker's device (the
    CPU worker's for the cpu strategy)."""
    if call:
        return lambda source: tb.bfs(graph, int(source), tasks=tasks, strategy=strategy)
    bundle, bounds = _bundle(graph, tasks)
    policy = Policy(strategy)
    device = "smp" if strategy == "cpu" else "cuda"

    def search(source):
        init = {"bounds": bounds, "sources": np.array([source], dtype=np.int64),
                "direction_mode": "auto", "total_edges": graph.num_arcs,
                "alpha": config.get("direction.alpha"), "beta": config.get("direction.beta")}
        return run_search(bundle, degrees, init=init, policy=policy, device=device)
    return search


if __name__ == "__main__":
    main()
