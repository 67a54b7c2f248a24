"""One ``tb.bfs`` call as a timeline: when each part of it starts and stops, on every thread.

Returns
    Prints, for the call with the median wall time of ``--keys`` warm calls, every timed
    part (the caller's steps before and after the search, the search task's setup, its
    levels and its result) with its start and stop in ms since the call's entry, and the
    thread it ran on. The embedded cluster's workers are threads of this process, so one
    clock (``time.perf_counter``) orders both sides.
Approach
    The parts are functions of the package wrapped here (nothing in the package changes);
    a part nested in another shows inside its span. The gaps between parts are what no
    wrapped function covers: the round trips and the scheduler's dispatch of the task.

    python benchmarks/call_timeline.py --scale 22 --strategy gpu --keys 8
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from pathlib import Path

import numpy as np

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))

import graph_files  # noqa: E402

#: (module, owner attribute or None, function name): the parts timed.
PARTS = [
    ("taskbfs.bfs.core", None, "_attempt"),
    ("taskbfs.runtime.cluster", "Runtime", "share_settings"),
    ("taskbfs.runtime.cluster", "Runtime", "resources"),
    ("taskbfs.runtime.cluster", "Runtime", "free_memory"),
    ("taskbfs.bfs.core", None, "place_graph"),
    ("taskbfs.runtime.cluster", "Runtime", "include_site"),
    ("taskbfs.runtime.program", "Program", "__init__"),
    ("taskbfs.runtime.program", "Program", "submit"),
    ("taskbfs.runtime.program", "Program", "call"),
    ("taskbfs.runtime.cluster", "Runtime", "resident_site"),
    ("taskbfs.runtime.resident", "Residents", "call"),
    ("taskbfs.runtime.resident", None, "_held"),
    ("taskbfs.runtime.resident", None, "execute_resident"),
    ("taskbfs.runtime.worker", None, "execute_resident"),
    ("taskbfs.runtime.program", "Program", "get"),
    ("taskbfs.runtime.program", "Program", "finished"),
    ("taskbfs.bfs.core", None, "send_finished"),
    ("taskbfs.bfs.core", "_Search", "result"),
    ("taskbfs.runtime.program", "Program", "close"),
    ("taskbfs.bfs.included", None, "run_search"),
    ("taskbfs.bfs.included", None, "first_frontier"),
    ("taskbfs.bfs.included", "IncludedLevels", "level"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "_enter"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "_batch"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "_mixed"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "devices"),
    ("taskbfs.bfs.level_tasks", "LevelTasks", "top_down"),
    ("taskbfs.bfs.level_tasks", "LevelTasks", "bottom_up"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "place_tasks"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "task_counts"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "split"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "accept"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "visited_bits"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "frontier_bits"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "_barrier"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "result"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "to_host"),
    ("taskbfs.bfs.included", None, "run_small_levels"),
    ("taskbfs.bfs.level_tasks", "TaskLists", "get"),
    ("taskbfs.bfs.compiled_levels", None, "small_top_down_levels"),
    ("taskbfs.bfs.compiled_levels", None, "ticks_to_times"),
    ("taskbfs.bfs.compiled_levels", None, "empty_bitmap"),
    ("taskbfs.bfs.compiled_levels", None, "frontier_bitmap"),
    ("taskbfs.bfs.compiled_levels", None, "step_sizes"),
    ("taskbfs.bfs.compiled_levels", None, "_edges_within"),
    ("taskbfs.bfs.included", None, "_run_steps"),
    ("taskbfs.bfs.included", None, "advance"),
    ("taskbfs.bfs.device_levels", "GpuLevels", "_reached"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "enter_reached"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "bottom_up"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "enter"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "top_down"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "_counts"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "convert"),
    ("taskbfs.kernels.gpu_levels", "DeviceLevels", "leave"),
    ("taskbfs.bfs.device_cache", "DeviceCache", "device_levels"),
    ("taskbfs.bfs.included", None, "_assemble"),
]

_events: list = []


def _timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _events.append((name, start, time.perf_counter(), threading.current_thread().name))
    return wrapper


class WindowSampler:
    """Every ``interval`` seconds, the innermost frames of every other thread, with the
    time: what else ran while a part of the call took long."""

    def __init__(self, interval: float = 0.0002, depth: int = 4):
        self.interval, self.depth, self.samples = interval, depth, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import os
        import sys

        me = threading.get_ident()
        names = {}
        while not self._stop.wait(self.interval):
            now = time.perf_counter()
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                if ident not in names:
                    names.update((t.ident, t.name) for t in threading.enumerate())
                stack = []
                while frame is not None and len(stack) < self.depth:
                    code = frame.f_code
                    stack.append(f"{os.path.basename(code.co_filename)}:{code.co_name}")
                    frame = frame.f_back
                self.samples.append((now, names.get(ident, str(ident)), " < ".join(stack)))

    def during(self, t0: float, t1: float) -> list:
        """``(count, thread, stack)`` of the samples taken between ``t0`` and ``t1``."""
        import collections

        counts = collections.Counter((name, stack) for t, name, stack in self.samples
                                     if t0 <= t < t1)
        return [(c, name, stack) for (name, stack), c in counts.most_common()]


def _wrap_parts() -> None:
    import importlib

    for module_name, owner_name, name in PARTS:
        module = importlib.import_module(module_name)
        owner = module if owner_name is None else getattr(module, owner_name)
        if not hasattr(owner, name):  # a part of another version of the package
            continue
        label = name if owner_name is None else f"{owner_name}.{name}"
        setattr(owner, name, _timed(label, getattr(owner, name)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--strategy", default="cpu")
    parser.add_argument("--tasks", type=int, default=None, help="T (default: tb.bfs's)")
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--direction", default="auto", choices=("auto", "top-down", "bottom-up"))
    parser.add_argument("--sample-first-ms", type=float, default=None,
                        help="also sample every thread in the first N ms of each call and "
                             "list, for the median call, what ran then")
    parser.add_argument("--graph-dir", default=None,
                        help="read the graph from (or save it into) this directory")
    parser.add_argument("--key", type=int, default=None,
                        help="search this source in every timed call (default: --keys keys)")
    parser.add_argument("--slowest", action="store_true",
                        help="print the slowest call's timeline instead of the median's")
    args = parser.parse_args(argv)
    graph = graph_files.kronecker(args.scale, 16, 1, args.graph_dir)
    keys = [int(k) for k in tb.search_keys(graph, args.keys + 1, seed=3)]
    if args.key is not None:
        keys = keys[:1] + [args.key] * args.keys
    _wrap_parts()
    calls = []
    sampler = WindowSampler() if args.sample_first_ms else None
    with tb.Runtime() as runtime:
        tb.bfs(graph, keys[0], strategy=args.strategy, runtime=runtime, tasks=args.tasks,
               direction=args.direction)  # warm, untimed
        if sampler is not None:
            sampler.start()
        for key in keys[1:]:
            _events.clear()
            start = time.perf_counter()
            result = tb.bfs(graph, key, strategy=args.strategy, runtime=runtime, tasks=args.tasks,
                            direction=args.direction)
            wall = time.perf_counter() - start
            calls.append((wall, start, list(_events), result.search_seconds))
    if sampler is not None:
        sampler.stop()
    walls = [c[0] for c in calls]
    which = "slowest" if args.slowest else "median"
    wall, start, events, search = sorted(calls)[-1 if args.slowest else len(calls) // 2]
    print(f"scale {args.scale}, {args.strategy}, {args.direction}: walls (ms) {[round(1e3 * w, 2) for w in walls]}")
    print(f"the {which} call: wall {1e3 * wall:.2f} ms, r.search_seconds {1e3 * search:.2f} ms")
    print(f"{'part':<28s} {'start':>8s} {'stop':>8s} {'ms':>7s}  thread")
    for name, t0, t1, thread in sorted(events, key=lambda e: e[1]):
        print(f"{name:<28s} {1e3 * (t0 - start):8.2f} {1e3 * (t1 - start):8.2f} "
              f"{1e3 * (t1 - t0):7.2f}  {thread}")
    print(f"median wall over the calls: {1e3 * float(np.median(walls)):.2f} ms")
    if sampler is not None:
        print(f"what ran in the first {args.sample_first_ms} ms of the {which} call "
              "(samples every 0.2 ms; thread; innermost frames):")
        for count, name, stack in sampler.during(start, start + args.sample_first_ms / 1e3)[:30]:
            print(f"{count:5d}  {name:<36s} {stack}")


if __name__ == "__main__":
    main()
