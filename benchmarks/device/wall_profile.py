"""Where warm searches' wall time goes, in every thread: py-spy samples this process while
it runs ``tb.bfs`` in a loop on the embedded runtime, then prints per thread the functions
most often on the stack (inclusive) and at its top (self), idle waits included.

py-spy samples from outside the interpreter, so Python's own cost is not inflated as with
cProfile (which, from Python 3.12, also profiles every thread at once). Only the warm loop
is sampled: py-spy attaches after the warm-up searches.

    python benchmarks/device/wall_profile.py --scale 20 --tasks 16 --strategy gpu \
        --dispatch tasks --seconds 10 --py-spy .venv/bin/py-spy
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import tempfile
import time

import numpy as np

import taskbfs as tb


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
    args = parser.parse_args(argv)
    graph = tb.kronecker(args.scale, 16, seed=1)
    keys = tb.search_keys(graph, 4, seed=2)
    kw = dict(tasks=args.tasks, strategy=args.strategy, dispatch=args.dispatch)
    for key in keys:
        tb.bfs(graph, int(key), **kw)
    with tempfile.TemporaryDirectory() as folder:
        raw = os.path.join(folder, "samples.raw")
        spy = subprocess.Popen([args.py_spy, "record", "--pid", str(os.getpid()), "--idle",
                                "--threads", "--rate", str(args.rate), "--format", "raw",
                                "--duration", str(int(args.seconds)), "-o", raw],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attached
        walls = []
        stop = time.perf_counter() + args.seconds - 1.5
        while time.perf_counter() < stop:
            start = time.perf_counter()
            tb.bfs(graph, int(keys[len(walls) % len(keys)]), **kw)
            walls.append(time.perf_counter() - start)
        spy.wait()
        print(f"scale {args.scale}, T = {args.tasks}, {args.strategy}, dispatch="
              f"{args.dispatch!r}: {len(walls)} searches, median wall "
              f"{np.median(walls) * 1e3:.2f} ms (sampled)")
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
