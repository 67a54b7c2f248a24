"""Why some ``tb.bfs`` calls take several times the median: garbage collection, compilation.

Returns
    Prints, for ``--keys`` warm calls per strategy on one Kronecker graph (embedded
    runtime), the median wall and, for every call slower than ``--slow`` times the median,
    what ran during it in this process: Python's garbage collections (count, generation,
    ms), numba compilations (function names, ms) and the call's wall; with ``--sample``,
    the stacks most often seen on busy threads during it (every 1 ms; idle waits left out).
Approach
    The embedded cluster's workers are threads of this process, so ``gc.callbacks`` and
    numba's compile events (``numba.core.event``) see the workers' pauses too. One untimed
    search per strategy first, as in ``gpu_user_wall.py``.

    python benchmarks/slow_calls.py --scale 22 --strategies gpu hybrid --keys 32
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
from numba.core import event

import taskbfs as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from call_timeline import WindowSampler  # noqa: E402

#: Innermost frames of a thread that is waiting, not working.
IDLE = ("threading.py:wait", "selectors.py:select", "queue.py:get", "thread.py:_worker",
        "base_events.py:_run_once", "threading.py:_wait_for_tstate_lock", "_base.py:result")


class Pauses:
    """Garbage collections and numba compilations, with their times."""

    def __init__(self):
        self.collections: list[tuple[int, float, float]] = []  # (generation, start, stop)
        self.compiles: list[tuple[str, float, float]] = []
        self._gc_start = None
        gc.callbacks.append(self._on_gc)
        event.register("numba:compile", _compile_listener(event, self.compiles))
        try:  # numba-cuda holds its compiler lock while it compiles a kernel
            from numba.cuda.core import event as cuda_event

            cuda_event.register("numba-cuda:compiler_lock",
                                _compile_listener(cuda_event, self.compiles, "a CUDA kernel"))
        except ImportError:
            pass

    def _on_gc(self, phase, info):
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif self._gc_start is not None:
            self.collections.append((info["generation"], self._gc_start, time.perf_counter()))

    def during(self, start: float, stop: float) -> tuple[list, list]:
        inside = [c for c in self.collections if c[1] >= start and c[2] <= stop]
        built = [c for c in self.compiles if c[1] >= start and c[2] <= stop]
        return inside, built


def _compile_listener(bus, out: list, what: str | None = None):
    """A listener on ``bus`` (numba's or numba-cuda's event module) that appends
    ``(function name, start, stop)`` to ``out`` for every compilation (named ``what``
    when the event does not say)."""

    class CompileListener(bus.Listener):
        def __init__(self):
            self._open = {}

        def on_start(self, ev):
            self._open[id(ev.data)] = time.perf_counter()

        def on_end(self, ev):
            start = self._open.pop(id(ev.data), None)
            if start is not None:
                found = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
                name = what or getattr(found, "__qualname__", None) or str(ev.data)[:60]
                if isinstance(ev.data, dict) and ev.data.get("args") is not None:
                    name += str(tuple(ev.data["args"]))  # the types it was compiled for
                out.append((name, start, time.perf_counter()))

    return CompileListener()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--strategies", nargs="+", default=["gpu", "hybrid"])
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--slow", type=float, default=2.0)
    parser.add_argument("--sample", action="store_true",
                        help="sample every thread's stack each 1 ms (perturbs the calls a little)")
    args = parser.parse_args()
    pauses = Pauses()
    sampler = WindowSampler(interval=0.001, depth=6) if args.sample else None
    graph = tb.kronecker(args.scale, edgefactor=16, seed=1)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=1)]
    with tb.Runtime() as rt:
        print(f"scale {args.scale}; cluster {rt.resources()}; gc thresholds {gc.get_threshold()}",
              flush=True)
        if sampler is not None:
            sampler.start()
        for strategy in args.strategies:
            tb.bfs(graph, keys[0], strategy=strategy, runtime=rt)  # warm-up
            walls = []
            for key in keys:
                start = time.perf_counter()
                tb.bfs(graph, key, strategy=strategy, runtime=rt)
                walls.append((start, time.perf_counter()))
            ms = np.array([(b - a) * 1e3 for a, b in walls])
            median = float(np.median(ms))
            print(f"\n{strategy}: median {median:.2f} ms, max {ms.max():.2f} ms, "
                  f"{int((ms > args.slow * median).sum())} of {len(ms)} calls over "
                  f"{args.slow:g}x the median", flush=True)
            for i, (start, stop) in enumerate(walls):
                if ms[i] <= args.slow * median:
                    continue
                collections, compiles = pauses.during(start, stop)
                gcs = ", ".join(f"gen{g} {(b - a) * 1e3:.1f} ms" for g, a, b in collections)
                built = ", ".join(f"{n} {(b - a) * 1e3:.0f} ms" for n, a, b in compiles)
                print(f"  key {i} ({keys[i]}): {ms[i]:.1f} ms; gc: {gcs or 'none'}; "
                      f"compiled: {built or 'nothing'}", flush=True)
                if sampler is not None:
                    busy = [(c, name, stack) for c, name, stack in sampler.during(start, stop)
                            if not stack.startswith(IDLE)]
                    for count, name, stack in busy[:10]:
                        print(f"      {count:4d} ms  {name}: {stack}", flush=True)
            every = [(b - a) * 1e3 for g, a, b in pauses.collections
                     if g == 2 and a >= walls[0][0]]
            print(f"  gen2 collections during the {strategy} calls: {len(every)}, "
                  f"{sum(every):.1f} ms in all", flush=True)
        if sampler is not None:
            sampler.stop()


if __name__ == "__main__":
    main()
