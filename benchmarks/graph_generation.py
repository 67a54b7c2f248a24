"""Wall time of making a Kronecker graph in one process: generation, construction, both.

Returns (prints) a Markdown table: per scale, the best of ``--repeats`` wall times of
``tb.kronecker_edges`` (generation alone, int64 arrays), ``tb.Graph.from_edges`` of that
list (construction alone) and ``tb.kronecker`` (both, as a user calls it), with edges a
second a core for each (``edgefactor * 2**scale`` edges over the wall time and
``os.cpu_count()`` cores). Approach: one process, a scale-4 graph made first so that
numba's cached kernels are loaded, then the three calls ``--repeats`` times each.

    PYTHONPATH=$PWD python benchmarks/graph_generation.py --scales 20 22
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import taskbfs as tb


def best_of(repeats: int, call) -> float:
    """The least wall time of ``repeats`` calls of ``call``."""
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
        del out
    return min(times)


def measure(scale: int, edgefactor: int, seed: int, repeats: int) -> dict:
    n = 1 << scale
    gen = best_of(repeats, lambda: tb.kronecker_edges(scale, edgefactor, seed=seed))
    edges = list(tb.kronecker_edges(scale, edgefactor, seed=seed))
    build = best_of(repeats, lambda: tb.Graph.from_edges(*edges, num_vertices=n))
    edges.clear()
    both = best_of(repeats, lambda: tb.kronecker(scale, edgefactor, seed=seed))
    return {"generate": gen, "build": build, "kronecker": both}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", type=int, nargs="+", default=[20, 22])
    p.add_argument("--edgefactor", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    tb.kronecker(4, seed=1)
    tb.kronecker_edges(4, seed=1)
    cores = os.cpu_count() or 1
    print(f"| scale | step | best of {args.repeats} (s) | M edges / s / core |")
    print("| --- | --- | --- | --- |")
    for scale in args.scales:
        edges = args.edgefactor << scale
        for step, wall in measure(scale, args.edgefactor, args.seed, args.repeats).items():
            print(f"| {scale} | {step} | {wall:.2f} | {edges / wall / cores / 1e6:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
