"""Small levels inside one task, against every level as T steps and a barrier, paired per key.

For each search key the searches with each ``small_level_edges`` value run back to back,
in an order that alternates from key to key (so that drift on a shared machine does not
favour one setting), on the embedded default cluster. Prints, per setting: median ms per
search, harmonic-mean MTEPS, the median per-key ratio of its time to the first
setting's, and how many levels ran inside small-level tasks; then the median level
table of the first key for each setting. Every search's distances are checked against
the first setting's. A setting is ``TD`` or ``TD:BU``: ``small_level_edges=TD`` and, with
``BU``, ``config.SMALL_BOTTOM_UP_EDGES = BU`` (the most unexplored edges of a small
bottom-up level; 0: none) for its searches.

    python benchmarks/small_levels.py --scale 22 --keys 16 --tasks 2 --edges 0 65536
    python benchmarks/small_levels.py --scale 20 --tasks 2 --edges 65536:0 65536:2097152
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import taskbfs as tb
from taskbfs import config


def harmonic_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    return len(values) / np.sum(1.0 / values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--edgefactor", type=int, default=16)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=None, help="T (default: bfs's default)")
    parser.add_argument("--edges", nargs="+", default=["0", str(1 << 16)],
                        help="settings to compare: small_level_edges (0: off), or TD:BU to set "
                             "config.SMALL_BOTTOM_UP_EDGES = BU too")
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    t0 = time.perf_counter()
    graph = tb.kronecker(args.scale, edgefactor=args.edgefactor, seed=args.seed)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
    print(f"scale {args.scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges "
          f"(built in {time.perf_counter() - t0:.1f} s), {len(keys)} keys, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    with tb.Runtime() as rt:
        run = dict(tasks=args.tasks, strategy=args.strategy, runtime=rt)
        default_bottom_up = config.SMALL_BOTTOM_UP_EDGES

        def search(key, setting):
            top_down, _, bottom_up = setting.partition(":")
            config.SMALL_BOTTOM_UP_EDGES = int(bottom_up) if bottom_up else default_bottom_up
            return tb.bfs(graph, key, small_level_edges=int(top_down), **run)

        for edges in args.edges:  # warm-up: compilation, placement
            search(keys[0], edges)
        print(f"cluster: {rt.resources()}; T = {tb.default_tasks(rt, args.strategy) if args.tasks is None else args.tasks}")
        seconds = {e: [] for e in args.edges}
        teps = {e: [] for e in args.edges}
        inside = {e: [] for e in args.edges}
        first_levels = {}
        for i, key in enumerate(keys):
            order = args.edges if i % 2 == 0 else args.edges[::-1]
            reference = None
            for edges in order:
                r = search(key, edges)
                if reference is None:
                    reference = r.distances
                elif not np.array_equal(reference, r.distances):
                    raise SystemExit(f"key {key}: setting {edges} changed the distances")
                seconds[edges].append(r.elapsed)
                teps[edges].append(r.teps)
                steps = r.trace.groupby("level")["included"].all()
                inside[edges].append((int(steps.sum()), len(steps)))
                if i == 0:
                    first_levels[edges] = r.levels
    base = np.asarray(seconds[args.edges[0]])
    print(f"\n{'small_level_edges':>18s}{'ms / search':>13s}{'MTEPS hmean':>13s}"
          f"{'time ratio':>12s}{'levels inside / all':>22s}")
    for edges in args.edges:
        ratio = float(np.median(np.asarray(seconds[edges]) / base))
        small = np.sum([a for a, _ in inside[edges]])
        total = np.sum([b for _, b in inside[edges]])
        print(f"{edges:>18s}{np.median(seconds[edges]) * 1e3:13.1f}"
              f"{harmonic_mean(teps[edges]) / 1e6:13.1f}{ratio:12.3f}{f'{small} / {total}':>22s}")
    for edges in args.edges:
        print(f"\nfirst key, small_level_edges={edges}:")
        print(first_levels[edges][["level", "direction", "frontier_size", "frontier_edges",
                                   "tasks", "start", "stop"]].to_string(index=False))


if __name__ == "__main__":
    main()
