"""The distributed search on 1..G GPUs of one host (issue 21): strong and weak scaling.

Returns
    One row per (GPU workers, scale, strategy) and a JSON line ``ROW {...}`` each: the
    Kronecker graph generated on the workers (``tb.kronecker(scale, runtime=rt)``), then
    ``--keys`` searches from Graph500 search keys, each validated on the workers
    (``tb.validate`` of the distributed graph): wall time around ``tb.bfs`` per key, the
    harmonic-mean TEPS (``tb.teps_statistics``), tasks per device, and the bytes the
    levels moved between workers (``BFSResult.exchange``, summed over the keys).
Approach
    For each GPU count G the script starts a cluster of separate processes with the
    ``dask`` CLI, everything on 127.0.0.1 (deploy/README.md): one scheduler, one CPU
    worker (``--nthreads C --resources CPU=C``) and G GPU workers, each
    ``CUDA_VISIBLE_DEVICES=i dask worker --nthreads 1 --resources GPU=1`` (``--share``:
    all on GPU 0, each with its own device cache: the code path of a multi-GPU node on a
    one-GPU machine). Strong scaling: ``--scale`` on every G; weak scaling: ``--scale`` +
    log2(G) (``--weak``). NVLink multicast stays off (KINDS.md); nothing here turns it on.
    ``--simulate`` runs the GPU workers under ``NUMBA_ENABLE_CUDASIM=1`` (no GPU: a check
    of the worker-starting logic and the code path, not a measurement). ``--dispatch
    tasks`` dispatches the levels, so that every GPU worker runs steps
    (``tasks_per_worker``); with ``auto`` a gpu search of a graph on the workers may run
    as one task on one GPU worker.

On a multi-GPU machine (e.g. nvidia-h200-x8), from the repository root:

    PYTHONPATH=$PWD python benchmarks/multi_gpu.py --gpus 1 2 4 8 --scale 26 --keys 8 \\
        --strategies gpu hybrid --weak | tee benchmarks/results/multi_gpu_h200x8.log

On the one-GPU device machine, 1, 2 and 4 GPU workers sharing GPU 0 plus the CPU worker
(benchmarks/multi_gpu_session.sh sets up the device image first):

    PYTHONPATH=$PWD python benchmarks/multi_gpu.py --share --gpus 1 2 4 --scale 22 --keys 4 \\
        --strategies gpu hybrid --dispatch tasks auto
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager


def _gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def worker_commands(scheduler_file: str, gpus: int, cpu_threads: int, share: bool,
                    simulate: bool) -> list[tuple[list[str], dict]]:
    """``(argv, environment)`` of every worker process: the CPU worker, then one per GPU."""
    # an equal share of the host's memory each (Dask's default, the share of a worker's
    # threads, is 1/cores for a GPU worker: too little for the ranges it holds)
    base = [sys.executable, "-m", "dask", "worker", "--scheduler-file", scheduler_file,
            "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0", "--no-nanny",
            "--memory-limit", f"{1 / (gpus + 1):.4f}"]
    env = dict(os.environ)
    if simulate:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    commands = [([*base, "--name", "cpu", "--nthreads", str(cpu_threads), "--resources",
                  f"CPU={cpu_threads}"], {**env, "CUDA_VISIBLE_DEVICES": ""})]
    # the GPUs this process may use, as the host numbers them (sharing: the first)
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    for i in range(gpus):
        device = (visible or ["0"])[0] if share else (visible[i] if i < len(visible) else str(i))
        commands.append(([*base, "--name", f"gpu-{i}", "--nthreads", "1", "--resources",
                          "GPU=1"], {**env, "CUDA_VISIBLE_DEVICES": device}))
    return commands


@contextmanager
def cluster(gpus: int, cpu_threads: int, share: bool, simulate: bool, timeout: float = 120):
    """A scheduler and its workers as separate ``dask`` CLI processes on 127.0.0.1; yields
    a connected :class:`distributed.Client`. Every process is stopped on exit."""
    from distributed import Client

    procs = []
    with tempfile.TemporaryDirectory(prefix="taskbfs-multi-gpu-") as tmp:
        sched_file = os.path.join(tmp, "scheduler.json")
        logs = open(os.path.join(tmp, "processes.log"), "w")  # noqa: SIM115 - closed below
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--dashboard-address", "127.0.0.1:0", "--scheduler-file", sched_file],
                stdout=logs, stderr=subprocess.STDOUT))
            _wait_for(lambda: os.path.exists(sched_file), timeout, "the scheduler file")
            for argv, env in worker_commands(sched_file, gpus, cpu_threads, share, simulate):
                procs.append(subprocess.Popen(argv, env=env, stdout=logs,
                                              stderr=subprocess.STDOUT))
            client = Client(scheduler_file=sched_file, timeout=timeout)
            try:
                client.wait_for_workers(gpus + 1, timeout=timeout)
                yield client
            finally:
                client.close()
        finally:
            # the workers first, while their scheduler is up (without it they retry to
            # reconnect until the wait's timeout), then the scheduler
            _stop(procs[1:])
            _stop(procs[:1])
            logs.close()


def _stop(procs, timeout: float = 15) -> None:
    """SIGTERM to ``procs``, then SIGKILL to any still running after ``timeout`` s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _wait_for(ready, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end:
            raise TimeoutError(f"{what} did not appear within {timeout} s")
        time.sleep(0.2)


def resources_of(client) -> dict:
    """``{worker name: resources}`` (what the check of the worker-starting logic reads)."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    return {w["name"]: dict(w.get("resources", {})) for w in info.values()}


def level_table(result) -> str:
    """One search's levels: wall time of each (its summary's start to stop), its barrier's
    seconds, its steps' longest and summed durations and device figures (``r.trace``)."""
    import pandas as pd

    lv = result.levels
    tr = result.trace
    steps = tr[tr["name"] == "bfs_step"].assign(seconds=lambda t: t["stop"] - t["start"])
    by = steps.groupby("level").agg(steps=("task", "size"), step_max_s=("seconds", "max"),
                                    step_sum_s=("seconds", "sum"),
                                    kernel_s=("kernel_seconds", "sum"),
                                    h2d=("h2d_bytes", "sum"), d2h=("d2h_bytes", "sum"))
    table = lv[["level", "direction", "frontier_size", "discovered", "start", "stop",
                "barrier_seconds"]].assign(level_s=lambda t: t["stop"] - t["start"])
    table = table.drop(columns=["start", "stop"]).merge(by, on="level", how="left")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        return table.round(5).to_string(index=False)


def holders(client, futures, names) -> dict:
    """``{worker name(s): how many of futures}``: where Dask holds each (several names
    where it holds copies)."""
    counts: dict[str, int] = {}
    for workers in client.who_has(futures).values():
        key = "+".join(sorted(str(names.get(w, w)) for w in workers)) or "nowhere"
        counts[key] = counts.get(key, 0) + 1
    return counts


def build_table(records) -> str:
    """Where a build's time went, from its task stream: per kind of task (the key's
    prefix) the count, the seconds computing and transferring summed over workers, and
    the first start and last stop (s, from the first task's start)."""
    import pandas as pd
    from dask.utils import key_split

    rows = []
    for rec in records:
        for ss in rec["startstops"]:
            rows.append({"task": key_split(rec["key"]), "action": ss["action"],
                         "start": ss["start"], "stop": ss["stop"]})
    if not rows:
        return "(no tasks)"
    t = pd.DataFrame(rows)
    t0 = t["start"].min()
    t["seconds"] = t["stop"] - t["start"]
    table = t.pivot_table(index="task", columns="action", values="seconds",
                          aggfunc="sum", fill_value=0.0)
    spans = t.groupby("task").agg(tasks=("action", lambda a: int((a == "compute").sum())),
                                  first=("start", "min"), last=("stop", "max"))
    spans[["first", "last"]] -= t0
    out = spans.join(table).sort_values("first")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        return out.round(2).to_string()


def pinned_counts(client) -> tuple:
    """The pinned host-buffer pools of the GPU workers (``taskbfs.kernels.pinned``),
    summed: buffers reused, newly pinned, and refused (budget spent)."""

    def counts():
        from taskbfs.kernels.pinned import pinned_pool

        pool = pinned_pool()
        return pool.reused, pool.allocated, pool.refused

    gpus = [a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()
            if w.get("resources", {}).get("GPU")]
    got = client.run(counts, workers=gpus) if gpus else {}
    return tuple(int(sum(c[i] for c in got.values())) for i in range(3))


def clock() -> str:
    """The wall clock (UTC) for the progress lines: a call cut by its limit shows where."""
    return time.strftime("%H:%M:%S", time.gmtime())


@contextmanager
def build_progress(client, every: float = 30.0):
    """While the block runs, print every ``every`` seconds where a build stands: the
    scheduler's tasks by state and each worker's memory (RSS and spilled to disk, GB), so
    that a build cut by the call's limit says how far it got and whether it was spilling."""
    stop = threading.Event()

    def states(dask_scheduler):
        return dict(Counter(ts.state for ts in dask_scheduler.tasks.values()))

    def report():
        while not stop.wait(every):
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
            memory = {w["name"]: (round(w["metrics"]["memory"] / 1e9, 1),
                                  round(w["metrics"]["spilled_bytes"]["disk"] / 1e9, 1))
                      for w in workers}
            print(f"BUILDING (at {clock()}): tasks {client.run_on_scheduler(states)}; "
                  f"workers' GB (RSS, spilled) {memory}", flush=True)

    thread = threading.Thread(target=report, name="build-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def measure(client, scale: int, configs, keys: int, tasks: int | None,
            timeline: bool = False):
    """Build the Kronecker graph of ``scale`` on the workers once, then for each
    ``(strategy, dispatch)`` of ``configs`` one untimed search and ``keys`` timed ones
    (each validated on the workers); yields one row per configuration."""
    import numpy as np
    from distributed import get_task_stream

    import taskbfs as tb

    with tb.Runtime(client) as rt:
        start = time.perf_counter()
        with get_task_stream(client) as stream, build_progress(client):
            graph = tb.kronecker(scale, 16, seed=1, runtime=rt)
        build = time.perf_counter() - start
        print(f"BUILD scale {scale} (at {clock()}): {build:.1f} s wall\n" + build_table(stream.data),
              flush=True)
        sources = tb.search_keys(graph, keys)
        names = {a: w["name"] for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}
        print(f"HELD built ranges: {holders(client, graph.slices, names)}", flush=True)
        for strategy, dispatch in configs:
            tb.bfs(graph, int(sources[0]), runtime=rt, strategy=strategy, tasks=tasks,
                   dispatch=dispatch)  # warm-up
            print(f"HELD searched ranges ({strategy}, {dispatch}): "
                  f"{holders(client, [s for p in graph._placed.values() for s in p.slices], names)}",
                  flush=True)
            walls, edges, devices, workers, moved = [], [], {}, {}, {}
            parts, pinned = [], [pinned_counts(client)]
            for s in sources.tolist():
                start = time.perf_counter()
                r = tb.bfs(graph, s, runtime=rt, strategy=strategy, tasks=tasks,
                           dispatch=dispatch)
                walls.append(time.perf_counter() - start)
                parts.append(f"{1e3 * walls[-1]:.0f}/{1e3 * r.search_seconds:.0f}/"
                             f"{1e3 * r.assembly_seconds:.0f}/{len(r.levels)}")
                pinned.append(pinned_counts(client))
                tb.validate(graph, s, r.parents, levels=r.distances)
                edges.append(r.traversed_edges)
                for device, count in r.trace["device"].value_counts().items():
                    devices[device] = devices.get(device, 0) + int(count)
                for worker, count in r.trace["worker"].value_counts().items():
                    name = str(names.get(worker, worker))
                    workers[name] = workers.get(name, 0) + int(count)
                ex = getattr(r, "exchange", None)
                if ex is not None:
                    for c in ex.columns:
                        if c.endswith("_bytes"):
                            moved[c] = moved.get(c, 0) + int(ex[c].sum())
            stats = tb.teps_statistics(np.array(walls), np.array(edges))
            print(f"SEARCHES {strategy} {dispatch} (at {clock()}): wall/search/assembly ms"
                  f"/levels {' '.join(parts)}; "
                  f"GPU workers' pinned pools (reused, allocated, refused) after each: "
                  f"{' '.join(str(p) for p in pinned)}", flush=True)
            if timeline:  # the last key's levels
                print(f"LEVELS scale {scale} {strategy} {dispatch} (wall {walls[-1]:.4f} s, "
                      f"elapsed {r.elapsed:.4f} s, search {r.search_seconds:.4f} s)\n"
                      + level_table(r), flush=True)
                if getattr(r, "exchange", None) is not None:  # bytes and the owners' parts
                    print(r.exchange.to_string(index=False), flush=True)
            yield {"scale": scale, "strategy": strategy, "dispatch": dispatch,
                   "edges": graph.num_edges, "build_s": build, "walls_s": walls,
                   "harmonic_mean_teps": stats.get("harmonic_mean_TEPS"),
                   "tasks_per_device": devices, "tasks_per_worker": workers,
                   "bytes_moved": moved, "num_tasks": r.num_tasks}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=None,
                        help="GPU worker counts (default 1, 2, 4, ... up to the GPUs found)")
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--weak", action="store_true", help="also scale + log2(G) on G GPUs")
    parser.add_argument("--strategies", nargs="+", default=["gpu", "hybrid"])
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=None, help="T (default: taskbfs's)")
    parser.add_argument("--dispatch", nargs="+", default=["auto"], choices=("auto", "tasks"),
                        help="auto: what a user gets (a gpu search may run as one task on one "
                        "GPU worker); tasks: levels dispatched, steps on every GPU worker")
    parser.add_argument("--cpu-threads", type=int, default=None,
                        help="CPU worker threads (default: cores - GPUs, at least 1)")
    parser.add_argument("--share", action="store_true", help="every GPU worker on GPU 0")
    parser.add_argument("--simulate", action="store_true", help="NUMBA_ENABLE_CUDASIM=1 workers")
    parser.add_argument("--timeline", action="store_true",
                        help="print the last key's levels (wall, barrier, steps, device)")
    parser.add_argument("--check-only", action="store_true",
                        help="start each cluster, print its workers' resources, stop it")
    args = parser.parse_args(argv)
    found = _gpu_count()
    counts = args.gpus or [g for g in (1, 2, 4, 8, 16) if g <= max(found, 1)]
    if not (args.simulate or args.share) and counts and max(counts) > found:
        parser.error(f"{max(counts)} GPU workers asked, {found} GPUs found (--share or "
                     f"--simulate to run several workers on fewer GPUs)")
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; GPUs found {found}; Kronecker edgefactor "
          f"16, seed 1; {args.keys} keys; simulate={args.simulate} share={args.share}")
    for gpus in counts:
        threads = args.cpu_threads or max(1, (os.cpu_count() or 2) - gpus)
        with cluster(gpus, threads, args.share, args.simulate) as client:
            if args.check_only:
                print(f"G={gpus}: " + json.dumps(resources_of(client)), flush=True)
                continue
            scales = [args.scale] + ([args.scale + gpus.bit_length() - 1]
                                     if args.weak and gpus > 1 else [])
            configs = [(s, d) for s in args.strategies for d in args.dispatch]
            for scale in scales:
                for row in measure(client, scale, configs, args.keys, args.tasks,
                                   args.timeline):
                    walls = row["walls_s"]
                    print(f"RESULT {gpus} GPU worker(s), scale {scale}, {row['strategy']} "
                          f"{row['dispatch']}: {(row['harmonic_mean_teps'] or 0) / 1e9:.2f} GTEPS "
                          f"(harmonic mean), median {statistics.median(walls):.3f} s "
                          f"({min(walls):.3f}-{max(walls):.3f})", flush=True)
                    print("ROW " + json.dumps({"gpus": gpus, **row}), flush=True)


if __name__ == "__main__":
    main()
