"""What does a dispatched task cost, and what does running a search as one task save?

Returns
    CSV rows of two kinds. ``mode``: per dispatch setting ("auto": the runtime runs the
    whole search as one task on the worker that holds the graph; "tasks": every step and
    barrier a Dask task of its own), the median wall ms around ``tb.bfs``, harmonic-mean
    MTEPS and the median per-key ratio to "auto". ``per_task``: with ``dispatch="tasks"``,
    the median wall of T = 1 and of T = ``--tasks``, the step tasks each ran (from
    ``r.trace``), and the cost of one more dispatched task: (wall at T − wall at T = 1) /
    (its steps − T = 1's steps).
Approach
    The same keys searched with each setting back to back, the order alternating from key
    to key so that drift on a shared machine favours neither; every search's distances
    checked against scipy's. Embedded runtime by default (``--scheduler`` for another).

    python benchmarks/dispatch.py --scale 18 --tasks 16
"""

from __future__ import annotations

import harness
import numpy as np


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(18,), keys=4, repeats=3)
    harness.add_runtime_options(p)
    p.add_argument("--tasks", type=int, default=16, help="T of the per-task cost (beside T = 1)")
    p.add_argument("--strategy", default="cpu")
    args = p.parse_args(argv)
    out = harness.Results("dispatch", args)
    rt = harness.runtime(args)
    try:
        for scale in args.scale:
            g = harness.graph(scale, args.edgefactor, args.seed)
            keys = harness.keys(g, args.keys)
            ref = harness.Reference(g)
            configs = {"auto": dict(dispatch="auto", tasks=args.tasks),
                       "tasks": dict(dispatch="tasks", tasks=args.tasks),
                       "tasks T=1": dict(dispatch="tasks", tasks=1)}
            for kw in configs.values():
                harness.warm_up(g, keys[0], strategy=args.strategy, runtime=rt, **kw)
            walls = {c: [] for c in configs}
            edges = {c: [] for c in configs}
            steps = {c: [] for c in configs}
            names = list(configs)
            for _ in range(args.repeats):
                for i, key in enumerate(keys):
                    for c in (names if i % 2 == 0 else names[::-1]):
                        s, r = harness.timed_bfs(g, key, strategy=args.strategy, runtime=rt,
                                                 **configs[c])
                        ref.check(key, r.distances, c)
                        walls[c].append(s)
                        edges[c].append(r.traversed_edges)
                        steps[c].append(int((r.trace["name"] == "bfs_step").sum()))
            base = np.asarray(walls["auto"])
            for c in ("auto", "tasks"):
                out.add(scale=scale, kind="mode", dispatch=c, tasks=args.tasks,
                        strategy=args.strategy, keys=len(keys),
                        median_ms=1e3 * harness.median(walls[c]),
                        mteps=harness.hmean_teps(edges[c], walls[c]) / 1e6,
                        vs_auto=float(np.median(np.asarray(walls[c]) / base)))
            one, many = harness.median(walls["tasks T=1"]), harness.median(walls["tasks"])
            s1, sT = harness.median(steps["tasks T=1"]), harness.median(steps["tasks"])
            out.add(scale=scale, kind="per_task", dispatch="tasks", tasks=args.tasks,
                    strategy=args.strategy, keys=len(keys), median_ms=1e3 * many,
                    one_task_ms=1e3 * one, steps=sT, one_task_steps=s1,
                    ms_per_task=1e3 * (many - one) / (sT - s1) if sT > s1 else float("nan"))
    finally:
        harness.close(rt)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
