"""Back-to-back ``tb.bfs`` calls on one warm runtime: how the wall changes over the calls.

Returns
    Prints, per strategy, the median and minimum wall of ``--keys`` calls in four series
    run one after another: back to back, with a pause before each call (the previous
    call's deferred work, its trace and the live page's update, is done by then), with a
    short GIL switch interval (0.5 ms, so that the thread that starts the search does not
    wait for another to yield), and back to back again. A series slower than the later
    ones says the runtime was not steady yet (the first dozens of calls).

    python benchmarks/steady_calls.py --scale 22 --strategies gpu hybrid --keys 16
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))

import graph_files  # noqa: E402

SERIES = (("back-to-back", 0.0, 0.005), ("pause 20 ms", 0.02, 0.005),
          ("switch 0.5 ms", 0.0, 0.0005), ("back-to-back", 0.0, 0.005))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--strategies", nargs="+", default=["gpu", "hybrid"])
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--graph-dir", default=None,
                        help="read / keep the generated graph there (graph_files.py)")
    args = parser.parse_args()
    graph = graph_files.kronecker(args.scale, 16, 1, args.graph_dir)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=1)]
    switch = sys.getswitchinterval()
    with tb.Runtime() as rt:
        for strategy in args.strategies:
            for k in keys[:3]:  # warm
                tb.bfs(graph, k, strategy=strategy, runtime=rt)
            for label, pause, interval in SERIES:
                sys.setswitchinterval(interval)
                walls = []
                for k in keys:
                    time.sleep(pause)
                    start = time.perf_counter()
                    tb.bfs(graph, k, strategy=strategy, runtime=rt)
                    walls.append(time.perf_counter() - start)
                sys.setswitchinterval(switch)
                print(f"{strategy:7s} {label:14s} median {statistics.median(walls) * 1e3:6.2f} ms  "
                      f"min {min(walls) * 1e3:6.2f}", flush=True)


if __name__ == "__main__":
    main()
