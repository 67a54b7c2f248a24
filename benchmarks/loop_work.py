"""What the event loop does during warm ``tb.bfs`` calls: every callback it runs, timed.

Returns
    Prints, over ``--keys`` warm calls, the loop's busy time per call and the callbacks
    that took the most of it, grouped by what they run (coroutine or function name);
    then, for the median call, each callback over ``--show-us`` µs with its start (ms
    since the call's entry) and duration. The embedded runtime's scheduler, workers and
    client share one event loop in this process, so work left from one call (its trace,
    its messages to the live page) delays the next call's messages.
Approach
    ``asyncio.Handle._run`` is wrapped (nothing in the package changes): each callback's
    ``time.perf_counter`` span and a label from its callback (a task's coroutine name, or
    the function's qualified name).

    python benchmarks/loop_work.py --scale 22 --strategy gpu --keys 16
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import time
from pathlib import Path

import numpy as np

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))

import graph_files  # noqa: E402

SPANS: list[tuple[float, float, str]] = []


def _label(handle) -> str:
    callback = handle._callback
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        name = getattr(coro, "__qualname__", repr(coro))
        frame = getattr(coro, "cr_frame", None)
        if name == "PeriodicCallback._run" and frame is not None:  # name what it runs
            periodic = getattr(frame.f_locals.get("self"), "callback", None)
            name = f"PeriodicCallback({getattr(periodic, '__qualname__', repr(periodic))[:70]})"
        return name
    for attr in ("__qualname__", "__name__"):
        if hasattr(callback, attr):
            return getattr(callback, attr)
    func = getattr(callback, "func", None)  # functools.partial
    return getattr(func, "__qualname__", repr(callback))[:80]


def _wrap_handles() -> None:
    run = asyncio.events.Handle._run

    def timed(self):
        label = _label(self)  # before the run: a finished coroutine has no frame to name
        start = time.perf_counter()
        try:
            return run(self)
        finally:
            SPANS.append((start, time.perf_counter(), label))

    asyncio.events.Handle._run = timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--strategy", default="cpu")
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--show-us", type=float, default=50.0)
    parser.add_argument("--graph-dir", default=None)
    args = parser.parse_args()

    graph = graph_files.kronecker(args.scale, directory=args.graph_dir)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=1)]
    _wrap_handles()
    calls = []
    with tb.Runtime() as rt:
        for key in keys[:3]:
            tb.bfs(graph, key, strategy=args.strategy, runtime=rt)
        for key in keys:
            start = time.perf_counter()
            tb.bfs(graph, key, strategy=args.strategy, runtime=rt)
            calls.append((start, time.perf_counter()))
    walls = [(b - a) * 1e3 for a, b in calls]
    print(f"scale {args.scale}, {args.strategy}: walls (ms) {[round(w, 2) for w in walls]}")
    busy = []
    kinds = collections.Counter()
    for a, b in calls:
        inside = [(s, e, n) for s, e, n in SPANS if a <= s < b]
        busy.append(sum(e - s for s, e, _ in inside) * 1e3)
        for s, e, n in inside:
            kinds[n] += (e - s) * 1e3
    print(f"loop busy per call (ms): median {np.median(busy):.2f}, "
          f"{[round(x, 2) for x in busy]}")
    print("callbacks by label, ms per call (summed over the calls / calls):")
    for name, ms in kinds.most_common(15):
        print(f"  {ms / len(calls):7.3f}  {name}")
    median = int(np.argsort(walls)[len(walls) // 2])
    a, b = calls[median]
    print(f"the median call ({walls[median]:.2f} ms): callbacks over {args.show_us:g} us")
    for s, e, n in SPANS:
        if a <= s < b and (e - s) * 1e6 >= args.show_us:
            print(f"  {1e3 * (s - a):7.2f} {1e3 * (e - s):6.2f}  {n}")


if __name__ == "__main__":
    main()
