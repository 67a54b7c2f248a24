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

    ``--sample`` also samples every thread's stack (the embedded cluster's workers are
    threads) in the first search and in the first key searched again, and lists the
    functions the first search spent more samples in.

    python benchmarks/first_search.py --scale 20 --strategies cpu hybrid [--sample]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time


class StackSampler:
    """Counts, every ``interval`` seconds, the functions on every thread's stack (the embedded
    cluster's workers are threads of this process), leaving out threads that wait."""

    IDLE = ("wait", "select", "poll", "_worker", "sleep", "acquire", "get", "run_forever")

    def __init__(self, interval: float = 0.0005):
        import collections
        import threading

        self.interval, self.counts = interval, collections.Counter()
        self._stop, self._thread = threading.Event(), None

    def __enter__(self):
        import threading

        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import threading

        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            for ident, frame in sys._current_frames().items():
                if ident == me or frame.f_code.co_name in self.IDLE:
                    continue
                seen = set()
                while frame is not None:
                    code = frame.f_code
                    name = f"{os.path.basename(code.co_filename)}:{code.co_name}"
                    if name not in seen:
                        seen.add(name)
                        self.counts[name] += 1
                    frame = frame.f_back


def child(scale: int, strategy: str, repeats: int, sample: bool = False) -> dict:
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
                    need_transpose=True, to_gpu="graph" if strategy != "cpu" and runtime.has_gpu else None)
        walls, parts, samples = [], [], []
        for i, key in enumerate(keys + keys[:1]):  # the first key again, warm, at the end
            print(f"=== search {i}", flush=True)  # numba's cache messages fall between these
            sampler = StackSampler()
            start = time.perf_counter()
            with sampler if sample and i in (0, len(keys)) else contextlib.nullcontext():
                r = tb.bfs(graph, key, strategy=strategy, runtime=runtime)
            walls.append(time.perf_counter() - start)
            parts.append(_parts(r))
            samples.append(sampler.counts)
        print("=== done", flush=True)
    more = samples[0] - samples[-1]  # where the first search spent samples the warm one did not
    return {"first": walls[0], "steady": float(np.median(walls[1:-1])),
            "first_parts": parts[0], "again_parts": parts[-1],
            "first_more": more.most_common(25)}


def _parts(r) -> dict:
    """Where a call's time went, in ms: the search's own spans and each level's."""
    levels = r.levels
    return {"elapsed": 1e3 * r.elapsed, "search": 1e3 * r.search_seconds,
            "assembly": 1e3 * r.assembly_seconds,
            "levels": [round(1e3 * s, 2) for s in (levels["stop"] - levels["start"])]}


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
    parser.add_argument("--sample", action="store_true",
                        help="also sample every thread's stack in the first search and in the "
                             "first key searched again, and list what the first spent more on")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.scale, args.child, args.repeats, args.sample)))
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; Kronecker scale {args.scale}; first call of a "
          "fresh process (runtime started, graph placed) against the median of the next "
          f"{args.repeats}")
    for strategy in args.strategies:
        env = dict(os.environ, NUMBA_DEBUG_CACHE="1") if args.debug_cache else None
        out = subprocess.run([sys.executable, __file__, "--scale", str(args.scale), "--repeats",
                              str(args.repeats), "--child", strategy]
                             + (["--sample"] if args.sample else []),
                             capture_output=True, text=True, check=True, env=env)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if args.debug_cache:
            loads = _loads_inside_searches(out.stdout + out.stderr)
            print(f"{strategy:>8s}: numba cache files loaded or saved inside the searches: "
                  f"{', '.join(loads) or 'none'}", flush=True)
        print(f"{strategy:>8s}: first {1e3 * result['first']:8.1f} ms, steady median "
              f"{1e3 * result['steady']:8.1f} ms, ratio {result['first'] / result['steady']:.2f}",
              flush=True)
        for name in ("first_parts", "again_parts"):
            part = result[name]
            print(f"{'':>8s}  {name.split('_')[0]:>5s} key 0: elapsed {part['elapsed']:.1f} ms, "
                  f"search {part['search']:.1f}, assembly {part['assembly']:.1f}, "
                  f"levels {part['levels']}", flush=True)
        for name, count in result["first_more"]:
            print(f"{'':>10s}{count:6d} more samples (0.5 ms)  {name}", flush=True)


if __name__ == "__main__":
    main()
