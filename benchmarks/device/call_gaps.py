"""Where the wall time of a one-task ``tb.bfs`` call goes around the search itself: from the
call to the worker's handler, to the worker's thread, the search task's body, and back
through the handler to the caller (medians over warm calls on the embedded runtime, the
host clock at each crossing).

    python benchmarks/device/call_gaps.py --scale 10 --strategy cpu --tasks 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb
import taskbfs.runtime.attach as attach
import taskbfs.runtime.resident as resident
import taskbfs.runtime.worker as worker
import taskbfs.search.included as included

_marks: dict[str, float] = {}


def _timed(function, before: str, after: str):
    def timed(*args, **kwargs):
        _marks[before] = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _marks[after] = time.perf_counter()
    return timed


def _timed_async(function, before: str, after: str):
    async def timed(*args, **kwargs):
        _marks[before] = time.perf_counter()
        try:
            return await function(*args, **kwargs)
        finally:
            _marks[after] = time.perf_counter()
    return timed


def _install() -> None:
    """Clocks at each crossing (before the runtime starts: the handler is registered then)."""
    included.run_search = _timed(included.run_search, "body", "body_end")
    thread = _timed(worker.execute_resident, "thread", "thread_end")
    worker.execute_resident = resident.execute_resident = thread
    attach.run_resident = _timed_async(resident.run_resident, "handler", "handler_end")


#: (label, from mark, to mark) of each part of a call.
PARTS = [("call -> handler", "call", "handler"), ("handler -> thread", "handler", "thread"),
         ("thread -> body", "thread", "body"), ("body", "body", "body_end"),
         ("body -> thread end", "body_end", "thread_end"),
         ("thread end -> handler end", "thread_end", "handler_end"),
         ("handler end -> return", "handler_end", "return"), ("wall", "call", "return")]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--strategy", default="cpu")
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args(argv)
    _install()
    graph = tb.kronecker(args.scale, 16, seed=1)
    keys = tb.search_keys(graph, 8, seed=2)
    kw = dict(tasks=args.tasks, strategy=args.strategy)
    for key in keys:
        tb.bfs(graph, int(key), **kw)
    rows = []
    for k in range(args.calls):
        _marks.clear()
        _marks["call"] = time.perf_counter()
        tb.bfs(graph, int(keys[k % len(keys)]), **kw)
        _marks["return"] = time.perf_counter()
        rows.append([_marks[b] - _marks[a] for _, a, b in PARTS])
    medians = np.median(np.array(rows), axis=0) * 1e3
    print(f"scale {args.scale}, {args.strategy}, T = {args.tasks}, median ms: "
          + ", ".join(f"{label} {m:.3f}" for (label, _, _), m in zip(PARTS, medians, strict=True)))


if __name__ == "__main__":
    main()
