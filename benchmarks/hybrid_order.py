"""Does a search's speed depend on the search before it? gpu and hybrid in blocks and interleaved.

Returns (prints): per segment of one process's calls (a configuration's keys in a block,
or two configurations alternating key by key), per configuration, the median wall of
``tb.bfs`` and its parts: ``before`` (the call's entry to its first level's start),
``levels`` (the first level's start to the last one's stop), ``after`` (the last level's
stop to the call's return with the result in hand), and the harmonic-mean TEPS.
Approach
    Issue 16's hybrid target reads 0.87 x gpu at scale 24 when each configuration's keys
    run in a block and above 1 when they alternate (``gpu_user_wall.py --order``). If a
    search leaves the next one a cost that depends on which strategy ran before, the same
    configuration's parts differ between the segments below, and the part that differs
    says where. One embedded runtime (a GPU worker when CUDA is present), one graph, the
    same keys in every segment; every configuration warmed up first. Segments: gpu block,
    hybrid block, hybrid block, gpu block, gpu/hybrid alternating, hybrid/gpu alternating.
    Between calls, only the Graph500 traversed-edge count (on the caller's thread).

    python benchmarks/hybrid_order.py --scale 24 --keys 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))

import graph_files  # noqa: E402
from gpu_strategies import harmonic_mean  # noqa: E402

SEGMENTS = [("gpu",), ("hybrid",), ("hybrid",), ("gpu",), ("gpu", "hybrid"), ("hybrid", "gpu")]


def timed_call(graph, key, strategy, runtime) -> dict:
    """One call under the stopwatch and its parts (ms), from the result's level table
    (whose start and stop are seconds since the call's entry)."""
    start = time.perf_counter()
    r = tb.bfs(graph, key, strategy=strategy, runtime=runtime)
    wall = time.perf_counter() - start
    levels = r.levels
    first, last = float(levels["start"].iloc[0]), float(levels["stop"].iloc[-1])
    return {"wall": wall * 1e3, "before": first * 1e3, "levels": (last - first) * 1e3,
            "after": (wall - last) * 1e3, "teps": tb.traversed_edges(graph, r.parents) / wall}


def run_segment(graph, keys, strategies, runtime) -> dict:
    """``strategy -> list of parts`` over the keys, the strategies alternating per key."""
    found = {s: [] for s in strategies}
    for key in keys:
        for strategy in strategies:
            found[strategy].append(timed_call(graph, key, strategy, runtime))
    return found


def print_segment(number, strategies, found) -> None:
    order = " / ".join(strategies) + (" alternating" if len(strategies) > 1 else " block")
    for strategy, calls in found.items():
        med = {part: np.median([c[part] for c in calls]) for part in ("wall", "before", "levels", "after")}
        teps = harmonic_mean([c["teps"] for c in calls]) / 1e9
        print(f"{number} {order:26s} {strategy:7s} {teps:6.2f} GTEPS  wall {med['wall']:7.2f}  "
              f"before {med['before']:6.2f}  levels {med['levels']:7.2f}  after {med['after']:6.2f} ms",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=24)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graph-dir", default=None,
                        help="read the graph from (or save it into) this directory")
    args = parser.parse_args()
    with tb.Runtime() as runtime:
        if not runtime.has_gpu:
            sys.exit("hybrid_order.py compares gpu with hybrid: the cluster has no GPU worker")
        graph = graph_files.kronecker(args.scale, 16, args.seed, args.graph_dir)
        keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
        for strategy in ("gpu", "hybrid"):  # placement, buffers, kernels; checked once
            r = tb.bfs(graph, keys[0], strategy=strategy, runtime=runtime)
            tb.validate(graph, keys[0], r.parents, levels=r.distances)
        print(f"scale {args.scale}, {len(keys)} keys; median ms per part; {runtime}", flush=True)
        for number, strategies in enumerate(SEGMENTS, 1):
            print_segment(number, strategies, run_segment(graph, keys, strategies, runtime))


if __name__ == "__main__":
    main()
