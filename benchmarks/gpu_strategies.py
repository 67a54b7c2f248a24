"""The placement strategies on a CPU + GPU machine: MTEPS, levels, devices, and where time goes.

Returns (prints; writes a CSV of one row per scale × T × strategy, ``--out``): for Graph500
Kronecker graphs (scales 20, 22, 24 by default) and task counts T in {4, 16, 64, 256},
the MTEPS (Graph500 traversed edges / search time, harmonic mean over the search keys) of
``tb.bfs`` on the embedded default cluster (one CPU worker with every core, one GPU
worker) for the strategies cpu (all steps on the CPU), gpu (all on the GPU), hybrid
(frontier > λ → GPU; λ = ``taskbfs.lambda`` unless ``--lam``), fixed (the first
half of the tasks on the GPU), each direction-optimizing, plus gpu-td (all on the GPU,
top-down only: the paper's algorithm). For each: levels, the device decisions per level
(``t3/4``: a top-down level whose 4 step tasks ran 3 on the GPU; ``b`` bottom-up), and
the split of a search's wall time into GPU kernels (CUDA events), the rest of the GPU
tasks (host↔device copies and host work of the GPU step), CPU steps (union of their
intervals), barriers, the result assembly at the end, and runtime overhead (no step, no
barrier and no assembly running: submission, scheduling, messages), with the bytes moved
host↔device. The wall time split is ``result.elapsed``: the whole ``tb.bfs`` call, from its
entry to its return (the trace's clock starts at the entry too). On the embedded cluster
(one GPU worker) a search runs as one task with its steps and barriers included
(``dispatch="auto"``); ``--variant default tasks`` compares it with every step and barrier
dispatched as a Dask task.
Approach: every search is checked against scipy's reached-vertex count for its key, and
one search per strategy and scale (T = 16) is validated with the Graph500 rules. A
warm-up search per (scale, T) places the slices on the workers and in GPU memory and
compiles the kernels, so the timed searches see the steady state (slices resident).
Paper: Munguía, Bader & Ayguadé, HiPC 2012, Sec. V (the two hybrid schemes) and Fig. 10.

    python benchmarks/gpu_strategies.py --scales 20 22 24 --tasks 4 16 64 256 --keys 4
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import platform
import time
from pathlib import Path

import dask
import numpy as np
from scipy.sparse.csgraph import breadth_first_order

import taskbfs as tb
from taskbfs import config

#: label → (strategy, direction)
CONFIGS = {
    "cpu": ("cpu", "auto"),
    "gpu": ("gpu", "auto"),
    "hybrid": ("hybrid", "auto"),
    "fixed": ("fixed", "auto"),
    "gpu-td": ("gpu", "top-down"),
    "cpu-td": ("cpu", "top-down"),  # the CPU twin of gpu-td (not in the default set)
    # the paper's own scheme: workload-aware hybrid, top-down only (not in the default set)
    "hybrid-td": ("hybrid", "top-down"),
}
DEFAULT_CONFIGS = ["cpu", "gpu", "hybrid", "fixed", "gpu-td"]
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "gpu_strategies.csv"


def harmonic_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(len(values) / np.sum(1.0 / values))


def union_seconds(intervals) -> float:
    total, end = 0.0, -np.inf
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def time_split(result) -> dict:
    """Seconds of one search by kind of work (GPU and CPU steps may overlap)."""
    trace, levels = result.trace, result.levels
    gpu = trace[trace["device"] == "cuda"]
    cpu = trace[trace["device"] != "cuda"]
    barriers = [(row.stop - row.barrier_seconds, row.stop) for row in levels.itertuples()]
    steps = list(zip(trace["start"], trace["stop"], strict=True))
    kernel = float(gpu["kernel_seconds"].sum())
    return {
        "elapsed": result.elapsed,
        "gpu_kernel": kernel,
        "gpu_other": float((gpu["stop"] - gpu["start"]).sum()) - kernel,
        "cpu_steps": union_seconds(zip(cpu["start"], cpu["stop"], strict=True)),
        "barrier": float(levels["barrier_seconds"].sum()),
        "assembly": result.assembly_seconds,
        "overhead": max(0.0, result.elapsed - union_seconds(steps + barriers)
                        - result.assembly_seconds),
        "h2d_bytes": int(trace["h2d_bytes"].sum()),
        # the steps' copies back, and the result's when the search kept it on the GPU
        "d2h_bytes": int(trace["d2h_bytes"].sum()) + int(result.assembly_d2h_bytes),
        "levels": result.num_levels,
    }


def decisions(result) -> str:
    """Per level: direction letter, GPU steps / steps."""
    return " ".join(f"{row.direction[0]}{row.tasks_gpu}/{row.tasks}" for row in result.levels.itertuples())


def device_name() -> str:
    try:
        from numba import cuda

        from taskbfs.kernels.gpu import gpu_available, simulator_enabled

        if not gpu_available():
            return "no GPU"
        if simulator_enabled():
            return "numba CUDA simulator"
        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # noqa: BLE001
        return f"unknown ({exc})"


def run_scale(scale, args, runtime, writer, deadline):
    t0 = time.perf_counter()
    graph = tb.kronecker(scale, edgefactor=16, seed=args.seed)
    build = time.perf_counter() - t0
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
    matrix = graph.to_scipy()
    reached = {k: breadth_first_order(matrix, k, directed=False, return_predecessors=False).size
               for k in keys}
    print(f"\n## scale {scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges "
          f"(built in {build:.1f} s), {len(keys)} keys, lambda = {args.lam}", flush=True)
    print(f"{'T':>4s} {'strategy':>15s} {'MTEPS':>9s} {'x cpu':>6s} {'levels':>6s} {'ms':>8s} "
          f"{'kern%':>6s} {'gpuxfer%':>8s} {'cpu%':>5s} {'barr%':>6s} {'asm%':>5s} {'ovh%':>5s} "
          f"{'h2d MB':>7s} {'d2h MB':>7s}  decisions (key 0)", flush=True)
    for tasks in args.tasks:
        if time.perf_counter() > deadline:
            print(f"(deadline reached: T >= {tasks} skipped at scale {scale})")
            return
        # Warm-up: place this T's slices, fill the GPU's device cache, compile.
        if runtime.has_gpu:
            tb.bfs(graph, keys[0], tasks=tasks, strategy="gpu", runtime=runtime)
        tb.bfs(graph, keys[0], tasks=tasks, strategy="cpu", runtime=runtime)
        cpu_mteps = {}
        for label in args.strategies:
            strategy, direction = CONFIGS[label]
            if strategy != "cpu" and not runtime.has_gpu:
                continue
            run_config(graph, keys, reached, scale, tasks, label, args, runtime, writer, cpu_mteps)


def run_config(graph, keys, reached, scale, tasks, label, args, runtime, writer, cpu_mteps):
    """Search every key with one strategy, for each runtime variant (interleaved key by key, in alternating order, so that a noisy host's drift and the
    first search after another strategy fall on all of them alike); print and write one
    row each."""
    strategy, direction = CONFIGS[label]
    runs = {variant: ([], []) for variant in args.variant}
    first = {}
    for variant in runs:
        for _ in range(args.warmup):
            with runtime_variant(variant):
                tb.bfs(graph, keys[0], tasks=tasks, strategy=strategy, direction=direction,
                       lam=args.lam, runtime=runtime)
    for i, key in enumerate(keys):
        order = list(runs.items())  # alternated: the first search after a change is slower
        for variant, (teps, splits) in (order if i % 2 == 0 else order[::-1]):
            with runtime_variant(variant):
                r = tb.bfs(graph, key, tasks=tasks, strategy=strategy, direction=direction,
                           lam=args.lam, runtime=runtime)
            if r.reached != reached[key]:
                raise SystemExit(f"wrong result: scale {scale} T {tasks} {label} key {key}: "
                                 f"reached {r.reached}, scipy {reached[key]}")
            teps.append(r.teps)
            splits.append(time_split(r))
            if variant not in first:
                if tasks == 16:
                    tb.validate(graph, key, r.parents)
                # kept for its decisions (levels table) only: its arrays (pinned, on a GPU
                # host) let go
                r.distances = r.parents = None
                first[variant] = r
    for variant, (teps, splits) in runs.items():
        name = label if len(args.variant) == 1 else f"{label}/{variant}"
        report(scale, tasks, name, teps, splits, first[variant], len(keys), args, writer,
               cpu_mteps)


#: Runtime variants compared with ``--variant`` (taskbfs settings; the embedded cluster
#: runs in this process, so they reach its workers).
VARIANTS = {
    "default": {},
    # the top-down barrier's large merges on one thread (what taskbfs did before threads)
    "serial": {"search.parallel-accept-min": 1 << 62},
    # every step and barrier a Dask task of its own (bfs's dispatch="tasks"), not one task
    # for the whole search with them included
    "tasks": {"dispatch": "tasks"},
    # GPU step outputs copied back into new pageable arrays instead of reused pinned buffers
    "nopool": {"gpu.pinned-pool-bytes": 0},
}


@contextlib.contextmanager
def runtime_variant(name: str):
    """Apply one of :data:`VARIANTS` for the duration of a search."""
    with dask.config.set({f"taskbfs.{key}": value for key, value in VARIANTS[name].items()}):
        yield


def report(scale, tasks, label, teps, splits, first, num_keys, args, writer, cpu_mteps):
    """Print one row of the table and write it to the CSV."""
    mean = {k: float(np.mean([s[k] for s in splits])) for k in splits[0]}
    mteps = harmonic_mean(teps) / 1e6
    variant = label.partition("/")[2]
    if label.partition("/")[0] == "cpu":
        cpu_mteps[variant] = mteps
    ratio = mteps / cpu_mteps[variant] if variant in cpu_mteps else float("nan")
    el = mean["elapsed"]
    row = {
        "scale": scale, "tasks": tasks, "strategy": label, "lam": args.lam,
        "mteps": mteps, "x_cpu": ratio, "levels": mean["levels"],
        "elapsed_s": el, "gpu_kernel_s": mean["gpu_kernel"], "gpu_other_s": mean["gpu_other"],
        "cpu_steps_s": mean["cpu_steps"], "barrier_s": mean["barrier"],
        "assembly_s": mean["assembly"],
        "overhead_s": mean["overhead"], "h2d_bytes": mean["h2d_bytes"],
        "d2h_bytes": mean["d2h_bytes"], "decisions": decisions(first),
        "keys": num_keys, "device": args.device,
    }
    writer.writerow(row)
    print(f"{tasks:4d} {label:>15s} {mteps:9.1f} {ratio:6.2f} {mean['levels']:6.1f} "
          f"{el * 1e3:8.1f} {100 * mean['gpu_kernel'] / el:6.1f} "
          f"{100 * mean['gpu_other'] / el:8.1f} {100 * mean['cpu_steps'] / el:5.0f} "
          f"{100 * mean['barrier'] / el:6.1f} {100 * mean['assembly'] / el:5.1f} "
          f"{100 * mean['overhead'] / el:5.0f} "
          f"{mean['h2d_bytes'] / 1e6:7.1f} {mean['d2h_bytes'] / 1e6:7.1f}  {row['decisions']}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[20, 22, 24])
    parser.add_argument("--tasks", type=int, nargs="+", default=[4, 16, 64, 256])
    parser.add_argument("--strategies", nargs="+", default=DEFAULT_CONFIGS, choices=list(CONFIGS))
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--lam", type=float, default=config.get("lambda"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", nargs="+", default=["default"], choices=list(VARIANTS),
                        help="runtime variants (see VARIANTS), interleaved key by key; each "
                             "gets its rows")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed searches per strategy and variant before its keys (the "
                             "first ones pin the result buffers: ~80 ms per 128 MB, once)")
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="seconds after which no new T is started (partial table)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    deadline = time.perf_counter() + args.deadline
    args.device = device_name()
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; GPU: {args.device}; "
          f"date {time.strftime('%Y-%m-%d')}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fields = ["scale", "tasks", "strategy", "lam", "mteps", "x_cpu", "levels", "elapsed_s",
              "gpu_kernel_s", "gpu_other_s", "cpu_steps_s", "barrier_s", "assembly_s", "overhead_s",
              "h2d_bytes", "d2h_bytes", "decisions", "keys", "device"]
    with tb.Runtime() as rt, open(args.out, "w", newline="") as fh:
        print(f"cluster: {rt.resources()}", flush=True)
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for scale in args.scales:
            if time.perf_counter() > deadline:
                print(f"(deadline reached: scale {scale} skipped)")
                continue
            run_scale(scale, args, rt, writer, deadline)
            fh.flush()
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
