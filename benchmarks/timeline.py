"""Where does one search's time go, level by level?

Returns
    CSV rows for the call with the median wall of ``--keys`` warm calls: one ``call`` row
    (wall, ``r.search_seconds``, ``r.assembly_seconds``, and what is left of the call
    outside the search: checks, submission, the result's return) and one ``level`` row per
    level: direction, frontier size, tasks (CPU / GPU), start (ms since the call's entry),
    wall ms, barrier ms, the summed and longest step ms, kernel ms and bytes copied to and
    from a GPU.
Approach
    Public tables only: ``r.levels`` (one row per level) and ``r.trace`` (one row per step
    task). With ``dispatch="auto"`` a level's CPU steps run as one parallel loop, so their
    start and stop are the level's; ``--dispatch tasks`` gives each step its own span.

    python benchmarks/timeline.py --scale 20 --tasks 16 --strategy cpu
"""

from __future__ import annotations

import harness
import numpy as np


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(18,), keys=5, repeats=1)
    harness.add_runtime_options(p)
    p.add_argument("--strategy", default="hybrid")
    p.add_argument("--tasks", type=int, default=None)
    p.add_argument("--direction", default="auto", choices=("auto", "top-down", "bottom-up"))
    p.add_argument("--dispatch", default="auto", choices=("auto", "tasks"))
    args = p.parse_args(argv)
    out = harness.Results("timeline", args)
    rt = harness.runtime(args)
    kw = dict(strategy=args.strategy, tasks=args.tasks, direction=args.direction,
              dispatch=args.dispatch, runtime=rt)
    try:
        for scale in args.scale:
            g = harness.graph(scale, args.edgefactor, args.seed)
            keys = harness.keys(g, args.keys)
            ref = harness.Reference(g)
            harness.warm_up(g, keys[0], **kw)
            calls = []
            for key in keys:
                s, r = harness.timed_bfs(g, key, **kw)
                ref.check(key, r.distances)
                calls.append((s, r))
            s, r = sorted(calls, key=lambda c: c[0])[len(calls) // 2]
            common = dict(scale=scale, strategy=args.strategy, tasks=r.num_tasks,
                          dispatch=args.dispatch)
            out.add(**common, kind="call", wall_ms=1e3 * s, search_ms=1e3 * r.search_seconds,
                    assembly_ms=1e3 * r.assembly_seconds,
                    outside_ms=1e3 * (s - r.search_seconds), levels=len(r.levels))
            steps = r.trace[r.trace["name"] == "bfs_step"]
            steps = steps.assign(seconds=steps["stop"] - steps["start"])
            by = steps.groupby("level")["seconds"].agg(["sum", "max"])
            for lv in r.levels.itertuples():
                out.add(**common, kind="level", level=lv.level, direction=lv.direction,
                        frontier=lv.frontier_size, tasks_cpu=lv.tasks_cpu, tasks_gpu=lv.tasks_gpu,
                        start_ms=1e3 * lv.start, wall_ms=1e3 * (lv.stop - lv.start),
                        barrier_ms=1e3 * lv.barrier_seconds,
                        steps_sum_ms=1e3 * float(by["sum"].get(lv.level, np.nan)),
                        steps_max_ms=1e3 * float(by["max"].get(lv.level, np.nan)),
                        kernel_ms=1e3 * lv.kernel_seconds, h2d_bytes=lv.h2d_bytes,
                        d2h_bytes=lv.d2h_bytes)
    finally:
        harness.close(rt)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
