"""One search's wall time, level by level: steps, barriers, and the gaps between them.

Returns (prints) for each (scale, T, strategy, direction) the timeline of the last of
``--keys`` searches (the first is a warm-up): per level its direction, frontier size,
then in milliseconds since the previous barrier ended: when the first step started
("gap"), how long the steps ran (first start to last stop), their kernels (CUDA events),
the wait from the last step to the barrier's end minus the barrier ("hop"), the barrier
itself; and at the end the result assembly and what is left of the call
(``result.elapsed``, from ``tb.bfs``'s entry to its return: the client's work before the
first submission, submission, the first level, messages, the result's return).
Approach: ``tb.bfs`` on the embedded default cluster (where a search is one task, its
steps and barriers included; ``--dispatch tasks``: every one a Dask task); times from
``result.trace`` and ``result.levels`` (clocks of the worker threads, zero at the call's
entry; the cluster is in-process).

    python benchmarks/search_timeline.py --scale 20 --tasks 2 --strategy cpu
    python benchmarks/search_timeline.py --scale 20 --tasks 2 --strategy cpu --dispatch tasks
    python benchmarks/search_timeline.py --scale 24 --tasks 1 --strategy gpu --direction top-down
"""

from __future__ import annotations

import argparse

import numpy as np

import taskbfs as tb


def level_rows(result) -> list[dict]:
    """Per level: direction, frontier, and the ms of its phases (see the module docstring)."""
    trace, levels = result.trace, result.levels
    rows = []
    for lv in levels.itertuples():
        # the level's steps, as tasks or included in the search task
        steps = trace[(trace["level"] == lv.level) & (trace["name"] == "bfs_step")]
        begin = lv.start
        barrier_start = lv.stop - lv.barrier_seconds
        if len(steps):
            first, last = steps["start"].min(), steps["stop"].max()
            gap, run = first - begin, last - first
            hop = barrier_start - last
        else:  # no step traced
            gap = run = np.nan
            hop = barrier_start - begin
        kernel = float(steps["kernel_seconds"].sum())
        devices = "/".join(sorted(set(steps["device"]))) if len(steps) else "-"
        rows.append({"level": lv.level, "dir": lv.direction, "frontier": lv.frontier_size,
                     "edges": lv.frontier_edges, "dev": devices, "steps": len(steps), "gap": gap, "run": run, "kernel": kernel, "hop": hop,
                     "barrier": lv.barrier_seconds, "total": lv.stop - begin})
    return rows


def print_timeline(result) -> None:
    rows = level_rows(result)
    print(f"  {'lvl':>3} {'dir':>3} {'frontier':>10} {'edges':>12} {'dev':>8} {'steps':>5} "
          f"{'gap':>7} {'run':>7} "
          f"{'kernel':>7} {'hop':>7} {'barrier':>7} {'total':>7}   (ms)")
    for r in rows:
        print(f"  {r['level']:>3} {r['dir'][:3]:>3} {r['frontier']:>10,} {r['edges']:>12,} "
              f"{r['dev']:>8} {r['steps']:>5} "
              + " ".join(f"{1e3 * r[k]:7.2f}" for k in ("gap", "run", "kernel", "hop", "barrier",
                                                      "total")))
    levels_ms = 1e3 * sum(r["total"] for r in rows)
    first_start = 1e3 * result.levels["start"].min()
    print(f"  call {1e3 * result.elapsed:.1f} ms (search {1e3 * result.search_seconds:.1f}): "
          f"before level 0's barrier "
          f"{first_start:.1f}, levels {levels_ms:.1f}, assembly {1e3 * result.assembly_seconds:.1f}, "
          f"rest {1e3 * result.elapsed - first_start - levels_ms - 1e3 * result.assembly_seconds:.1f}"
          f"; {result.mteps:.0f} MTEPS")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, nargs="+", default=[2])
    parser.add_argument("--strategy", default="cpu")
    parser.add_argument("--direction", default="auto")
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--dispatch", default="auto", choices=["auto", "tasks"])
    parser.add_argument("--lam", type=float, default=None, help="λ (default: the setting)")
    args = parser.parse_args(argv)

    graph = tb.kronecker(args.scale)
    keys = tb.search_keys(graph, args.keys, seed=1)
    print(f"scale {args.scale}: {graph.num_vertices:,} vertices, {graph.num_arcs:,} arcs; "
          f"strategy {args.strategy}, direction {args.direction}")
    for tasks in args.tasks:
        options = {"tasks": tasks, "strategy": args.strategy, "direction": args.direction,
                   "dispatch": args.dispatch, "lam": args.lam}
        tb.bfs(graph, int(keys[0]), **options)  # warm-up: slices placed, kernels compiled
        elapsed, slowest = [], None
        for key in keys[1:]:  # at most two results held at a time, as a loop over keys would
            result = tb.bfs(graph, int(key), **options)
            elapsed.append(result.elapsed)
            if slowest is None or result.elapsed > slowest.elapsed:
                slowest = result
        print(f"\nT = {tasks}: searches {np.round(1e3 * np.array(elapsed), 1).tolist()} ms")
        print("the last search:")
        print_timeline(result)
        if slowest is not result:
            print("the slowest search:")
            print_timeline(slowest)


if __name__ == "__main__":
    main()
