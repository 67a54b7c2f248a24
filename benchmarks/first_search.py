"""How long does the first search of a fresh process take, against the steady calls after it?

Returns
    One CSV row per strategy, each measured in a fresh Python process: the runtime's start
    (``tb.Runtime()``, which loads the search code on its workers), the first ``tb.bfs``
    call (wall, and its ``r.search_seconds``: the search itself, without placing the
    graph), the second call (another key), the median of the steady calls after them, the
    ratios first / steady (wall and search), and the median of the last ``--calls`` / 4
    calls over the first ``--calls`` / 4 (above 1: calls slow down as the runtime lives).
Approach
    numba's functions are compiled once per machine (``cache=True``) and loaded by the
    runtime's start, so a first search should pay for placing the graph, not for
    compiling: its ``search_seconds`` near the steady one says so. The graph is built
    before the runtime (untimed); every answer is checked against scipy's.

    python benchmarks/first_search.py --scale 20 --strategies cpu hybrid
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import harness

import taskbfs as tb


def child(scale, edgefactor, seed, strategy, calls, count) -> dict:
    g = harness.graph(scale, edgefactor, seed)
    keys = harness.keys(g, count)
    ref = harness.Reference(g)
    for key in keys:
        ref.distances(key)  # scipy's answers ready before the clock starts
    start = time.perf_counter()
    with tb.Runtime() as rt:
        started = time.perf_counter() - start
        walls, inner = [], []
        for i in range(calls):
            key = keys[i % len(keys)]
            s, r = harness.timed_bfs(g, key, strategy=strategy, runtime=rt)
            walls.append(s)
            inner.append(r.search_seconds)
            if i < len(keys):
                ref.check(key, r.distances, strategy)
    return {"runtime_start": started, "walls": walls, "inner": inner}


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(18,), keys=4, repeats=1)
    p.add_argument("--strategies", nargs="+", default=["cpu", "hybrid"])
    p.add_argument("--calls", type=int, default=40, help="calls per process (first included)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    scale = args.scale[0]
    if args.child:
        print(json.dumps(child(scale, args.edgefactor, args.seed, args.child, args.calls,
                               args.keys)))
        return []
    out = harness.Results("first_search", args)
    for strategy in args.strategies:
        run = subprocess.run([sys.executable, __file__, "--child", strategy, "--scale",
                              str(scale), "--edgefactor", str(args.edgefactor), "--seed",
                              str(args.seed), "--keys", str(args.keys), "--calls",
                              str(args.calls)], capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"{strategy}: the child failed:\n{run.stderr[-3000:]}")
        m = json.loads(run.stdout.strip().splitlines()[-1])
        walls, inner = m["walls"], m["inner"]
        steady, steady_inner = harness.median(walls[2:]), harness.median(inner[2:])
        quarter = max(1, len(walls) // 4)
        out.add(strategy=strategy, scale=scale, calls=len(walls),
                runtime_start_s=m["runtime_start"], first_ms=1e3 * walls[0],
                first_search_ms=1e3 * inner[0], second_ms=1e3 * walls[1],
                steady_ms=1e3 * steady, steady_search_ms=1e3 * steady_inner,
                first_over_steady=walls[0] / steady,
                first_search_over_steady=inner[0] / steady_inner,
                late_over_early=harness.median(walls[-quarter:]) / harness.median(walls[2:2 + quarter]))
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
