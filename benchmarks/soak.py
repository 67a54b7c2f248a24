"""Memory over many searches: does anything grow per search?

Runs ``--searches`` BFS calls of one small graph (after ``--warm`` calls that are not
counted) and prints the resident memory before and after, per search, of this process
(the embedded runtime: client, scheduler and worker in one process) or, with
``--external``, of a ``dask scheduler`` and a ``dask worker`` process started here on
127.0.0.1, and how many event topics the scheduler keeps. ``--tracemalloc N`` (embedded)
also traces Python allocations over the counted searches and prints the N source lines
whose live memory grew most (where the growth per search goes).

    PYTHONPATH=$PWD python benchmarks/soak.py --searches 500 [--external] [--every 500]
    PYTHONPATH=$PWD python benchmarks/soak.py --searches 1000 --tracemalloc 15
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import psutil

import taskbfs as tb


def _topics(dask_scheduler=None) -> int:
    return len(getattr(getattr(dask_scheduler, "_broker", None), "_topics", ()))


def _external(tmp: Path, workers: int):
    """A scheduler and ``workers`` CPU workers as processes; returns (address, [Popen])."""
    dask = [sys.executable, "-m", "dask"]
    env = dict(os.environ)
    log = open(tmp / "cluster.log", "wb")  # noqa: SIM115 (lives as long as the processes)
    procs = [subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file",
                                      str(tmp / "s.json")], stdout=log, stderr=log, env=env)]
    while not (tmp / "s.json").exists() or not (tmp / "s.json").stat().st_size:
        time.sleep(0.1)
    address = json.loads((tmp / "s.json").read_text())["address"]
    for _ in range(workers):
        procs.append(subprocess.Popen(dask + ["worker", address, "--host", "127.0.0.1",
                                              "--no-dashboard", "--no-nanny", "--nthreads",
                                              "1", "--resources", "CPU=1"],
                                      stdout=log, stderr=log, env=env))
    return address, procs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--searches", type=int, default=500)
    p.add_argument("--warm", type=int, default=50)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--external", action="store_true")
    p.add_argument("--workers", type=int, default=2, help="worker processes with --external")
    p.add_argument("--every", type=int, default=0, help="also print RSS every this many searches")
    p.add_argument("--tracemalloc", type=int, default=0, metavar="N",
                   help="print the N source lines whose traced memory grew most")
    args = p.parse_args()
    graph = tb.kronecker(args.scale, seed=1)
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.external:
            address, procs = _external(Path(tmp), args.workers)
            rt = tb.Runtime(address)
            rt.client.wait_for_workers(args.workers, timeout=60)
            watched = {"scheduler": psutil.Process(procs[0].pid),
                       **{f"worker{i}": psutil.Process(proc.pid)
                          for i, proc in enumerate(procs[1:])},
                       "client": psutil.Process()}
        else:
            rt = tb.Runtime()
            watched = {"process": psutil.Process()}
        try:
            for _ in range(args.warm):
                tb.bfs(graph, 1, runtime=rt)
            gc.collect()
            before = {k: w.memory_info().rss for k, w in watched.items()}
            topics_before = rt.client.run_on_scheduler(_topics)
            if args.tracemalloc:
                tracemalloc.start(8)
                first = tracemalloc.take_snapshot()
            t0 = time.perf_counter()
            samples = {k: [(0, v)] for k, v in before.items()}
            for i in range(args.searches):
                tb.bfs(graph, 1 + i % 7, runtime=rt)
                if args.every and (i + 1) % args.every == 0:
                    for k, w in watched.items():
                        samples[k].append((i + 1, w.memory_info().rss))
                    rss = "  ".join(f"{k} {v[-1][1] / 2**20:.1f}" for k, v in samples.items())
                    print(f"  after {i + 1:6d} ({time.perf_counter() - t0:7.0f} s): "
                          f"RSS MiB {rss}", flush=True)
            seconds = time.perf_counter() - t0
            gc.collect()
            time.sleep(1)
            after = {k: w.memory_info().rss for k, w in watched.items()}
            topics_after = rt.client.run_on_scheduler(_topics)
            if args.tracemalloc:
                _print_growth(first, tracemalloc.take_snapshot(), args.tracemalloc,
                              args.searches)
        finally:
            rt.close()
            for proc in procs[::-1]:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"{args.searches} searches of Kronecker scale {args.scale} "
          f"({'external scheduler + worker' if args.external else 'embedded'}), "
          f"{seconds:.1f} s; scheduler event topics {topics_before} -> {topics_after}")
    for k in watched:
        grow = after[k] - before[k]
        print(f"  {k:9s} RSS {before[k] / 2**20:7.1f} -> {after[k] / 2**20:7.1f} MiB "
              f"({grow / 2**10 / args.searches:+.1f} KiB per search; "
              f"{_slope(samples[k], 0.0):+.1f} over the samples, "
              f"{_slope(samples[k], 0.5):+.1f} over their second half)")


def _slope(samples: list[tuple[int, int]], skip: float) -> float:
    """Least-squares growth in KiB per search over the samples after the first ``skip``
    fraction of the searches (nan with fewer than two)."""
    last = samples[-1][0]
    kept = [(n, rss) for n, rss in samples if n >= skip * last]
    if len(kept) < 2:
        return float("nan")
    n, rss = np.array(kept, dtype=float).T
    return float(np.polyfit(n, rss, 1)[0]) / 2**10


def _print_growth(first, last, top: int, searches: int) -> None:
    """The ``top`` allocation sites (their 8 innermost frames, innermost first, each
    ``file:line < its caller``) whose live traced memory grew most between two snapshots."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = last.filter_traces(ignore).compare_to(first.filter_traces(ignore), "traceback")
    print(f"traced growth: {sum(s.size_diff for s in stats) / 2**10 / searches:+.2f} KiB "
          f"per search; the largest:")
    for stat in stats[:top]:
        # innermost frame first (a Traceback lists the oldest first)
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback[::-1]]
        print(f"  {stat.size_diff / 2**10:+9.1f} KiB {stat.count_diff:+7d} blocks  "
              f"{' < '.join(frames)}")


if __name__ == "__main__":
    main()
