"""Where a GPU search's result assembly goes, search by search (issue 16: some scale-24
searches spent ~50 ms there, others 3 ms).

Returns (prints) per search on the embedded runtime (T = 1, its GPU worker): the call's
wall, the time in ``result_to_host`` and in each ``copy_out`` (the two result arrays to
the host), whether each array came from the pinned pool, the pool's counters after the
call, and the garbage collector's pauses during the call.
Approach: the embedded cluster's workers run in this process, so wrapping the module
functions (``taskbfs.kernels.pinned.copy_out``, ``taskbfs.bfs.device_cache.result_to_host``)
sees every call; ``gc.callbacks`` times the collections.

    python benchmarks/gpu_assembly_probe.py --scale 24 --keys 8 --strategy gpu
"""

from __future__ import annotations

import argparse
import gc
import time

import taskbfs as tb
from taskbfs.bfs import device_cache
from taskbfs.kernels import pinned

events: list[tuple[str, float, str]] = []
_gc_start = [0.0]


def timed(module, name):
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = original(*args, **kwargs)
        note = ""
        if name == "copy_out":
            note = "pinned" if not out.flags.owndata else "new"
        events.append((name, time.perf_counter() - start, note))
        return out

    setattr(module, name, wrapper)


def gc_pauses(phase, info):
    if phase == "start":
        _gc_start[0] = time.perf_counter()
    else:
        events.append((f"gc gen{info['generation']}", time.perf_counter() - _gc_start[0], ""))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=24)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--strategy", default="gpu")
    parser.add_argument("--hold", type=int, default=1, help="results held at once")
    args = parser.parse_args(argv)
    timed(pinned, "copy_out")
    timed(device_cache, "result_to_host")
    gc.callbacks.append(gc_pauses)
    graph = tb.kronecker(args.scale)
    keys = [int(k) for k in tb.search_keys(graph, args.keys + 1, seed=1)]
    with tb.Runtime() as rt:
        tb.bfs(graph, keys[0], tasks=1, strategy=args.strategy, runtime=rt)
        held = []
        for key in keys[1:]:
            events.clear()
            start = time.perf_counter()
            r = tb.bfs(graph, key, tasks=1, strategy=args.strategy, runtime=rt)
            wall = time.perf_counter() - start
            held = (held + [r])[-args.hold:]
            del r
            pool = pinned.pinned_pool()
            parts = ", ".join(f"{name} {1e3 * s:.1f}{' ' + note if note else ''}"
                              for name, s, note in events if s > 2e-4 or not name.startswith("gc"))
            print(f"{1e3 * wall:7.1f} ms | {parts} | pool reused {pool.reused} allocated "
                  f"{pool.allocated} refused {pool.refused} free {pool.free_bytes >> 20} MiB "
                  f"held {pool.allocated_bytes >> 20} MiB", flush=True)


if __name__ == "__main__":
    main()
