"""λ, measured: one task's top-down step on the CPU and on the GPU versus frontier size.

Returns (prints, and writes ``benchmarks/results/lambda_crossover.csv`` with the columns
``frontier_size, cpu_seconds, gpu_seconds, device``): the median time of one BFS step task
covering a whole Graph500 Kronecker graph, for frontiers of 1 … 2^18 vertices, on the
CPU (the numba kernel, one thread: the task's ``smp`` implementation ``step_smp``, which buckets its output by owner as every step does) and on
the GPU (the task's ``cuda`` implementation: ``run_step_on_gpu`` then ``for_barrier``, with the slice already
resident in device memory, as on every level after the first), and the crossover: the
frontier size above which the GPU task is faster at every measured size. That is the
threshold λ of the workload-aware hybrid strategy (frontier > λ → GPU).
Approach: the paper's Fig. 4 (Munguía, Bader & Ayguadé, HiPC 2012: one CPU/GPU thread
traversing a single task, graph of 1M vertices and 16M edges, crossover ≈ 7000 vertices);
here scale 20, edgefactor 16. Both times are host wall times of the whole task body
(output allocation, frontier and visited-bitmap upload, kernels, copy-back for the GPU),
medians over several random frontiers per size, drawn from vertices of degree >= 1 and
marked visited. The Dask overhead per task is the same on both devices and is left out.

    python benchmarks/lambda_crossover.py [--scale 20] [--reps 7] [--out benchmarks/results/lambda_crossover.csv]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import time
from pathlib import Path

import numpy as np

import taskbfs as tb
from taskbfs.bfs.device_cache import DeviceCache, run_step_on_gpu
from taskbfs.bfs.state import TOP_DOWN, Frontier
from taskbfs.bfs.steps import GraphSlice, for_barrier, step_smp
from taskbfs.kernels.bitmap import bitmap_from_vertices
from taskbfs.kernels.gpu import gpu_available, simulator_enabled

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "lambda_crossover.csv"


def device_name() -> str:
    from numba import cuda

    if simulator_enabled():
        return "numba CUDA simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def frontier_sizes(limit: int) -> list[int]:
    """1, 2, 4, … with two steps per octave (1, 2, 3, 4, 6, 8, 11, 16, …), up to ``limit``."""
    sizes = sorted({int(round(2 ** (k / 2))) for k in range(0, 2 * int(np.log2(limit)) + 1)})
    return [s for s in sizes if s <= limit]


def make_frontier(graph, rng, size, candidates):
    chosen = np.sort(rng.choice(candidates, size=size, replace=False)).astype(np.int64)
    offsets = np.array([0, chosen.size], dtype=np.int64)
    visited = bitmap_from_vertices(chosen, graph.num_vertices)
    return Frontier(1, TOP_DOWN, chosen, offsets, None, visited)


def crossover(rows) -> float | None:
    """Smallest frontier size from which the GPU wins at every larger measured size.

    Interpolated geometrically between the last size the CPU wins and the first size of
    the GPU's unbroken run (the sizes are a geometric series). None if the GPU never wins.
    """
    gpu_wins = [r["gpu_seconds"] < r["cpu_seconds"] for r in rows]
    if not gpu_wins or not gpu_wins[-1]:
        return None
    first = len(gpu_wins) - 1
    while first > 0 and gpu_wins[first - 1]:
        first -= 1
    if first == 0:
        return float(rows[0]["frontier_size"])
    a, b = rows[first - 1], rows[first]
    # log-log interpolation of the point where the two curves cross
    ra = np.log(a["cpu_seconds"] / a["gpu_seconds"])
    rb = np.log(b["cpu_seconds"] / b["gpu_seconds"])
    t = ra / (ra - rb) if ra != rb else 0.5
    return float(np.exp(np.log(a["frontier_size"]) + t * (np.log(b["frontier_size"]) - np.log(a["frontier_size"]))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--edgefactor", type=int, default=16)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--max-frontier", type=int, default=1 << 18)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if not gpu_available():
        raise SystemExit("no CUDA device (and NUMBA_ENABLE_CUDASIM is not set): nothing to compare")

    device = device_name()
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; GPU: {device}; "
          f"date {time.strftime('%Y-%m-%d')}")
    t0 = time.perf_counter()
    graph = tb.kronecker(args.scale, edgefactor=args.edgefactor, seed=args.seed)
    print(f"Kronecker scale {args.scale}, edgefactor {args.edgefactor}: {graph.num_vertices:,} vertices, "
          f"{graph.num_edges:,} edges ({time.perf_counter() - t0:.1f} s); one task covers the whole graph")
    part = GraphSlice(0, 0, graph.num_vertices, graph.indptr, graph.indices, graph.token)
    candidates = np.flatnonzero(graph.degrees() > 0)
    rng = np.random.default_rng(args.seed)
    cache = DeviceCache()

    warm = make_frontier(graph, rng, 64, candidates)  # compile both sides, upload the slice
    step_smp(part, warm)
    first = run_step_on_gpu(part, warm, cache=cache)
    print(f"slice upload: {first.h2d_bytes / 1e6:.0f} MB (once; later levels reuse it)")

    rows = []
    print(f"{'frontier':>9s} {'edges':>11s} {'cpu ms':>9s} {'gpu ms':>9s} {'kernel ms':>10s} "
          f"{'h2d KB':>8s} {'d2h KB':>8s} {'faster':>7s}")
    for size in frontier_sizes(min(args.max_frontier, candidates.size)):
        cpu_t, gpu_t, kern_t, edges, h2d, d2h = [], [], [], [], [], []
        for _ in range(args.reps):
            frontier = make_frontier(graph, rng, size, candidates)
            t = time.perf_counter()
            c = step_smp(part, frontier)
            cpu_t.append(time.perf_counter() - t)
            frontier = Frontier(frontier.level, frontier.direction, frontier.vertices,
                                frontier.offsets, None, frontier.visited_bits)  # a new level
            t = time.perf_counter()
            g = for_barrier(part, frontier, run_step_on_gpu(part, frontier, cache=cache))
            gpu_t.append(time.perf_counter() - t)
            assert g.edges_examined == c.edges_examined
            assert np.array_equal(np.unique(g.vertices), np.unique(c.vertices))
            kern_t.append(g.kernel_seconds)
            edges.append(c.edges_examined)
            h2d.append(g.h2d_bytes)
            d2h.append(g.d2h_bytes)
        row = {"frontier_size": size, "cpu_seconds": float(np.median(cpu_t)),
               "gpu_seconds": float(np.median(gpu_t)), "device": device}
        rows.append(row)
        print(f"{size:9d} {int(np.median(edges)):11d} {row['cpu_seconds'] * 1e3:9.3f} "
              f"{row['gpu_seconds'] * 1e3:9.3f} {np.median(kern_t) * 1e3:10.3f} "
              f"{np.median(h2d) / 1e3:8.1f} {np.median(d2h) / 1e3:8.1f} "
              f"{'gpu' if row['gpu_seconds'] < row['cpu_seconds'] else 'cpu':>7s}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["frontier_size", "cpu_seconds", "gpu_seconds", "device"])
        writer.writeheader()
        writer.writerows(rows)
    lam = crossover(rows)
    if lam is None:
        print("crossover: the GPU task never beats the CPU task at these sizes")
    else:
        print(f"crossover: the GPU task is faster above ~{lam:.0f} frontier vertices "
              f"(lambda = {int(round(lam))}) on {device}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
