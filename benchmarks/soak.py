"""Memory over many searches: does anything grow per search?

Runs ``--searches`` BFS calls of one small graph (after ``--warm`` calls that are not
counted) and prints the resident memory before and after, per search, of this process
(the embedded runtime: client, scheduler and worker in one process) or, with
``--external``, of a ``dask scheduler`` and a ``dask worker`` process started here on
127.0.0.1, and how many event topics the scheduler keeps. ``--tracemalloc N`` also traces
Python allocations and prints the N allocation sites whose live memory grew most (where
the growth per search goes): over the counted searches in this process (embedded), or over
their second half in the scheduler and each worker (``--external``; session 16 found dask's
``key_split`` cache that way). With ``--external``, every ``--every`` searches also print
how many keys that cache holds per process, how many graph slices each worker holds and
the scheduler's transitions per search (~446 for a dispatched search of the default
graph, a few for one included as one task: session 17 found slices moved off their
worker that way), the work-stealing requests so far and the load average;
``--fill-key-cache`` fills it first (as after ~100,000 task keys, where it stops growing)
and ``--config KEY=VALUE`` passes Dask settings to the processes (e.g. ``distributed.admin.low-level-log-length=100``). ``--objects`` prints,
every ``--every`` searches, which Python object types grew in number (the garbage
collector's view, in each process) and which containers of the scheduler, the workers,
the client and the runtime grew in length: how session 14 found the log records that
``client.run`` left per search.

    PYTHONPATH=$PWD python benchmarks/soak.py --searches 500 [--external] [--every 500]
    PYTHONPATH=$PWD python benchmarks/soak.py --searches 1000 --tracemalloc 15
    PYTHONPATH=$PWD python benchmarks/soak.py --searches 2000 --every 1000 --objects
    PYTHONPATH=$PWD python benchmarks/soak.py --searches 300 --external --tracemalloc 20
    PYTHONPATH=$PWD python benchmarks/soak.py --searches 800 --every 100 --external --fill-key-cache
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import psutil

import taskbfs as tb


def _topics(dask_scheduler=None) -> int:
    return len(getattr(getattr(dask_scheduler, "_broker", None), "_topics", ()))


def _type_counts() -> collections.Counter:
    """How many objects of each type the garbage collector tracks."""
    gc.collect()
    return collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}"
                               for o in gc.get_objects())


def _lengths(obj, prefix: str) -> dict[str, int]:
    """The lengths of ``obj``'s container attributes (``__dict__`` and ``__slots__``)."""
    names = set(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        names.update((slots,) if isinstance(slots, str) else slots)
    out = {}
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, (dict, list, set, collections.deque)):
            out[f"{prefix}.{name}"] = len(value)
    return out


def _scheduler_lengths(dask_scheduler=None) -> dict[str, int]:
    return _server_lengths(dask_scheduler, "scheduler")


def _worker_lengths(dask_worker=None) -> dict[str, int]:
    return {**_server_lengths(dask_worker, "worker"),
            **_lengths(dask_worker.state, "worker.state")}


def _server_lengths(server, prefix: str) -> dict[str, int]:
    """:func:`_lengths` of a scheduler or a worker, its extensions and its plugins."""
    out = _lengths(server, prefix)
    for kind in ("extensions", "plugins"):
        for name, part in getattr(server, kind).items():
            out.update(_lengths(part, f"{kind}.{name}"))
    return out


def _all_lengths(rt) -> dict[str, int]:
    out = dict(rt.client.run_on_scheduler(_scheduler_lengths))
    for address, lengths in rt.client.run(_worker_lengths).items():
        out.update({f"{address[-6:]} {k}": v for k, v in lengths.items()})
    out.update(_lengths(rt.client, "client"))
    out.update(_lengths(rt, "runtime"))
    return out


def _scheduler_types(dask_scheduler=None) -> collections.Counter:
    return _type_counts()


def _worker_types(dask_worker=None) -> collections.Counter:
    return _type_counts()


def _all_types(rt) -> collections.Counter:
    """:func:`_type_counts` of this process, and of the scheduler and every worker when
    they run elsewhere (prefixed by where)."""
    out = _type_counts()
    if not rt.in_process:
        for name, count in rt.client.run_on_scheduler(_scheduler_types).items():
            out[f"scheduler {name}"] = count
        for address, counts in rt.client.run(_worker_types).items():
            out.update({f"{address[-6:]} {k}": v for k, v in counts.items()})
    return out


def _print_objects(rt, last: dict, searches: int) -> dict:
    """Print what grew since ``last`` (``{"types", "lengths"}``; empty: only take it)."""
    now = {"types": _all_types(rt), "lengths": _all_lengths(rt)}
    if last:
        grown = (now["types"] - last["types"]).most_common(12)
        print(f"    objects per search: "
              f"{', '.join(f'{k} {v / searches:+.2f}' for k, v in grown)}")
        lengths = {k: (last["lengths"].get(k, 0), v) for k, v in now["lengths"].items()
                   if v > last["lengths"].get(k, 0)}
        print(f"    containers that grew: {lengths}", flush=True)
    return now


def _remote_trace_start(frames: int, dask_scheduler=None, dask_worker=None) -> None:
    """Start tracing Python allocations in a scheduler or worker process."""
    tracemalloc.start(frames)


def _remote_trace_mark(dask_scheduler=None, dask_worker=None) -> None:
    """Keep a snapshot on the server, to compare a later one with."""
    server = dask_scheduler or dask_worker
    server._soak_snapshot = tracemalloc.take_snapshot()


def _remote_trace_growth(top: int, searches: int, dask_scheduler=None,
                         dask_worker=None) -> str:
    """:func:`_print_growth` between the server's kept snapshot and now, as text."""
    import contextlib
    import io

    server = dask_scheduler or dask_worker
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_growth(server._soak_snapshot, tracemalloc.take_snapshot(), top, searches)
    tracemalloc.stop()
    return out.getvalue()


def _key_cache(dask_scheduler=None, dask_worker=None) -> int:
    """Entries in dask's ``key_split`` cache (an LRU of 100,000 task keys) in this process."""
    from dask.utils import key_split

    return key_split.cache_info().currsize


def _fill_key_cache(dask_scheduler=None, dask_worker=None) -> int:
    """Fill ``key_split``'s cache with made-up keys as long as a search's (a full cache
    evicts one old key per new one: what a process holds after ~100,000 task keys)."""
    from dask.utils import key_split

    for i in range(key_split.cache_info().maxsize):
        key_split(f"bfs_step-bfs-{i:012x}-{i % 40}-filler")
    return key_split.cache_info().currsize


def _placement(dask_scheduler=None) -> dict:
    """How many graph slices each worker holds (the scattered ``GraphSlice-...`` keys), and
    the scheduler's transition count (a dispatched search makes ~100 tasks, an included
    one ~2)."""
    held = collections.Counter()
    for key, ts in dask_scheduler.tasks.items():
        if str(key).startswith("GraphSlice-"):
            held.update(ws.address[-6:] for ws in ts.who_has)
    stealing = dask_scheduler.extensions.get("stealing")
    steals = sum(stealing.metrics["request_count_total"].values()) if stealing else 0
    return {"held": dict(held), "transitions": dask_scheduler.transition_counter,
            "steals": steals}


def _key_caches(rt) -> str:
    sizes = {"scheduler": rt.client.run_on_scheduler(_key_cache),
             **{a[-6:]: n for a, n in rt.client.run(_key_cache).items()}}
    return " ".join(f"{k} {v}" for k, v in sizes.items())


def _external(tmp: Path, workers: int, config: dict[str, str]):
    """A scheduler and ``workers`` CPU workers as processes (``config``: Dask settings
    they read, as ``DASK_...`` environment variables); returns (address, [Popen])."""
    dask = [sys.executable, "-m", "dask"]
    env = dict(os.environ)
    env.update({"DASK_" + k.replace(".", "__").replace("-", "_").upper(): v
                for k, v in config.items()})
    log = open(tmp / "cluster.log", "wb")  # noqa: SIM115 (lives as long as the processes)
    procs = [subprocess.Popen(dask + ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file",
                                      str(tmp / "s.json")], stdout=log, stderr=log, env=env)]
    while not (tmp / "s.json").exists() or not (tmp / "s.json").stat().st_size:
        time.sleep(0.1)
    address = json.loads((tmp / "s.json").read_text())["address"]
    for _ in range(workers):
        procs.append(subprocess.Popen(dask + ["worker", address, "--host", "127.0.0.1",
                                              "--no-dashboard", "--no-nanny", "--nthreads",
                                              "1", "--resources", "CPU=1"],
                                      stdout=log, stderr=log, env=env))
    return address, procs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--searches", type=int, default=500)
    p.add_argument("--warm", type=int, default=50)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--external", action="store_true")
    p.add_argument("--workers", type=int, default=2, help="worker processes with --external")
    p.add_argument("--every", type=int, default=0, help="also print RSS every this many searches")
    p.add_argument("--tracemalloc", type=int, default=0, metavar="N",
                   help="print the N source lines whose traced memory grew most")
    p.add_argument("--frames", type=int, default=10,
                   help="frames per traced allocation with --external --tracemalloc "
                        "(fewer: a faster run)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a Dask setting for the external processes, e.g. "
                        "distributed.admin.low-level-log-length=100 (repeatable)")
    p.add_argument("--fill-key-cache", action="store_true",
                   help="with --external, fill dask's key_split cache in the scheduler and "
                        "workers before counting (as after ~100,000 task keys)")
    p.add_argument("--objects", action="store_true",
                   help="print the object types and containers that grew, every --every")
    args = p.parse_args()
    graph = tb.kronecker(args.scale, seed=1)
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.external:
            config = dict(item.split("=", 1) for item in args.config)
            address, procs = _external(Path(tmp), args.workers, config)
            rt = tb.Runtime(address)
            rt.client.wait_for_workers(args.workers, timeout=60)
            watched = {"scheduler": psutil.Process(procs[0].pid),
                       **{f"worker{i}": psutil.Process(proc.pid)
                          for i, proc in enumerate(procs[1:])},
                       "client": psutil.Process()}
        else:
            rt = tb.Runtime()
            watched = {"process": psutil.Process()}
        try:
            for _ in range(args.warm):
                tb.bfs(graph, 1, runtime=rt)
            if args.fill_key_cache:
                rt.client.run_on_scheduler(_fill_key_cache)
                rt.client.run(_fill_key_cache)
            gc.collect()
            before = {k: w.memory_info().rss for k, w in watched.items()}
            topics_before = rt.client.run_on_scheduler(_topics)
            if args.tracemalloc and args.external:  # the second half: logs full by then
                rt.client.run_on_scheduler(_remote_trace_start, args.frames)
                rt.client.run(_remote_trace_start, args.frames)
            elif args.tracemalloc:
                tracemalloc.start(8)
                first = tracemalloc.take_snapshot()
            objects = _print_objects(rt, {}, 0) if args.objects else {}
            t0 = time.perf_counter()
            samples = {k: [(0, v)] for k, v in before.items()}
            if args.external:
                transitions = rt.client.run_on_scheduler(_placement)["transitions"]
            for i in range(args.searches):
                tb.bfs(graph, 1 + i % 7, runtime=rt)
                if args.tracemalloc and args.external and i + 1 == args.searches // 2:
                    rt.client.run_on_scheduler(_remote_trace_mark)
                    rt.client.run(_remote_trace_mark)
                if args.every and (i + 1) % args.every == 0:
                    for k, w in watched.items():
                        samples[k].append((i + 1, w.memory_info().rss))
                    rss = "  ".join(f"{k} {v[-1][1] / 2**20:.1f}" for k, v in samples.items())
                    caches = ""
                    if args.external:
                        where = rt.client.run_on_scheduler(_placement)
                        moved = (where["transitions"] - transitions) / args.every
                        transitions = where["transitions"]
                        caches = (f"; key_split cache {_key_caches(rt)}; slices held "
                                  f"{where['held']}; transitions per search {moved:.0f}; "
                                  f"steals requested {where['steals']}")
                    print(f"  after {i + 1:6d} ({time.perf_counter() - t0:7.0f} s, load "
                          f"{os.getloadavg()[0]:.1f}): RSS MiB {rss}{caches}", flush=True)
                    if args.objects:
                        objects = _print_objects(rt, objects, args.every)
            seconds = time.perf_counter() - t0
            gc.collect()
            time.sleep(1)
            after = {k: w.memory_info().rss for k, w in watched.items()}
            topics_after = rt.client.run_on_scheduler(_topics)
            if args.tracemalloc and not args.external:
                _print_growth(first, tracemalloc.take_snapshot(), args.tracemalloc,
                              args.searches)
            elif args.tracemalloc:
                half = args.searches - args.searches // 2
                print("scheduler, over the second half: " + rt.client.run_on_scheduler(
                    _remote_trace_growth, args.tracemalloc, half))
                for address, text in rt.client.run(
                        _remote_trace_growth, args.tracemalloc, half).items():
                    print(f"worker {address}, over the second half: {text}")
        finally:
            rt.close()
            for proc in procs[::-1]:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"{args.searches} searches of Kronecker scale {args.scale} "
          f"({'external scheduler + worker' if args.external else 'embedded'}), "
          f"{seconds:.1f} s; scheduler event topics {topics_before} -> {topics_after}")
    for k in watched:
        grow = after[k] - before[k]
        print(f"  {k:9s} RSS {before[k] / 2**20:7.1f} -> {after[k] / 2**20:7.1f} MiB "
              f"({grow / 2**10 / args.searches:+.1f} KiB per search; "
              f"{_slope(samples[k], 0.0):+.1f} over the samples, "
              f"{_slope(samples[k], 0.5):+.1f} over their second half, "
              f"{_slope(samples[k], 2 / 3):+.1f} over their last third)")


def _slope(samples: list[tuple[int, int]], skip: float) -> float:
    """Least-squares growth in KiB per search over the samples after the first ``skip``
    fraction of the searches (nan with fewer than two)."""
    last = samples[-1][0]
    kept = [(n, rss) for n, rss in samples if n >= skip * last]
    if len(kept) < 2:
        return float("nan")
    n, rss = np.array(kept, dtype=float).T
    return float(np.polyfit(n, rss, 1)[0]) / 2**10


def _print_growth(first, last, top: int, searches: int) -> None:
    """The ``top`` allocation sites (their 8 innermost frames, innermost first, each
    ``file:line < its caller``) whose live traced memory grew most between two snapshots."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = last.filter_traces(ignore).compare_to(first.filter_traces(ignore), "traceback")
    print(f"traced growth: {sum(s.size_diff for s in stats) / 2**10 / searches:+.2f} KiB "
          f"per search; the largest:")
    for stat in stats[:top]:
        # innermost frame first (a Traceback lists the oldest first)
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback[::-1]]
        print(f"  {stat.size_diff / 2**10:+9.1f} KiB {stat.count_diff:+7d} blocks  "
              f"{' < '.join(frames)}")


if __name__ == "__main__":
    main()
