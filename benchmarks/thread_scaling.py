"""Thread scaling of the CPU strategy beside the plain ``prange`` loop (issue 23).

One Kronecker graph per ``--scales``, ``--keys`` search keys; the plain direction-optimizing
``prange`` loop (``prange_loop.py``) at each of ``--plain-threads``; taskbfs (embedded
runtime of ``--threads`` worker threads, strategy cpu, dispatch auto) at each T of
``--tasks``. Wall time around each call, one untimed warm-up first; the median over the
keys. Every taskbfs result's distances are compared with the plain loop's.

    python benchmarks/thread_scaling.py --scales 21 23 --keys 8 --plain-threads 1 2 4 8 16 \
        --threads 2 4 8 16 --tasks 16 64 128
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numba
import numpy as np

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).parent))
from prange_loop import prange_bfs  # noqa: E402


def _plain(graph, key):
    return prange_bfs(graph, key)[1]


def _taskbfs(graph, tasks, runtime, key):
    return tb.bfs(graph, key, tasks=tasks, strategy="cpu", runtime=runtime)


def timed(fn, keys):
    fn(int(keys[0]))  # warm-up
    times, results = [], {}
    for key in keys:
        start = time.perf_counter()
        out = fn(int(key))
        times.append(time.perf_counter() - start)
        results[int(key)] = out
    return float(np.median(times)), results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[21])
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--plain-threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--tasks", type=int, nargs="+", default=[16, 64, 128])
    args = parser.parse_args()
    for scale in args.scales:
        start = time.perf_counter()
        graph = tb.kronecker(scale, 16, seed=1)
        keys = tb.search_keys(graph, args.keys, seed=1)
        print(f"scale {scale}: graph in {time.perf_counter() - start:.1f} s", flush=True)
        plain = {}
        for threads in args.plain_threads:
            numba.set_num_threads(threads)
            seconds, plain = timed(partial(_plain, graph), keys)
            print(f"  plain prange loop, {threads:>2} threads: {seconds * 1e3:8.1f} ms",
                  flush=True)
        for threads in args.threads:
            with tb.Runtime(threads=threads, dashboard_address=None) as rt:
                for tasks in args.tasks:
                    seconds, results = timed(partial(_taskbfs, graph, tasks, rt), keys)
                    for k, r in results.items():
                        assert np.array_equal(r.distances, plain[k]), k
                    mteps = np.mean([r.traversed_edges for r in results.values()]) / seconds / 1e6
                    print(f"  taskbfs cpu, {threads:>2} worker threads, T={tasks:>4}: "
                          f"{seconds * 1e3:8.1f} ms ({mteps:.0f} MTEPS)", flush=True)


if __name__ == "__main__":
    main()
