"""Where a GPU step task's time goes: host-side phases of ``step_cuda``, summed per search.

Returns (prints) for each (scale, T, strategy): ms per ``tb.bfs`` call (``r.elapsed``), and
per search the ms spent in the GPU steps' phases — slice lookup, level inputs upload, the
step kernels (host wall time of the launch + counter read-back), narrowing, copy-back of
the pairs, and the post-processing for the barrier (``for_barrier``: bucketing or owned bits) — next to the step tasks' total.
Approach: wraps those functions with wall-clock timers (the GPU worker runs one step at a
time, so the sums are the GPU thread's time) and runs ``tb.bfs`` on the embedded cluster.

    python benchmarks/gpu_step_profile.py --scales 22 24 --tasks 4 --keys 3
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

import taskbfs as tb
from taskbfs.bfs import device_cache, steps

TOTALS: dict = defaultdict(float)


def timed(module, name, label):
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TOTALS[f"{label} [{_worker_kind()}]"] += time.perf_counter() - start

    setattr(module, name, wrapper)


def _worker_kind() -> str:
    """"gpu" on a GPU worker (the embedded cluster names them gpu-N), else "cpu"."""
    from distributed import get_worker

    try:
        return "gpu" if str(get_worker().name).startswith("gpu") else "cpu"
    except ValueError:
        return "client"


def instrument():
    from taskbfs.kernels import gpu

    timed(device_cache.DeviceCache, "partition", "slice lookup")
    timed(device_cache.DeviceCache, "level_inputs", "bitmaps upload")
    timed(gpu, "gpu_top_down_step", "kernels td")
    timed(gpu, "gpu_bottom_up_step", "kernels bu")
    timed(device_cache.DeviceCache, "level_mask", "mask zeroing")
    timed(device_cache, "_owned_bits", "owned bits")
    timed(device_cache, "_with_owned", "bits copy back")
    timed(device_cache, "_bucketed", "bucketing")
    timed(device_cache, "_narrow", "narrow")
    timed(device_cache, "_download", "copy back")
    timed(steps, "for_barrier", "for_barrier")
    timed(device_cache, "run_step_on_gpu", "gpu step body")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[22])
    parser.add_argument("--tasks", type=int, nargs="+", default=[4])
    parser.add_argument("--strategies", nargs="+", default=["gpu", "hybrid"])
    parser.add_argument("--keys", type=int, default=3)
    parser.add_argument("--direction", default="auto", choices=["auto", "top-down", "bottom-up"])
    args = parser.parse_args()
    instrument()
    with tb.Runtime() as rt:
        for scale in args.scales:
            graph = tb.kronecker(scale)
            keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=1)]
            for tasks in args.tasks:
                for strategy in args.strategies:
                    tb.bfs(graph, keys[0], tasks=tasks, strategy=strategy, runtime=rt,
                           direction=args.direction)  # warm
                    TOTALS.clear()
                    elapsed, step_s = [], []
                    for key in keys:
                        r = tb.bfs(graph, key, tasks=tasks, strategy=strategy, runtime=rt,
                                   direction=args.direction)
                        elapsed.append(r.elapsed)
                        gpu = r.trace[r.trace["device"] == "cuda"]
                        step_s.append(float((gpu["stop"] - gpu["start"]).sum()))
                    per = {k: 1e3 * v / len(keys) for k, v in TOTALS.items()}
                    print(f"scale {scale} T {tasks} {strategy} {args.direction}: call {1e3 * np.mean(elapsed):.1f} ms, "
                          f"GPU step tasks {1e3 * np.mean(step_s):.1f} ms; per search: "
                          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items())), flush=True)


if __name__ == "__main__":
    main()
