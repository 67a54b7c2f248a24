"""Where a hybrid search's time goes against the gpu strategy's, key by key and level by level.

Returns (prints): for each scale and search key, the wall time of ``tb.bfs`` per
configuration (``gpu``, ``hybrid``, and ``hybrid`` at each ``--lams``), run one after
another on the same key, and per level of that key: direction, frontier size, the device
of its step(s) and the level's time (from the previous level's end to its own) per
configuration; at the end, per configuration, the harmonic-mean TEPS over the keys and the
median wall.
Approach
    One process, the embedded runtime (a GPU worker when CUDA is present), one untimed
    warm-up search per configuration; then the configurations interleaved key by key, so
    that each key's figures are paired. The Graph500 check runs on the first key only,
    after the stopwatch.

    python benchmarks/hybrid_levels.py --scales 24 --keys 8 --lams 100 1000
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


def configurations(lams) -> list[tuple[str, str, float | None]]:
    """``(label, strategy, lam)`` per configuration."""
    return ([("gpu", "gpu", None), ("hybrid", "hybrid", None)]
            + [(f"hybrid-l{lam:g}", "hybrid", float(lam)) for lam in lams])


def level_table(r) -> dict:
    """Per level: ``(direction, frontier size, devices, ms)``; the level's time is the span
    from the previous level's end to its own (its steps and barrier, and what ran between)."""
    levels = r.levels
    stops = levels["stop"].to_numpy()
    out = {}
    for i, row in enumerate(levels.itertuples()):
        devices = "/".join(name for name, count in (("cpu", row.tasks_cpu), ("gpu", row.tasks_gpu))
                           if count) or "-"
        span = (stops[i] - (stops[i - 1] if i else row.start)) * 1e3
        out[int(row.level)] = (str(row.direction), int(row.frontier_size), devices, span)
    return out


def run_key(graph, key, configs, runtime, check) -> dict:
    """Each configuration on ``key``: ``label -> (wall, traversed edges, level table)``."""
    out = {}
    for label, strategy, lam in configs:
        start = time.perf_counter()
        r = tb.bfs(graph, key, strategy=strategy, lam=lam, runtime=runtime)
        wall = time.perf_counter() - start
        if check:
            tb.validate(graph, key, r.parents, levels=r.distances)
        out[label] = (wall, r.traversed_edges, level_table(r))
    return out


def print_key(key, results) -> None:
    labels = list(results)
    print(f"\nkey {key}: " + ", ".join(f"{label} {results[label][0] * 1e3:.2f} ms"
                                       for label in labels), flush=True)
    levels = sorted(set().union(*(results[label][2] for label in labels)))
    print("level | " + " | ".join(f"{label}: dir size device ms" for label in labels))
    for level in levels:
        cells = []
        for label in labels:
            row = results[label][2].get(level)
            cells.append("-" if row is None else
                         f"{row[0][:2]} {row[1]} {row[2]} {row[3]:.2f}")
        print(f"{level} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[24])
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lams", type=float, nargs="*", default=[])
    parser.add_argument("--graph-dir", default=None,
                        help="read the graphs from (or save them into) this directory")
    args = parser.parse_args()
    configs = configurations(args.lams)
    with tb.Runtime() as runtime:
        print(f"cluster: {runtime}; taskbfs from {tb.__file__}", flush=True)
        if not runtime.has_gpu:
            print("(gpu skipped: the cluster has no GPU worker)", flush=True)
            configs = [c for c in configs if c[1] != "gpu"]
        for scale in args.scales:
            graph = graph_files.kronecker(scale, 16, args.seed, args.graph_dir)
            keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
            print(f"\n## scale {scale}: {graph.num_vertices:,} vertices, "
                  f"{graph.num_edges:,} edges, {len(keys)} keys", flush=True)
            for _, strategy, lam in configs:  # warm: placement, buffers, kernels
                tb.bfs(graph, keys[0], strategy=strategy, lam=lam, runtime=runtime)
            walls = {label: [] for label, _, _ in configs}
            teps = {label: [] for label, _, _ in configs}
            for i, key in enumerate(keys):
                results = run_key(graph, key, configs, runtime, check=i == 0)
                print_key(key, results)
                for label, (wall, edges, _) in results.items():
                    walls[label].append(wall)
                    teps[label].append(edges / wall)
            print(f"\nscale {scale}, {len(keys)} keys:")
            for label in walls:
                print(f"  {label}: {harmonic_mean(teps[label]) / 1e9:.2f} GTEPS (hmean), "
                      f"median {np.median(walls[label]) * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
