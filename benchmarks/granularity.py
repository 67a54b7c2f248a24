"""How many tasks T should a search use: what does cutting the graph finer cost, CPU and GPU?

Returns
    One CSV row per (scale, strategy, dispatch, T): the median over ``--repeats`` rounds of
    the MTEPS of a round (traversed edges of one search per key / wall seconds around
    ``tb.bfs``), its min and max, and the ratio to T = 1 of the same group.
Approach
    The paper's Fig. 9, as the user times it. One Kronecker graph per scale, ``--keys``
    search keys; for each strategy (default cpu, and gpu and hybrid where there is a GPU)
    and dispatch mode, the T values run in groups of at most four with T = 1 in each (a
    runtime keeps the placements of four T values of a graph: more would place it again in
    every round); each T of a group gets one untimed warm-up search, then ``--repeats``
    rounds over the keys with the group's T values interleaved, so that machine noise hits
    them alike. Every search's distances must equal T = 1's for the same key, and T = 1's
    must equal scipy's.

    python benchmarks/granularity.py --scale 18 --tasks 1 2 4 16 64 128
    python benchmarks/granularity.py --scale 22 24 --strategies gpu hybrid   # a GPU machine
"""

from __future__ import annotations

import harness
import numpy as np

#: T values a round interleaves (T = 1 among them): the placements a runtime keeps.
GROUP = 4


def sweep(g, keys, tasks, strategy, dispatch, repeats, rt, ref) -> dict:
    """``{T: (MTEPS of each round, median MTEPS of its group's T = 1)}``."""
    kw = dict(strategy=strategy, dispatch=dispatch, runtime=rt)
    expected = {}
    for key in keys:
        _, r = harness.timed_bfs(g, key, tasks=1, **kw)
        ref.check(key, r.distances, f"{strategy} T=1")
        expected[key] = r.distances
    others = [t for t in tasks if t != 1]
    groups = [[1, *others[i:i + GROUP - 1]] for i in range(0, max(len(others), 1), GROUP - 1)]
    result = {}
    for group in groups:
        runs = {t: [] for t in group}
        for t in group:
            harness.warm_up(g, keys[0], tasks=t, **kw)
        for _ in range(repeats):
            for t in group:
                runs[t].append(_round(g, keys, t, kw, expected))
        one = float(np.median(runs[1]))
        result.update({t: (v, one) for t, v in runs.items() if t not in result})
    return result


def _round(g, keys, tasks, kw, expected) -> float:
    edges, seconds = 0, 0.0
    for key in keys:
        s, r = harness.timed_bfs(g, key, tasks=tasks, **kw)
        seconds += s
        edges += r.traversed_edges
        if not np.array_equal(r.distances, expected[key]):
            raise AssertionError(f"T={tasks} {kw['strategy']} key {key}: distances differ from T=1")
    return edges / seconds / 1e6


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(18,), keys=4, repeats=3)
    harness.add_runtime_options(p)
    p.add_argument("--tasks", type=int, nargs="+", default=[1, 2, 4, 16, 64, 128])
    p.add_argument("--strategies", nargs="+", default=None,
                   help="default: cpu; gpu and hybrid too with a GPU")
    p.add_argument("--dispatch", nargs="+", default=["auto"], choices=("auto", "tasks"))
    args = p.parse_args(argv)
    out = harness.Results("granularity", args)
    rt = harness.runtime(args)
    try:
        strategies = args.strategies or (["cpu", "gpu", "hybrid"] if harness.has_gpu(rt) else ["cpu"])
        for scale in args.scale:
            g = harness.graph(scale, args.edgefactor, args.seed)
            keys = harness.keys(g, args.keys)
            ref = harness.Reference(g)
            for strategy in strategies:
                for dispatch in args.dispatch:
                    runs = sweep(g, keys, args.tasks, strategy, dispatch, args.repeats, rt, ref)
                    for t, (values, one) in sorted(runs.items()):
                        m = float(np.median(values))
                        out.add(scale=scale, strategy=strategy, dispatch=dispatch, tasks=t,
                                keys=len(keys), mteps=m, min=min(values), max=max(values),
                                vs_one_task=m / one)
    finally:
        harness.close(rt)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
