"""Where warm searches' wall time goes, in every thread: py-spy samples this process while
it runs ``tb.bfs`` in a loop on the embedded runtime, then prints per thread the functions
most often on the stack (inclusive) and at its top (self), idle waits included.

py-spy samples from outside the interpreter, so Python's own cost is not inflated as with
cProfile (which, from Python 3.12, also profiles every thread at once). Only the warm loop
is sampled: py-spy attaches after the warm-up searches.

    python benchmarks/device/wall_profile.py --scale 20 --tasks 16 --strategy gpu \
        --dispatch tasks --seconds 10 --py-spy .venv/bin/py-spy

``--gpus G``: the graph built on a cluster of one CPU worker and G GPU workers (``dask`` CLI
processes, ``benchmarks/harness.py``'s ``cluster``), and every worker process sampled
besides this one (the owners' levels run there).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import taskbfs as tb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402  (benchmarks/harness.py)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--strategy", default="gpu")
    parser.add_argument("--dispatch", default="auto")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=200, help="samples a second")
    parser.add_argument("--lines", type=int, default=30)
    parser.add_argument("--py-spy", default="py-spy")
    parser.add_argument("--gpus", type=int, default=0,
                        help="GPU workers of a dask CLI cluster (0: the embedded runtime)")
    parser.add_argument("--simulate", action="store_true",
                        help="those GPU workers under numba's CUDA simulator (a check)")
    args = parser.parse_args(argv)
    if args.gpus:
        threads = max(1, (os.cpu_count() or 2) - args.gpus)
        with harness.cluster(args.gpus, threads, simulate=args.simulate) as client, tb.Runtime(client) as rt:
            graph = tb.kronecker(args.scale, 16, seed=1, runtime=rt)
            pids = client.run(os.getpid)
            sample(args, graph, rt, {"client": os.getpid(), **pids})
    else:
        sample(args, tb.kronecker(args.scale, 16, seed=1), None, {"client": os.getpid()})


def sample(args, graph, runtime, pids: dict) -> None:
    """Warm searches of ``graph`` in a loop while py-spy samples each of ``pids``
    (``{name: pid}``); the report of each process."""
    keys = tb.search_keys(graph, 4, seed=2)
    kw = dict(tasks=args.tasks, strategy=args.strategy, dispatch=args.dispatch, runtime=runtime)
    for key in keys:
        tb.bfs(graph, int(key), **kw)
    with tempfile.TemporaryDirectory() as folder:
        spies = {}
        for name, pid in pids.items():
            raw = os.path.join(folder, f"{len(spies)}.raw")
            spies[name] = (raw, subprocess.Popen(
                [args.py_spy, "record", "--pid", str(pid), "--idle", "--threads", "--rate",
                 str(args.rate), "--format", "raw", "--duration", str(int(args.seconds)),
                 "-o", raw], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # py-spy attached
        walls = []
        stop = time.perf_counter() + args.seconds - 1.5
        while time.perf_counter() < stop:
            start = time.perf_counter()
            tb.bfs(graph, int(keys[len(walls) % len(keys)]), **kw)
            walls.append(time.perf_counter() - start)
        for _, spy in spies.values():
            spy.wait()
        print(f"scale {args.scale}, T = {args.tasks}, {args.strategy}, dispatch="
              f"{args.dispatch!r}: {len(walls)} searches, median wall "
              f"{np.median(walls) * 1e3:.2f} ms (sampled)")
        for name, (raw, _) in spies.items():
            print(f"\n######## {name}")
            if os.path.exists(raw):
                report(raw, args.lines)


def report(raw: str, lines: int) -> None:
    """Per thread (most samples first), its inclusive and self counts."""
    inclusive = collections.defaultdict(collections.Counter)
    own = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    with open(raw) as samples:
        for line in samples:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = stack.split(";")
            thread = frames[0].split(":", 1)[-1].strip() or frames[0]
            thread = thread.rsplit("-", 1)[0] if thread[-1:].isdigit() else thread
            n = int(count)
            totals[thread] += n
            for frame in set(frames[1:]):
                inclusive[thread][frame] += n
            own[thread][frames[-1]] += n
    for thread, total in totals.most_common(6):
        print(f"\n== {thread}: {total} samples")
        print("-- inclusive")
        for frame, n in inclusive[thread].most_common(lines):
            if "threading.py" not in frame:
                print(f"{n:7d} {frame[:150]}")
        print("-- self")
        for frame, n in own[thread].most_common(lines // 2):
            print(f"{n:7d} {frame[:150]}")


if __name__ == "__main__":
    main()
