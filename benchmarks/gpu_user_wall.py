"""The user's stopwatch on a GPU machine: taskbfs's searches beside a plain GPU loop, in one run.

Returns (prints; writes ``--csv``): for Graph500 Kronecker graphs (scales 22 and 24 by
default, edgefactor 16) and the same search keys (``tb.search_keys``), per configuration,
a markdown table and one CSV row: the harmonic-mean TEPS over the keys (Graph500 traversed
edges / the wall time of the call), the median wall ms, the ratio of that TEPS to the plain
GPU loop's direction-optimizing and top-down searches, taskbfs's ``r.search_seconds`` beside
the wall and the share of the wall outside it (the call's time around the search: graph
check, submission, result), and for the plain loop the copy of its parents to the host
(into pinned memory, as taskbfs copies its result), which its wall leaves out (its result
stays in GPU memory); ``× plain-td, on host`` compares with the plain top-down loop whose
wall includes that copy (its result in the caller's hands as numpy, as ``tb.bfs``'s is;
the plain loop still makes no distances array, which taskbfs also returns).
Approach
    One process, one GPU, so that every GPU figure is a ratio measured in one run
    (issue 16, item 6). Per scale the graph is built once; the plain loop's copy is placed
    in GPU memory once (``benchmarks/plain_gpu_loop.py``: CuPy raw CUDA kernels, no Dask);
    taskbfs runs on its embedded cluster (``tb.Runtime()``: a GPU worker when CUDA is
    present), started once. Per configuration: one untimed warm-up search on the first key
    (compiles kernels, places the graph, pins buffers), then ``time.perf_counter()`` around
    each call, key after key; every result is validated with the Graph500 rules
    (``tb.validate``) after the stopwatch stops (``--validate first``: the first key only).
    ``--order interleaved`` warms every configuration up first and then runs the keys one
    by one, each configuration in turn (the default, ``blocks``, a configuration's keys
    one after another), and prints hybrid / gpu key by key: issue 16's hybrid target
    read both ways in one run.
    Configurations (``CONFIGS``): plain-td and plain-do (the plain loop, top-down, and
    Beamer's switch with ``--alpha`` / ``--beta``, 14 and 24), gpu (taskbfs, every step on
    the GPU, its own direction switch), gpu-td, hybrid, cpu. Without CuPy, or without a
    GPU, the plain configurations are skipped, with the reason printed, and the ratios to
    them are left empty; without a GPU worker, gpu and gpu-td are skipped too.
Encoding
    CSV columns as in ``FIELDS``: seconds, edges per second, shares in 0..1; ``x_plain_do``
    and ``x_plain_td`` are TEPS ratios (empty when that peer did not run),
    ``x_plain_td_host`` the ratio to plain-td with its copy counted, ``elapsed`` and
    ``outside`` empty for the plain loop, ``copy`` empty for taskbfs.

    python benchmarks/gpu_user_wall.py --scales 22 24 --keys 8 --csv out/gpu_user_wall.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import taskbfs as tb
from taskbfs import config

sys.path.insert(0, str(Path(__file__).resolve().parent))

import graph_files  # noqa: E402
import plain_gpu_loop as peer  # noqa: E402
from gpu_strategies import device_name, harmonic_mean  # noqa: E402

#: label → (strategy, direction); strategy "plain" is the plain GPU loop.
CONFIGS = {
    "plain-td": ("plain", "top-down"),
    "plain-do": ("plain", "auto"),
    "gpu": ("gpu", "auto"),
    "gpu-td": ("gpu", "top-down"),
    "hybrid": ("hybrid", "auto"),
    "cpu": ("cpu", "auto"),
}
PLAIN_CONFIGS = [label for label, (strategy, _) in CONFIGS.items() if strategy == "plain"]
GPU_STRATEGIES = ("gpu",)  # need a GPU worker (hybrid runs on the CPU without one)
DEFAULT_CSV = Path(__file__).resolve().parent / "results" / "gpu_user_wall.csv"
FIELDS = ["date", "host", "cpus", "gpu", "scale", "vertices", "edges", "config", "strategy",
          "direction", "tasks", "keys", "hmean_teps", "median_wall_s", "min_wall_s",
          "max_wall_s", "median_elapsed_s", "outside_share", "median_copy_s", "x_plain_do",
          "x_plain_td", "x_plain_td_host", "median_levels", "validated", "order"]


@dataclass
class Search:
    """One timed search: the wall of the call, taskbfs's ``elapsed`` (None for the plain
    loop), the plain loop's parents copy to the host (None for taskbfs), the Graph500
    traversed edges, the levels and taskbfs's T."""

    wall: float
    elapsed: float | None
    copy: float | None
    edges: int
    levels: int
    tasks: int | None = None

    @property
    def teps(self) -> float:
        return self.edges / self.wall


def time_plain(device_graph, pinned, graph, key, direction, args, check) -> Search:
    """One plain GPU loop search under the stopwatch; the copy back (into ``pinned``, a
    pinned host array) timed on its own, and the check after it."""
    start = time.perf_counter()
    parents_on_device, levels = peer.plain_gpu_bfs(device_graph, key, direction=direction,
                                                   alpha=args.alpha, beta=args.beta)
    wall = time.perf_counter() - start
    start = time.perf_counter()
    host = parents_on_device.get(out=pinned)
    copy = time.perf_counter() - start
    parents = host.astype(np.int64)
    if check:
        tb.validate(graph, key, parents)
    return Search(wall, None, copy, tb.traversed_edges(graph, parents), len(levels))


def time_taskbfs(graph, key, strategy, direction, runtime, args, check) -> Search:
    """One ``tb.bfs`` call under the stopwatch; the check after it."""
    start = time.perf_counter()
    r = tb.bfs(graph, key, tasks=args.tasks, strategy=strategy, direction=direction,
               runtime=runtime)
    wall = time.perf_counter() - start
    if check:
        tb.validate(graph, key, r.parents, levels=r.distances)
    return Search(wall, r.search_seconds, None, tb.traversed_edges(graph, r.parents), r.num_levels,
                  r.num_tasks)


def searcher(label, graph, runtime, device_graph, pinned, args):
    """``one(key, check)``: one timed search of configuration ``label``."""
    strategy, direction = CONFIGS[label]

    def one(key, check):
        if strategy == "plain":
            return time_plain(device_graph, pinned, graph, key, direction, args, check)
        return time_taskbfs(graph, key, strategy, direction, runtime, args, check)

    return one


def run_configs(labels, graph, keys, runtime, device_graph, pinned, args) -> dict:
    """Per configuration, one untimed search on the first key, then every key timed:
    ``--order blocks`` a configuration's keys one after another, then the next
    configuration's; ``interleaved`` every configuration warmed up first, then key by
    key each configuration in turn (a drifting machine slows them alike). Returns
    ``{label: searches}``."""
    ones = {label: searcher(label, graph, runtime, device_graph, pinned, args)
            for label in labels}
    checked = [args.validate == "all" or i == 0 for i in range(len(keys))]
    found = {label: [] for label in labels}
    if args.order == "interleaved":
        for label in labels:
            ones[label](keys[0], check=False)
        for key, check in zip(keys, checked, strict=True):
            for label in labels:
                found[label].append(ones[label](key, check))
        return found
    for label in labels:
        start = time.perf_counter()
        ones[label](keys[0], check=False)
        found[label] = [ones[label](key, check) for key, check in zip(keys, checked, strict=True)]
        print(f"{label}: {len(keys)} keys in {time.perf_counter() - start:.1f} s with warm-up "
              f"and validation", flush=True)
    return found


def summary(label, searches, args) -> dict:
    """The configuration's row: harmonic-mean TEPS, wall times, time outside ``search_seconds``."""
    strategy, direction = CONFIGS[label]
    walls = np.array([s.wall for s in searches])
    row = {
        "config": label, "strategy": strategy, "direction": direction,
        "tasks": "/".join(str(t) for t in sorted({s.tasks for s in searches} - {None})),
        "keys": len(searches), "hmean_teps": harmonic_mean([s.teps for s in searches]),
        "median_wall_s": float(np.median(walls)), "min_wall_s": float(walls.min()),
        "max_wall_s": float(walls.max()),
        "median_levels": float(np.median([s.levels for s in searches])),
        "validated": args.validate, "order": args.order, "median_elapsed_s": "",
        "outside_share": "",
        "median_copy_s": "",
    }
    if strategy == "plain":
        row["median_copy_s"] = float(np.median([s.copy for s in searches]))
        row["hmean_teps_host"] = harmonic_mean([s.edges / (s.wall + s.copy) for s in searches])
    else:
        elapsed = np.array([s.elapsed for s in searches])
        row["median_elapsed_s"] = float(np.median(elapsed))
        row["outside_share"] = float(1.0 - elapsed.sum() / walls.sum())
    return row


def add_ratios(rows) -> None:
    """Each row's TEPS over plain-do's and plain-td's (empty where that peer did not run)."""
    teps = {row["config"]: row["hmean_teps"] for row in rows}
    on_host = {row["config"]: row["hmean_teps_host"] for row in rows if "hmean_teps_host" in row}
    for row in rows:
        for peer_label, key in (("plain-do", "x_plain_do"), ("plain-td", "x_plain_td")):
            row[key] = row["hmean_teps"] / teps[peer_label] if peer_label in teps else ""
        row["x_plain_td_host"] = (row["hmean_teps"] / on_host["plain-td"]
                                  if "plain-td" in on_host else "")


def markdown_table(rows) -> str:
    """The scale's rows as a markdown table ("–" where a column does not apply)."""
    def number(value, scale, fmt, unit=""):
        return "–" if value == "" else f"{value * scale:{fmt}}{unit}"

    lines = ["| config | T | MTEPS (hmean) | median ms | × plain-do | × plain-td | "
             "× plain-td, on host | r.search_seconds ms | outside the search | "
             "parents copy ms | levels |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(" | ".join([
            f"| {row['config']}", f"{row['tasks'] or '–'}",
            number(row["hmean_teps"], 1e-6, ".1f"), number(row["median_wall_s"], 1e3, ".2f"),
            number(row["x_plain_do"], 1, ".2f"), number(row["x_plain_td"], 1, ".2f"),
            number(row["x_plain_td_host"], 1, ".2f"), number(row["median_elapsed_s"], 1e3, ".2f"),
            number(row["outside_share"], 100, ".0f", " %"),
            number(row["median_copy_s"], 1e3, ".2f"), f"{row['median_levels']:.0f} |"]))
    return "\n".join(lines)


def runnable(labels, runtime, plain_reason) -> list:
    """The configurations this machine can run; prints why any other is skipped."""
    out = []
    for label in labels:
        strategy, _ = CONFIGS[label]
        if strategy == "plain" and plain_reason is not None:
            continue
        if strategy in GPU_STRATEGIES and not runtime.has_gpu:
            print(f"({label} skipped: the cluster has no GPU worker)", flush=True)
            continue
        out.append(label)
    skipped = [label for label in labels if label in PLAIN_CONFIGS and label not in out]
    if skipped:
        print(f"(plain GPU peers {', '.join(skipped)} skipped: {plain_reason})", flush=True)
    return out


def run_scale(scale, labels, runtime, args, machine, writer) -> None:
    """Build the graph and keys, time every configuration, print the table, write rows."""
    if not labels:
        print(f"(scale {scale}: no configuration can run here)", flush=True)
        return
    start = time.perf_counter()
    graph = graph_files.kronecker(scale, 16, args.seed, args.graph_dir)
    build = time.perf_counter() - start
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
    print(f"\n## scale {scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges "
          f"(built in {build:.1f} s), {len(keys)} keys", flush=True)
    device_graph = pinned = None
    if any(CONFIGS[label][0] == "plain" for label in labels):
        start = time.perf_counter()
        device_graph = peer.upload_graph(graph)
        pinned = peer.pinned_like(device_graph.parents)
        print(f"plain loop: graph and buffers on the GPU in {time.perf_counter() - start:.1f} s "
              f"({device_graph.device_bytes / 2**30:.2f} GiB)", flush=True)
    found = run_configs(labels, graph, keys, runtime, device_graph, pinned, args)
    rows = [summary(label, found[label], args) for label in labels]
    for row in rows:
        print(f"{row['config']}: {row['hmean_teps'] / 1e6:.1f} MTEPS, median "
              f"{row['median_wall_s'] * 1e3:.2f} ms ({args.order})", flush=True)
    if "hybrid" in found and "gpu" in found:  # the pair the hybrid target compares
        paired = [h.wall / g.wall for h, g in zip(found["hybrid"], found["gpu"], strict=True)]
        print(f"hybrid / gpu wall, key by key: median {np.median(paired):.2f} "
              f"({min(paired):.2f}-{max(paired):.2f})", flush=True)
    add_ratios(rows)
    print("\n" + markdown_table(rows) + "\n", flush=True)
    for row in rows:
        row.pop("hmean_teps_host", None)
        writer.writerow({**machine, "scale": scale, "vertices": graph.num_vertices,
                         "edges": graph.num_edges, **row})
    del device_graph
    if peer.cupy is not None and peer.cupy_status() is None:
        peer.cupy.get_default_memory_pool().free_all_blocks()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[22, 24])
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--tasks", type=int, default=None,
                        help="taskbfs's T (default: tb.default_tasks for each strategy)")
    parser.add_argument("--alpha", type=float, default=peer.ALPHA,
                        help="the plain loop's Beamer alpha (taskbfs uses the setting taskbfs.direction.alpha)")
    parser.add_argument("--beta", type=float, default=peer.BETA,
                        help="the plain loop's Beamer beta (taskbfs uses taskbfs.direction.beta)")
    parser.add_argument("--validate", choices=["all", "first"], default="all",
                        help="Graph500 validation of every search, or of each "
                             "configuration's first key only")
    parser.add_argument("--order", choices=["blocks", "interleaved"], default="blocks",
                        help="each configuration's keys in a block, or key by key every "
                             "configuration in turn")
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--graph-dir", default=None,
                        help="read the graphs from (or save them into) this directory")
    return parser.parse_args()


def main():
    args = parse_args()
    plain_reason = peer.cupy_status()
    gpu = peer.device_name() or f"{device_name()} (numba; CuPy: {plain_reason})"
    machine = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
               "cpus": os.cpu_count(), "gpu": gpu}
    print(f"date {machine['date']}; machine {machine['host']}, {machine['cpus']} CPUs; "
          f"GPU: {gpu}", flush=True)
    cupy_version = peer.cupy.__version__ if peer.cupy is not None else "not installed"
    print(f"CuPy {cupy_version}; plain loop alpha {args.alpha:g}, beta {args.beta:g}; taskbfs "
          f"alpha {config.get('direction.alpha'):g}, beta {config.get('direction.beta'):g}, T {args.tasks or 'default'}; "
          f"validate {args.validate}", flush=True)
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with tb.Runtime() as rt, open(args.csv, "w", newline="") as fh:
        print(f"cluster: {rt.resources()}", flush=True)
        labels = runnable(args.configs, rt, plain_reason)
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for scale in args.scales:
            run_scale(scale, labels, rt, args, machine, writer)
            fh.flush()
    print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
