"""What a search does when a worker is killed (SIGKILL) at a given moment of it.

A ``dask scheduler`` and two ``dask worker --no-nanny`` processes (one thread, ``CPU=1``)
on 127.0.0.1; a graph placed on both; for each moment (a fraction of a search's steady
time; above 1: after the search returned), a search starts, the worker with the highest
address is killed at that moment, and the row says what the call did (result checked
against scipy, with the number of trace rows whose record went with the worker; or the
error), how long after the kill it returned, and whether the next search of the same
graph was right. A new worker is started before the next row. A lost graph is placed
again on the workers left, so a later row's victim may hold no slice: then the search
survives (Dask recomputes the step outputs the worker held).

    PYTHONPATH=$PWD python benchmarks/kill_matrix.py [--scale 16] [--at 0.1 0.3 0.6 0.9 1.5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.sparse.csgraph import shortest_path

import taskbfs as tb


def _spawn(tmp: Path, name: str, args: list[str]) -> subprocess.Popen:
    with open(tmp / f"{name}.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                stderr=subprocess.STDOUT, env=dict(os.environ))


def _worker(tmp: Path, address: str, name: str, client) -> tuple[str, subprocess.Popen]:
    proc = _spawn(tmp, name, ["worker", address, "--name", name, "--host", "127.0.0.1",
                              "--no-dashboard", "--no-nanny", "--nthreads", "1",
                              "--resources", "CPU=1"])
    while True:
        info = client.scheduler_info(n_workers=-1)["workers"]
        found = [a for a, w in info.items() if w["name"] == name]
        if found:
            return found[0], proc
        time.sleep(0.1)


def _reference(graph, source) -> np.ndarray:
    d = shortest_path(graph.to_scipy(), unweighted=True, indices=source, directed=graph.directed)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--at", type=float, nargs="+", default=[0.1, 0.3, 0.6, 0.9, 1.5])
    p.add_argument("--dispatch", default="tasks", choices=["auto", "tasks"])
    p.add_argument("--direction", default="auto")
    args = p.parse_args()
    graph = tb.kronecker(args.scale, seed=1)
    source = int(tb.search_keys(graph, 1, seed=2)[0])
    expected = _reference(graph, source)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        procs = {"scheduler": _spawn(tmp, "scheduler", [
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(tmp / "s.json")])}
        while not (tmp / "s.json").exists() or not (tmp / "s.json").stat().st_size:
            time.sleep(0.1)
        address = json.loads((tmp / "s.json").read_text())["address"]
        try:
            with tb.Runtime(address) as rt:
                workers = dict([_worker(tmp, address, n, rt.client) for n in ("w0", "w1")])
                run = lambda: tb.bfs(graph, source, tasks=args.tasks, runtime=rt,  # noqa: E731
                                     dispatch=args.dispatch, direction=args.direction)
                steady = min(_timed(run)[1] for _ in range(3))
                print(f"Kronecker scale {args.scale}, T = {args.tasks}, dispatch "
                      f"{args.dispatch}, 2 worker processes; a search takes {steady:.3f} s")
                print("| kill at | outcome | s from kill to return | next search |")
                print("| --- | --- | --- | --- |")
                for i, at in enumerate(args.at):
                    delay = at * steady
                    run()  # placed on the workers there are now
                    victim = sorted(workers)[-1]
                    killed_at = []

                    def kill(victim=victim, delay=delay, killed_at=killed_at):
                        time.sleep(delay)
                        os.kill(workers[victim].pid, signal.SIGKILL)
                        killed_at.append(time.perf_counter())

                    killer = threading.Thread(target=kill)
                    killer.start()
                    outcome, stop = _timed(run, expected)
                    killer.join()
                    workers.pop(victim).wait()
                    after = stop - killed_at[0]
                    nxt = _next(run, expected)
                    print(f"| {at:g} ({delay:.3f} s) | {outcome} | {after:+.3f} | {nxt} |",
                          flush=True)
                    new, proc = _worker(tmp, address, f"w{i + 2}", rt.client)
                    workers[new] = proc
        finally:
            for proc in [*workers.values(), procs["scheduler"]]:
                proc.terminate()
                proc.wait(timeout=30)


def _timed(run, expected=None):
    """(outcome, time it returned) of one call; outcome is 'correct', 'WRONG' or the error."""
    start = time.perf_counter()
    try:
        result = run()
    except tb.TaskBFSError as exc:
        return f"{type(exc).__name__}: {str(exc)[:90]}", time.perf_counter()
    end = time.perf_counter()
    if expected is None:
        return "correct", end - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unrecorded = int(result.trace["worker"].isna().sum())
    right = "correct" if np.array_equal(result.distances, expected) else "WRONG"
    return f"{right}, {unrecorded} of {len(result.trace)} trace rows without record", end


def _next(run, expected) -> str:
    """The next search: right at once, or after one WorkerLostError (the client heard of
    the loss only then)."""
    for attempt in ("", " (2nd try)"):
        try:
            ok = np.array_equal(run().distances, expected)
            return ("correct" if ok else "WRONG") + attempt
        except tb.WorkerLostError:
            continue
    return "failed twice"


if __name__ == "__main__":
    main()
