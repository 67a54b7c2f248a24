"""Where a dispatched GPU step's time goes: inside the step (its host work and waits on the
GPU) or around it (Dask). Searches with ``dispatch="tasks"`` on the embedded runtime, each
GPU step (``run_step_on_gpu``, one at a time on the GPU worker's thread) timed and profiled
with cProfile; the rest of a search's wall time is the runtime's. From Python 3.12 cProfile
profiles every thread while it is enabled (``sys.monitoring``), so its table also holds the
event loop's work during the steps: the step times are right, the table is not the step's
alone (``wall_profile.py`` samples each thread apart).

    python benchmarks/device/step_profile.py --scale 20 --tasks 16 --searches 4
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import taskbfs as tb
from taskbfs.search import gpu_step


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--searches", type=int, default=4)
    parser.add_argument("--lines", type=int, default=35)
    args = parser.parse_args(argv)
    graph = tb.kronecker(args.scale, 16, seed=1)
    keys = tb.search_keys(graph, args.searches, seed=2)
    kw = dict(tasks=args.tasks, strategy="gpu", dispatch="tasks")
    for key in keys:  # warm: graph placed, kernels loaded
        tb.bfs(graph, int(key), **kw)
    real = gpu_step.run_step_on_gpu
    profile = cProfile.Profile()
    inside = []

    def timed(*a, **k):
        start = time.perf_counter()
        profile.enable()
        try:
            return real(*a, **k)
        finally:
            profile.disable()
            inside.append(time.perf_counter() - start)

    gpu_step.run_step_on_gpu = timed
    walls = []
    try:
        for key in keys:
            start = time.perf_counter()
            tb.bfs(graph, int(key), **kw)
            walls.append(time.perf_counter() - start)
    finally:
        gpu_step.run_step_on_gpu = real
    steps = len(inside) / len(keys)
    print(f"scale {args.scale}, T = {args.tasks}, gpu, dispatch='tasks': wall ms per search "
          f"{np.median(walls) * 1e3:.1f}, GPU steps per search {steps:.0f}, ms inside a step "
          f"(median {np.median(inside) * 1e3:.3f}, mean {np.mean(inside) * 1e3:.3f}), "
          f"ms per search inside steps {sum(inside) / len(keys) * 1e3:.1f}")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.lines)
    stats.sort_stats("cumulative").print_stats(args.lines)


if __name__ == "__main__":
    main()
