"""Does anything grow, or slow down, over thousands of searches?

Returns
    One CSV row per watched process (the embedded runtime's one process; with
    ``--external``, the scheduler, each worker and the client): resident memory before and
    after ``--searches`` counted searches, the growth per search (KiB: the least-squares
    slope of the RSS samples over the second half, and the plain difference), and the
    searches' wall ms: median, 99th percentile, and the median of the last tenth over the
    first tenth (above 1: calls got slower).
Approach
    One small Kronecker graph, ``--warm`` uncounted calls (the runtime steady), then the
    counted ones cycling over the keys, RSS sampled every ``--every`` searches
    (``psutil``), the garbage collector run before the first and last readings. Every
    key's answer is checked against scipy's once, and every later answer against that one.
    ``--external``: a ``dask scheduler`` and ``--workers`` ``dask worker`` processes on
    127.0.0.1. (Finding what grows, once something does: ``tracemalloc`` in the process
    that grows; git history has the tools the project used, ``git log -- benchmarks/soak.py``.)

    python benchmarks/soak.py --searches 2000 --every 100 [--external]
"""

from __future__ import annotations

import gc

import harness
import numpy as np
import psutil

import taskbfs as tb


def _slope_kib(samples) -> float:
    """Least-squares growth per search (KiB) over the second half of ``(search, rss)``."""
    last = samples[-1][0]
    kept = [(n, rss) for n, rss in samples if n >= last / 2]
    if len(kept) < 2:
        return float("nan")
    n, rss = np.array(kept, dtype=float).T
    return float(np.polyfit(n, rss, 1)[0]) / 2**10


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(10,), keys=7, repeats=1)
    p.add_argument("--searches", type=int, default=500, help="counted searches")
    p.add_argument("--warm", type=int, default=50, help="uncounted searches first")
    p.add_argument("--every", type=int, default=50, help="RSS sample every this many searches")
    p.add_argument("--external", action="store_true", help="scheduler and workers as processes")
    p.add_argument("--workers", type=int, default=1, help="worker processes with --external")
    args = p.parse_args(argv)
    out = harness.Results("soak", args)
    scale = args.scale[0]
    g = harness.graph(scale, args.edgefactor, args.seed)
    keys = harness.keys(g, args.keys)
    ref = harness.Reference(g)
    answers = {}
    cluster = (harness.cluster(0, 1, cpu_workers=args.workers) if args.external else None)
    client = cluster.__enter__() if cluster else None
    rt = tb.Runtime(client) if client else tb.Runtime()
    try:
        if client:
            pids = client.run(lambda: __import__("os").getpid())
            sched = client.run_on_scheduler(lambda: __import__("os").getpid())
            watched = {"scheduler": psutil.Process(sched),
                       **{f"worker{i}": psutil.Process(pid) for i, pid in enumerate(pids.values())},
                       "client": psutil.Process()}
        else:
            watched = {"process": psutil.Process()}
        for i in range(args.warm):
            key = keys[i % len(keys)]
            r = tb.bfs(g, key, runtime=rt)
            if key not in answers:
                ref.check(key, r.distances)
                answers[key] = r.distances
        gc.collect()
        samples = {k: [(0, w.memory_info().rss)] for k, w in watched.items()}
        walls = []
        for i in range(args.searches):
            key = keys[i % len(keys)]
            s, r = harness.timed_bfs(g, key, runtime=rt)
            walls.append(s)
            if key not in answers:
                ref.check(key, r.distances)
                answers[key] = r.distances
            elif not np.array_equal(r.distances, answers[key]):
                raise AssertionError(f"search {i}, key {key}: distances changed")
            if (i + 1) % args.every == 0 or i + 1 == args.searches:
                if i + 1 == args.searches:
                    gc.collect()
                for k, w in watched.items():
                    samples[k].append((i + 1, w.memory_info().rss))
        tenth = max(1, len(walls) // 10)
        drift = harness.median(walls[-tenth:]) / harness.median(walls[:tenth])
        for k in watched:
            before, after = samples[k][0][1], samples[k][-1][1]
            out.add(process=k, scale=scale, searches=args.searches,
                    mode="external" if args.external else "embedded",
                    rss_before_mib=before / 2**20, rss_after_mib=after / 2**20,
                    kib_per_search=(after - before) / 2**10 / args.searches,
                    kib_per_search_slope=_slope_kib(samples[k]),
                    median_ms=1e3 * harness.median(walls),
                    p99_ms=1e3 * float(np.percentile(walls, 99)), last_over_first=drift)
    finally:
        rt.close()
        if cluster:
            cluster.__exit__(None, None, None)
    out.save()
    return out.rows


if __name__ == "__main__":
    main()
