"""Where the one GPU task's time goes: every level of a search, run without Dask.

Returns (prints) for a Kronecker graph, per search, the wall time of the body of the
``bfs_search`` task on the GPU worker (``included.run_search(..., device="cuda")``, called
here in the main thread, with no scheduler and no worker: ``include``, ``include_each``
and ``publish`` are then plain calls; ``--device smp``: the CPU worker's body, every step
on the CPU), and for the last search, included task by included task: name, level,
direction, size, wall time (a level's CPU steps run side by side on the thread pool, so
each gets its level's share), its kernels' device time (CUDA events); then the sums of
steps, barriers and the result's assembly. With ``--profile``, a cProfile of the timed
searches (host functions by own and cumulative time), so that launches, copies and
synchronisations show up one by one. Comparing its per-search time with ``tb.bfs`` on
the same graph (printed too: ``r.search_seconds``, first submission to the result in
hand, and ``r.elapsed``, the whole call) gives the runtime's share.

    python benchmarks/gpu_one_task_profile.py --scale 24 --direction top-down --searches 4
    python benchmarks/gpu_one_task_profile.py --scale 12 --searches 2 --device smp --strategy cpu
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import pstats
import sys
import time

import dask
import numpy as np

import taskbfs as tb
from taskbfs.bfs import included
from taskbfs.bfs.included import BARRIER_NAME, RESULT_NAME
from taskbfs.bfs.placement import SliceBundle, _slices
from taskbfs.bfs.state import switch_parameters
from taskbfs.graph import partition
from taskbfs.runtime import Policy


class Timed:
    """Wraps ``include`` / ``include_each`` of :mod:`taskbfs.bfs.included` (the names
    ``run_search`` and ``_run_steps`` call): rows of ``(name, level, direction, size, wall
    seconds, kernel seconds)``."""

    def __init__(self):
        self.rows = []
        self._include_each = included.include_each
        self._include = included.include

    def include_each(self, name, func, calls, executor=None, device="smp"):
        start = time.perf_counter()
        out = self._include_each(name, func, calls, executor=executor, device=device)
        wall = time.perf_counter() - start
        for (tags, *_), found in zip(calls, out, strict=True):  # none: an empty call
            self.rows.append((name, tags.get("level"), tags.get("direction"), tags.get("size"),
                              wall / len(calls), getattr(found, "kernel_seconds", 0.0)))
        return out

    def include(self, name, func, tags, *args, **kwargs):
        start = time.perf_counter()
        out = self._include(name, func, tags, *args, **kwargs)
        self.rows.append((name, tags.get("level"), "", None, time.perf_counter() - start, 0.0))
        return out

    def install(self):
        included.include_each = self.include_each
        included.include = self.include


def one_search(graph, slices, degrees, bounds, source, direction, policy, device):
    """The search task's body for one search from ``source``, as ``tb.bfs`` submits it
    (a Kronecker graph is undirected: one slice per task serves both directions)."""
    alpha, beta = switch_parameters(None, None)
    init = {"bounds": bounds, "source": source, "direction_mode": direction,
            "total_edges": graph.num_arcs, "alpha": alpha, "beta": beta}
    outcome = included.run_search(SliceBundle(*slices), degrees, init=init, policy=policy,
                                  device=device)
    return outcome.distances, outcome.parents


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--direction", default="top-down")
    parser.add_argument("--strategy", default="gpu", choices=["gpu", "hybrid", "cpu"])
    parser.add_argument("--device", default="cuda", choices=["cuda", "smp"],
                        help="the worker whose body runs: cuda (the GPU worker: each step "
                             "where the strategy places it) or smp (a CPU worker: every "
                             "step on the CPU)")
    parser.add_argument("--searches", type=int, default=4)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--no-bfs", action="store_true", help="skip the tb.bfs comparison")
    parser.add_argument("--switch-intervals", type=float, nargs="*", default=[],
                        help="GIL switch intervals (seconds) to run the tb.bfs searches under")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="taskbfs settings for this run, e.g. gpu.device-bucket-min=0 "
                             "(Python literals)")
    args = parser.parse_args()
    for item in args.set:
        name, value = item.split("=", 1)
        try:
            tb.config.get(name)
        except KeyError:
            parser.error(f"--set: no setting taskbfs.{name}")
        dask.config.set({f"taskbfs.{name}": ast.literal_eval(value)})
    graph = tb.kronecker(args.scale)
    parts = partition(graph, args.tasks)
    bounds = np.ascontiguousarray(parts.bounds, dtype=np.int64)
    slices = _slices(graph, parts, graph.token)
    degrees = graph.degrees()
    policy = Policy(args.strategy, lam=tb.config.get("lambda"))
    keys = [int(k) for k in tb.search_keys(graph, args.searches + 1)]
    print(f"scale {args.scale}: {graph.num_vertices:,} vertices, {graph.num_arcs:,} arcs; "
          f"T = {args.tasks}, {args.strategy}, {args.direction}, device {args.device}; "
          f"{args.set or 'defaults'}; {time.strftime('%Y-%m-%d %H:%M')}")
    search = (graph, slices, degrees, bounds)
    one_search(*search, keys[0], args.direction, policy, args.device)  # warm-up
    timed = Timed()
    timed.install()
    profile = cProfile.Profile() if args.profile else None
    for key in keys[1:]:
        timed.rows.clear()
        if profile is not None:
            profile.enable()
        start = time.perf_counter()
        distances, parents = one_search(*search, key, args.direction, policy, args.device)
        wall = time.perf_counter() - start
        if profile is not None:
            profile.disable()
        edges = tb.traversed_edges(graph, parents)
        print(f"key {key}: one-task body {wall * 1e3:.1f} ms, {edges / wall / 1e6:.0f} MTEPS "
              f"({int(np.count_nonzero(distances >= 0)):,} reached)")
    print(f"{'name':>18} {'lvl':>4} {'dir':>9} {'size':>10} {'wall ms':>9} {'kernel ms':>9}")
    for name, level, direction, size, wall, kernel in timed.rows:
        print(f"{name:>18} {'' if level is None else level:>4} {direction or '':>9} "
              f"{'' if size is None else size:>10} {wall * 1e3:9.3f} {kernel * 1e3:9.3f}")
    steps = [r for r in timed.rows if r[0] not in (BARRIER_NAME, RESULT_NAME)]
    print(f"last search: steps {sum(r[4] for r in steps) * 1e3:.1f} ms (kernels "
          f"{sum(r[5] for r in steps) * 1e3:.1f}), barriers "
          f"{sum(r[4] for r in timed.rows if r[0] == BARRIER_NAME) * 1e3:.1f}, assembly "
          f"{sum(r[4] for r in timed.rows if r[0] == RESULT_NAME) * 1e3:.1f}")
    if profile is not None:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    if not args.no_bfs:
        compare_with_bfs(graph, keys, args)


def compare_with_bfs(graph, keys, args):
    """``tb.bfs`` on the embedded default runtime for every key (the first twice: the
    first search after the runtime starts is a warm-up), under each of
    ``--switch-intervals`` in turn key by key (Python's GIL switch interval: how long a
    thread that wants the GIL waits before the holder is asked to drop it)."""
    default_interval = sys.getswitchinterval()
    intervals = args.switch_intervals or [default_interval]
    with tb.Runtime() as rt:
        for key in [keys[0], *keys]:
            for interval in intervals:
                sys.setswitchinterval(interval)
                try:
                    r = tb.bfs(graph, key, tasks=args.tasks, strategy=args.strategy,
                               direction=args.direction, runtime=rt)
                finally:
                    sys.setswitchinterval(default_interval)
                # the trace's rows are the steps (included or dispatched), not the search task
                steps = float((r.trace["stop"] - r.trace["start"]).sum())
                print(f"tb.bfs key {key} (switch interval {interval * 1e3:g} ms): search "
                      f"{r.search_seconds * 1e3:.1f} ms, call (elapsed) {r.elapsed * 1e3:.1f} "
                      f"ms, {r.mteps:.0f} MTEPS; steps {steps * 1e3:.1f} ms "
                      f"(kernels {r.trace['kernel_seconds'].sum() * 1e3:.1f}), assembly "
                      f"{r.assembly_seconds * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
