"""The first search of a fresh process against the steady ones: is anything compiled inside it?

Returns
    Prints, per strategy, the wall time of the first ``tb.bfs`` call of a new Python
    process (``tb.Runtime()`` started, which loads the search code on its workers, and the
    graph placed before it, untimed), the median of the next
    ``--repeats`` calls on other keys, and their ratio. Issue "Speed as the user gets it"
    (item 3) asks for at most 2x: numba's functions are compiled once per machine
    (``cache=True``), and a runtime's start loads them on every worker
    (``taskbfs.runtime.worker-warm-up``).
Approach
    Each strategy runs in its own subprocess (``python first_search.py --child ...``), so
    nothing of an earlier search is warm in it.

    python benchmarks/first_search.py --scale 20 --strategies cpu hybrid
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def child(scale: int, strategy: str, repeats: int) -> dict:
    import numpy as np

    import taskbfs as tb

    graph = tb.kronecker(scale, 16, seed=1)
    keys = [int(k) for k in tb.search_keys(graph, repeats + 1, seed=3)]
    with tb.Runtime() as runtime:  # its start loads the search code on its workers
        from taskbfs.bfs.core import default_tasks
        from taskbfs.bfs.placement import place_graph

        # as tb.bfs places it: with a policy that may use the GPU, the slices go to the
        # GPU workers' device memory now
        place_graph(runtime, graph, default_tasks(runtime, strategy), tb.config.get("balance"),
                    need_transpose=True, to_gpu=strategy != "cpu" and runtime.has_gpu)
        walls = []
        for i, key in enumerate(keys):
            print(f"=== search {i}", flush=True)  # numba's cache messages fall between these
            start = time.perf_counter()
            tb.bfs(graph, key, strategy=strategy, runtime=runtime)
            walls.append(time.perf_counter() - start)
        print("=== done", flush=True)
    return {"first": walls[0], "steady": float(np.median(walls[1:]))}


def _loads_inside_searches(output: str) -> list[str]:
    """The functions numba loaded or compiled during the searches (``NUMBA_DEBUG_CACHE``
    lines between the first ``=== search`` marker and ``=== done``)."""
    inside = output.split("=== search 0", 1)[-1].split("=== done", 1)[0]
    return sorted({line.split("'")[1].rsplit("/", 1)[-1] for line in inside.splitlines()
                   if line.startswith("[cache] data loaded") or line.startswith("[cache] data saved")})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--strategies", nargs="+", default=["cpu", "hybrid"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--debug-cache", action="store_true",
                        help="also list the numba functions loaded or compiled inside the searches")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.scale, args.child, args.repeats)))
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; Kronecker scale {args.scale}; first call of a "
          "fresh process (runtime started, graph placed) against the median of the next "
          f"{args.repeats}")
    for strategy in args.strategies:
        env = dict(os.environ, NUMBA_DEBUG_CACHE="1") if args.debug_cache else None
        out = subprocess.run([sys.executable, __file__, "--scale", str(args.scale), "--repeats",
                              str(args.repeats), "--child", strategy],
                             capture_output=True, text=True, check=True, env=env)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if args.debug_cache:
            loads = _loads_inside_searches(out.stdout + out.stderr)
            print(f"{strategy:>8s}: numba cache files loaded or saved inside the searches: "
                  f"{', '.join(loads) or 'none'}", flush=True)
        print(f"{strategy:>8s}: first {1e3 * result['first']:8.1f} ms, steady median "
              f"{1e3 * result['steady']:8.1f} ms, ratio {result['first'] / result['steady']:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
