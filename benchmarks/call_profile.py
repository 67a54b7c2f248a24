"""Where the caller's thread spends a ``tb.bfs`` call: a profile of the client side.

Returns (prints) the wall of each call and a cProfile table (cumulative time) of the
caller's thread over ``--keys`` searches on a warm embedded runtime: what the call does
before the search task starts and after its result arrives (validation, placement lookup,
settings, round trips to the scheduler, the result object), and how long it waits.
cProfile sees only the calling thread, which is the point: the workers' threads and the
event loop are the search; the rest of the wall is the caller's.

    python benchmarks/call_profile.py --scale 24 --strategy gpu --keys 8
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import taskbfs as tb


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--strategy", default="cpu")
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--lines", type=int, default=30)
    args = parser.parse_args(argv)
    graph = tb.kronecker(args.scale)
    keys = [int(k) for k in tb.search_keys(graph, args.keys + 1, seed=1)]
    with tb.Runtime() as rt:
        tb.bfs(graph, keys[0], strategy=args.strategy, runtime=rt)  # placed, warm
        walls, outside = [], []
        profile = cProfile.Profile()
        for key in keys[1:]:
            start = time.perf_counter()
            profile.enable()
            r = tb.bfs(graph, key, strategy=args.strategy, runtime=rt)
            profile.disable()
            walls.append(time.perf_counter() - start)
            outside.append(r.elapsed - r.search_seconds)
            del r
        print(f"scale {args.scale}, {args.strategy}: wall median {1e3 * np.median(walls):.2f} ms, "
              f"outside the search median {1e3 * np.median(outside):.2f} ms")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(args.lines)


if __name__ == "__main__":
    main()
