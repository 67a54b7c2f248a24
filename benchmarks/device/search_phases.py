"""Where one GPU search's wall time goes, phase by phase: a timeline of ``run_search`` (the
search task's body, called in this thread) with named methods timed by the host clock.

cProfile's per-call cost distorts a loop of small Python calls; this wraps only the
methods named in ``PHASES`` with two ``perf_counter`` reads each and prints, per search,
each call's start and duration (ms from the search's start), then the median per phase.
Kernels run asynchronously: their time lands on the call that waits for them.

    python benchmarks/device/search_phases.py --scale 24 --tasks 1 --strategy hybrid
"""

from __future__ import annotations

import argparse
import functools
import importlib
import time
from collections import defaultdict

import numpy as np
from level_profile import searches

#: ``module:Class.method`` or ``module:function`` timed in the timeline.
PHASES = [
    "taskbfs.search.included:IncludedLevels.level",
    "taskbfs.search.included:IncludedLevels.announce",
    "taskbfs.search.device_levels:GpuLevels._batch",
    "taskbfs.search.device_levels:GpuLevels._barrier",
    "taskbfs.search.device_levels:GpuLevels._enter",
    "taskbfs.search.device_levels:GpuLevels.result",
    "taskbfs.kernels.gpu_levels:DeviceLevels.top_down",
    "taskbfs.kernels.gpu_levels:DeviceLevels.bottom_up",
    "taskbfs.kernels.gpu_levels:DeviceLevels.convert",
    "taskbfs.kernels.gpu_levels:DeviceLevels._counts",
    "taskbfs.kernels.pinned:copy_out",
    "taskbfs.search.state:SwitchRule.summary",
    "taskbfs.search.included:IncludedLevels.__init__",
    "taskbfs.search.included:first_frontier",
    "taskbfs.search.level_tasks:LevelTasks.top_down",
    "taskbfs.search.level_tasks:LevelTasks.bottom_up",
    "taskbfs.search.device_levels:GpuLevels._reached",
    "taskbfs.search.device_cache:DeviceCache.device_levels",
    "taskbfs.kernels.gpu_levels:DeviceLevels.set_tasks",
    "taskbfs.kernels.gpu_levels:DeviceLevels.enter_reached",
    "taskbfs.kernels.gpu_levels:DeviceLevels.enter",
    "taskbfs.kernels.gpu_levels:DeviceLevels.task_counts",
    "taskbfs.kernels.gpu_levels:DeviceLevels.place_tasks",
    "taskbfs.kernels.gpu_levels:DeviceLevels.visited_bits",
    "taskbfs.kernels.gpu_levels:DeviceLevels.split",
    "taskbfs.kernels.gpu_levels:DeviceLevels.accept",
    "taskbfs.search.device_levels:GpuLevels._mixed",
    "taskbfs.search.device_levels:GpuLevels.devices",
    "taskbfs.kernels.gpu_levels:DeviceLevels.snapshot",
    "taskbfs.kernels.gpu_levels:DeviceLevels.copied_result",
    "taskbfs.search.state:first_summary",
    "taskbfs.search.state:bitmap_from_vertices",
    "taskbfs.search.state:search_rule",
    "taskbfs.search.level_tasks:top_down_level",
    "taskbfs.search.level_tasks:empty_bitmap",
    "taskbfs.search.level_tasks:next_level",
    "taskbfs.search.included:run_search",
    "taskbfs.search.included:_assemble",
    "taskbfs.search.compiled_levels:run_small_levels",
    "taskbfs.search.included:IncludedLevels._on_threads",
    "taskbfs.runtime.resident:Residents.call",
    "taskbfs.search.runner:Search.result",
    "taskbfs.search.runner:Search.included",
    "taskbfs.search.core:_attempt",
    "taskbfs.search.core:place_graph",
    "taskbfs.search.core:upload_to_gpus",
    "taskbfs.search.core:_source_degree",
    "taskbfs.search.core:_check_memory",
    "taskbfs.search.core:Program",
    "taskbfs.search.core:Search",
    "taskbfs.search.core:as_graph",
    "taskbfs.search.core:check_sources",
    "taskbfs.runtime.cluster:Runtime.share_settings",
    "taskbfs.runtime.cluster:Runtime.resources",
    "taskbfs.runtime.cluster:Runtime.include_site",
    "taskbfs.runtime.program:Program.close",
    "taskbfs.runtime.program:Program.call",
]

_calls: list[tuple[str, float, float]] = []


def _wrap(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)
    if isinstance(inner, staticmethod):
        inner = inner.__func__

    @functools.wraps(inner)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            _calls.append((label, start, time.perf_counter()))

    setattr(owner, name, timed)


def _install() -> None:
    for spec in PHASES:
        module_name, path = spec.split(":")
        module = importlib.import_module(module_name)
        *classes, name = path.split(".")
        owner = module
        for cls in classes:
            owner = getattr(owner, cls)
        _wrap(owner, name, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=1)
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--searches", type=int, default=4)
    parser.add_argument("--show", type=int, default=1, help="timelines printed whole")
    parser.add_argument("--call", action="store_true",
                        help="time tb.bfs on the embedded runtime, not the task's body")
    args = parser.parse_args(argv)
    keys, search = searches(args.scale, args.tasks, args.strategy, args.searches, args.call)

    for source in keys:
        search(source)
    _install()
    for source in keys:
        search(source)  # warm with the wrappers
    per_phase = defaultdict(list)
    walls = []
    for i, source in enumerate(keys):
        _calls.clear()
        start = time.perf_counter()
        search(source)
        wall = time.perf_counter() - start
        walls.append(wall * 1e3)
        totals = defaultdict(float)
        for label, a, b in _calls:
            totals[label] += b - a
        for label, seconds in totals.items():
            per_phase[label].append(seconds * 1e3)
        if i < args.show:
            print(f"-- search {i} from {source}: {wall * 1e3:.2f} ms")
            for label, a, b in sorted(_calls, key=lambda c: c[1]):
                print(f"   {(a - start) * 1e3:8.3f} +{(b - a) * 1e3:7.3f}  {label}")
    print(f"scale {args.scale}, {args.strategy}, T = {args.tasks}: run_search ms "
          f"{[round(w, 2) for w in walls]} (median {np.median(walls):.2f})")
    for label, values in sorted(per_phase.items(), key=lambda kv: -np.median(kv[1])):
        print(f"  {np.median(values):8.3f} ms  {label}")


if __name__ == "__main__":
    main()
