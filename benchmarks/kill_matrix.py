"""What a search does when a worker is killed (SIGKILL) at a given moment of it.

A ``dask scheduler`` and two ``dask worker --no-nanny`` processes (one thread, ``CPU=1``)
on 127.0.0.1; a graph placed on both; for each moment, a search starts, the worker with
the highest address is killed at that moment, and the row says what the call did (result
checked against scipy, with the attempts it took and the number of trace rows whose
record went with the worker; or the error), how long after the kill it returned, and
whether the next search of the same graph was right. A new worker is started before the
next row, and each row's search runs on the graph placed afresh on the two workers. A
moment is ``L<k>`` (when the client hears of level k: dispatched levels
only), ``last`` (when it hears of the last level: the result is being assembled), or a
number: a fraction of a search's steady time (above 1: after the search returned). A
search that loses a worker runs again on the workers left, at most
``taskbfs.search.retries-on-worker-loss`` times: a dispatched one resumes from the last
level it completed (the row says which), a one-task one starts again from level 0.
"correct" means scipy's distances and parents that pass the Graph500 rules.

    PYTHONPATH=$PWD python benchmarks/kill_matrix.py [--scale 16] \
        [--at L1 L3 last 0.1 0.5 1.5] [--direction auto]
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
        found = [a for a, w in info.items() if w["name"] == name and w["status"] == "running"]
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
    p.add_argument("--at", nargs="+", default=["L1", "L3", "last", "0.1", "0.5", "1.5"])
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
                def run(progress=None):
                    return tb.bfs(graph, source, tasks=args.tasks, runtime=rt,
                                  dispatch=args.dispatch, direction=args.direction,
                                  progress=progress)

                steady = min(_timed(run)[1] for _ in range(3))
                print(f"Kronecker scale {args.scale}, T = {args.tasks}, dispatch "
                      f"{args.dispatch}, direction {args.direction}, 2 worker processes; a "
                      f"search takes {steady:.3f} s")
                print("| kill at | outcome | s from kill to return | next search |")
                print("| --- | --- | --- | --- |")
                for i, at in enumerate(args.at):
                    # a new Graph object (same arrays, new token): placed afresh on the
                    # workers there are now, so that the victim holds slices
                    graph = tb.Graph(graph.indptr, graph.indices, graph.num_vertices,
                                     graph.directed)
                    run()
                    victim = sorted(workers)[-1]
                    killed_at = []

                    def kill(victim=victim, killed_at=killed_at):
                        if not killed_at:
                            os.kill(workers[victim].pid, signal.SIGKILL)
                            killed_at.append(time.perf_counter())

                    if at[0] == "L" or at == "last":
                        def on_level(summary, at=at, kill=kill):
                            if (summary.level == int(at[1:]) if at[0] == "L"
                                    else summary.frontier_size == 0):
                                kill()

                        outcome, stop = _timed(lambda on_level=on_level: run(on_level), expected,
                                               graph, source)
                        label = at
                    else:
                        delay = float(at) * steady
                        killer = threading.Timer(delay, kill)
                        killer.start()
                        outcome, stop = _timed(run, expected, graph, source)
                        killer.join()
                        label = f"{at} ({delay:.3f} s)"
                    if not killed_at:  # the level never came (the search had fewer)
                        kill()
                        outcome += " (killed after)"
                    workers.pop(victim).wait()
                    after = stop - killed_at[0]
                    nxt = _next(run, expected)
                    print(f"| {label} | {outcome} | {after:+.3f} | {nxt} |", flush=True)
                    new, proc = _worker(tmp, address, f"w{i + 2}", rt.client)
                    workers[new] = proc
        finally:
            for proc in [*workers.values(), procs["scheduler"]]:
                proc.terminate()
                proc.wait(timeout=30)


def _timed(run, expected=None, graph=None, source=None):
    """(outcome, time it returned) of one call; outcome is 'correct', 'WRONG' or the error
    (with ``expected``: the distances, checked, and the parents, by the Graph500 rules)."""
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
    try:
        tb.validate(graph, source, result.parents, result.distances)
    except tb.ValidationError as exc:
        right = f"WRONG parents ({exc})"
    resumed = "".join(f", resumed from level {k}" for k in result.resumed_from)
    return (f"{right}, attempt {result.attempts}{resumed}, {unrecorded} of {len(result.trace)} "
            f"trace rows without record", end)


def _next(run, expected) -> str:
    """The next search: right or wrong (with its attempts), or its error."""
    try:
        result = run()
    except tb.TaskBFSError as exc:
        return f"{type(exc).__name__}: {str(exc)[:90]}"
    ok = np.array_equal(result.distances, expected)
    return f"{'correct' if ok else 'WRONG'}, attempt {result.attempts}"


if __name__ == "__main__":
    main()
