"""A Kronecker graph larger than any one worker may hold, built and searched on the workers.

Returns
    One line per way of running a scale, and a JSON line ``ROW {...}`` each:

    * ``distributed``: a ``LocalCluster`` of ``--workers`` worker processes on 127.0.0.1,
      each with Dask's ``memory_limit`` (``--limit``, a fraction of the graph's CSR size
      or bytes; Dask's spill / pause / terminate thresholds as configured, default on);
      ``tb.kronecker(scale, runtime=rt, ranges=R)`` builds the graph there, ``tb.bfs``
      searches it from its highest-degree vertex (the owner barrier, T = R), and
      ``tb.validate`` checks the parents range by range on the workers;
    * ``in-client``: the same graph built in this process (``tb.kronecker(scale)``) and
      searched on the embedded runtime (the single-process path, ``runtime=None``),
      validated here.

    For each: wall time of the build and of the search, peak RSS of the client and of each
    worker process (sampled every 0.2 s with psutil, and each process's own ``ru_maxrss``),
    the bytes each worker spilled to disk (largest sample), workers that died. With both
    ways the distances are compared: ``identical`` in the last line.
Approach
    Each way runs in a fresh subprocess (``--child``) so that its peaks are its own; a
    scale-8 build and search the same way first loads the compiled code everywhere. The
    CSR size is ``8 (n + 1) + 4 arcs`` bytes (int32 ids); ``--limit 0.8`` gives each
    worker 0.8 of it, so that no worker could hold the graph, while its share (1/W of it)
    plus a Python worker's ~250 MB fits.

    PYTHONPATH=$PWD python benchmarks/memory_limited.py --scale 23 --workers 4 --limit 0.8
    PYTHONPATH=$PWD python benchmarks/memory_limited.py --scale 24 --ways in-client distributed --limit 0
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time


def csr_bytes(scale: int, edgefactor: int = 16) -> int:
    """The CSR size of a Kronecker graph of ``scale``, estimated before building it: int32
    ids, ~1.9 arcs per generated edge tuple after self-loops and duplicates go (measured:
    scale 22 gives 128.3 M arcs of 2^22 x 16 = 67.1 M tuples)."""
    n = 1 << scale
    return 8 * (n + 1) + 4 * int(1.912 * edgefactor * n)


#: GiB this script leaves free for the machine's other users (it skips a run whose estimate
#: would take more).
LEAVE_FREE_GIB = 4


def estimated_peak(way: str, scale: int, workers: int, limit: int) -> int:
    """Bytes a run is expected to take on this machine at its peak, from the session-12/13
    measurements: the in-client build peaks at ~2.6x the CSR above a ~0.4 GB process; the
    distributed build at ~3.7x the CSR over all workers (each ~0.4 GB to start), or at most
    every worker's ``memory_limit`` when there is one (Dask spills the rest to disk)."""
    csr, process = csr_bytes(scale), 400 << 20
    if way == "in-client":
        return int(2.6 * csr) + process
    data = workers * limit if limit else int(3.7 * csr) + workers * process
    return data + process


class Sampler:
    """Peak RSS of a set of processes, sampled in a thread every ``every`` seconds."""

    def __init__(self, pids: dict, every: float = 0.2):
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = dict.fromkeys(pids, 0)
        self.died: set = set()
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, proc in self.procs.items():
                try:
                    self.peak[name] = max(self.peak[name], proc.memory_info().rss)
                except Exception:  # gone: killed by its nanny, or restarted
                    self.died.add(name)
            self._stop.wait(self.every)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {name: round(v / 2**20) for name, v in self.peak.items()}


def _spilled_mib(client) -> list:
    """What each worker has spilled to disk now, MiB (Dask's spill buffer)."""
    def spilled(dask_worker) -> int:
        total = getattr(dask_worker.data, "spilled_total", None)
        return int(total.disk) if total is not None else 0

    return sorted(round(v / 2**20) for v in client.run(spilled).values())


def _ru_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def distributed_child(scale: int, workers: int, limit: int, ranges: int, save: str) -> dict:
    import dask
    import numpy as np
    from distributed import Client, LocalCluster

    import taskbfs as tb

    # at load 30 on 2 cores the client's comm to the scheduler closed after 30 s once, and
    # with it every future of the build: give comms the time a loaded machine needs
    dask.config.set({"distributed.comm.timeouts.connect": "120s",
                     "distributed.comm.timeouts.tcp": "600s"})
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address="127.0.0.1:0",
                           memory_limit=limit or 0)
    client = Client(cluster, set_as_default=False)
    rt = tb.Runtime(client)
    tb.bfs(tb.kronecker(8, 16, seed=2, runtime=rt, ranges=ranges), 0, runtime=rt, tasks=ranges)
    pids = {"client": os.getpid(),
            **{f"worker-{i}": pid for i, pid in enumerate(sorted(client.run(os.getpid).values()))}}
    base = {name: round(p / 2**20) for name, p in _rss(pids).items()}
    sampler = Sampler(pids)
    start = time.perf_counter()
    graph = tb.kronecker(scale, 16, seed=1, runtime=rt, ranges=ranges)
    build = time.perf_counter() - start
    spilled_built = _spilled_mib(client)
    source = int(np.argmax(graph.degrees()))
    start = time.perf_counter()
    result = tb.bfs(graph, source, runtime=rt, tasks=ranges)
    search = time.perf_counter() - start
    tb.validate(graph, source, result.parents, levels=result.distances)
    peaks = sampler.stop()
    np.save(save, np.asarray(result.distances))
    owners = client.who_has(graph.slices)
    row = {"way": "distributed", "scale": scale, "workers": workers, "ranges": ranges,
           "limit_mib": round(limit / 2**20), "csr_mib": round(_csr_of(graph) / 2**20),
           "edges": graph.num_edges, "source": source, "build_s": round(build, 2),
           "search_s": round(search, 2), "levels": len(result.levels),
           "reached": result.reached, "valid": True, "rss_before_mib": base,
           "rss_peak_mib": peaks,
           "ru_maxrss_mib": {"client": round(_ru_peak_mib()),
                             "workers": sorted(round(v) for v in client.run(_ru_peak_mib).values())},
           "spilled_disk_mib": {"built": spilled_built, "searched": _spilled_mib(client)},
           "died": sorted(sampler.died),
           "owners": len({w for ws in owners.values() for w in ws}),
           "exchange": {c: int(result.exchange[c].sum()) for c in result.exchange.columns
                        if c.endswith("_bytes")}}
    rt.close()
    client.close()
    cluster.close()
    return row


def in_client_child(scale: int, save: str) -> dict:
    import numpy as np

    import taskbfs as tb

    tb.bfs(tb.kronecker(8, 16, seed=2), 0)
    pids = {"client": os.getpid()}
    base = {name: round(p / 2**20) for name, p in _rss(pids).items()}
    sampler = Sampler(pids)
    start = time.perf_counter()
    graph = tb.kronecker(scale, 16, seed=1)
    build = time.perf_counter() - start
    source = int(np.argmax(graph.degrees()))
    start = time.perf_counter()
    result = tb.bfs(graph, source)
    search = time.perf_counter() - start
    tb.validate(graph, source, result.parents, levels=result.distances)
    peaks = sampler.stop()
    np.save(save, result.distances)
    return {"way": "in-client", "scale": scale, "csr_mib": round(_csr_of(graph) / 2**20),
            "edges": graph.num_edges, "source": source, "build_s": round(build, 2),
            "search_s": round(search, 2), "levels": len(result.levels),
            "reached": result.reached, "valid": True, "rss_before_mib": base,
            "rss_peak_mib": peaks, "ru_maxrss_mib": {"client": round(_ru_peak_mib())}}


def _rss(pids: dict) -> dict:
    import psutil

    return {name: psutil.Process(pid).memory_info().rss for name, pid in pids.items()}


def _csr_of(graph) -> int:
    return 8 * (graph.num_vertices + 1) + 4 * graph.num_arcs


def _run(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    rows = [line for line in out.stdout.splitlines() if line.startswith("ROW ")]
    if out.returncode or not rows:
        errors = [line for line in out.stderr.splitlines() if "Error" in line] or ["?"]
        return {"error": errors[-1], "rc": out.returncode}
    return json.loads(rows[-1][4:])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, nargs="+", default=[23])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--ranges", type=int, default=32,
                        help="R = T: vertex ranges (small ones keep each build task small)")
    parser.add_argument("--limit", type=float, default=0.8,
                        help="each worker's memory_limit: a fraction of the CSR (<= 1) or "
                        "bytes (> 1); 0: none")
    parser.add_argument("--ways", nargs="+", default=["distributed", "in-client"],
                        choices=("distributed", "in-client"))
    parser.add_argument("--child", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "distributed":
            row = distributed_child(int(rest[0]), int(rest[1]), int(rest[2]), int(rest[3]), rest[4])
        else:
            row = in_client_child(int(rest[0]), rest[1])
        print("ROW " + json.dumps(row), flush=True)
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; Kronecker edgefactor 16, seed 1; one fresh "
          f"process per way; W = {args.workers}; R = T = {args.ranges}; RSS in MiB")
    import numpy as np
    import psutil

    with tempfile.TemporaryDirectory(prefix="taskbfs-memory-limited-") as tmp:
        for scale in args.scale:
            limit = int(args.limit * csr_bytes(scale) if args.limit <= 1 else args.limit)
            saved = {}
            for way in args.ways:
                need = estimated_peak(way, scale, args.workers, limit)
                free = psutil.virtual_memory().available - (LEAVE_FREE_GIB << 30)
                if need > free:
                    print(f"{scale:>3} {way:>12} skipped: needs ~{need / 2**30:.1f} GiB, "
                          f"{free / 2**30:.1f} GiB free beyond the {LEAVE_FREE_GIB} GiB left "
                          f"to others", flush=True)
                    continue
                save = os.path.join(tmp, f"{way}-{scale}.npy")
                child = (["distributed", str(scale), str(args.workers), str(limit),
                          str(args.ranges), save] if way == "distributed" else
                         ["in-client", str(scale), save])
                row = _run(["--child", *child])
                print(f"{scale:>3} {way:>12} ROW " + json.dumps(row), flush=True)
                if "error" not in row:
                    saved[way] = save
            if len(saved) == 2:
                a, b = (np.load(p) for p in saved.values())
                print(f"{scale:>3} distances identical both ways: {bool(np.array_equal(a, b))}",
                      flush=True)


if __name__ == "__main__":
    main()
