"""How long does it take to make or read a graph, and how much memory does it need?

Returns
    One CSV row per (builder, scale): the best wall seconds of ``--repeats`` builds, M
    edges per second per core, the CSR's MiB (indptr + indices) and the peak resident
    memory the first build added over it (ratio). Builders: ``generate``
    (``tb.kronecker_edges``, the edge list alone), ``from_edges`` (``tb.Graph.from_edges``
    of that list), ``kronecker`` (``tb.kronecker``: both), ``read_el`` / ``read_mtx`` /
    ``read_npz`` (``tb.read_graph`` of the graph written as a SNAP edge list, MatrixMarket,
    taskbfs .npz), ``mmread`` (the peer of ``read_mtx``: ``scipy.io.mmread`` of the same
    file), ``save_mtx`` (``tb.save_graph`` as MatrixMarket) and its peer ``mmwrite``
    (``scipy.io.mmwrite`` of the graph's scipy matrix, the same symmetric pattern file;
    ``vs_scipy``: the wall ratio of ``read_mtx`` and ``save_mtx`` to their peer in the same
    run), ``workers`` (``tb.kronecker(scale, runtime=rt)`` on a LocalCluster of
    ``--workers`` processes: built there, never here; wall only), and ``gap`` (the GAP
    benchmark suite's ``bfs -g scale -k edgefactor -n 0`` at ``$GAPBS_DIR``, OpenMP on all
    cores: its own "Generate Time" + "Build Time"; its memory is the gap process's whole
    peak, where above the Python process's that ran it; a ``status`` row where it is not
    installed).
Approach
    Each (builder, scale) runs in a fresh Python process, so that its memory is its own:
    tiny builds first (numba's cached code loaded), the input made (a file to read by
    another process), the resident memory
    read and the kernel's peak mark reset (``/proc/self/clear_refs``, Linux), the build,
    and the peak (``VmHWM``) less that reading is what the build added.

    python benchmarks/build.py --scale 18 20 22
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import harness
import numpy as np
import peers
import scipy.io

import taskbfs as tb

BUILDERS = ["generate", "from_edges", "kronecker", "read_el", "read_mtx", "mmread", "read_npz",
            "save_mtx", "mmwrite", "workers", "gap"]
#: The scipy peer of a reader or writer (``vs_scipy``).
SCIPY_PEERS = {"read_mtx": "mmread", "save_mtx": "mmwrite"}


def _hwm() -> int | None:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def gap(scale: int, edgefactor: int, repeats: int) -> dict:
    """GAP's generate + build at one scale, by its own clock, on all this machine's cores."""
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1)}  # the cores ours use
    argv = [peers.GapPeer().binary, "-g", str(scale), "-k", str(edgefactor), "-n", "0"]
    walls = []
    for _ in range(repeats):
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
        walls.append(sum(float(re.search(rf"{step} Time:\s+([0-9.]+)", out).group(1))
                         for step in ("Generate", "Build")))
    # a child's peak starts at its parent's (Linux): above this process's, it is gap's own
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB
    return {"seconds": min(walls), "csr": None, "added": peak if peak > (_hwm() or 0) else None}


def child(builder: str, scale: int, edgefactor: int, seed: int, repeats: int,
          workers: int) -> dict:
    """One builder at one scale in this (fresh) process."""
    if builder == "gap":
        return gap(scale, edgefactor, repeats)
    with tempfile.TemporaryDirectory(prefix="taskbfs-build-") as tmp:
        tiny = tb.kronecker(6, seed=seed)
        path = None
        if builder.startswith("read_") or builder == "mmread":
            path = os.path.join(tmp, "graph." + {"read_el": "el", "read_mtx": "mtx", "mmread": "mtx",
                                                 "read_npz": "npz"}[builder])
            tb.save_graph(tiny, path)
            tb.read_graph(path)
            if builder == "mmread":
                scipy.io.mmread(path)
            # written by another process: what the writer leaves on this one's heap (its
            # freed pages, pyarrow's pool) would otherwise count for or against the reader
            subprocess.run([sys.executable, "-c", "import sys, taskbfs as tb; tb.save_graph("
                            "tb.kronecker(*map(int, sys.argv[1:4])), sys.argv[4])",
                            str(scale), str(edgefactor), str(seed), path], check=True)
        if builder in ("save_mtx", "mmwrite"):
            path = os.path.join(tmp, "out.mtx")
            tb.save_graph(tiny, path)
            scipy.io.mmwrite(path, tiny.to_scipy(), symmetry="symmetric", field="pattern")
            written = tb.kronecker(scale, edgefactor, seed=seed)
            matrix = written.to_scipy() if builder == "mmwrite" else None
        if builder in ("generate", "from_edges"):
            src, dst = tb.kronecker_edges(scale, edgefactor, seed=seed)
            tb.Graph.from_edges(*tb.kronecker_edges(6, seed=seed), num_vertices=64)
        n = 1 << scale

        def build():
            if builder == "generate":
                return tb.kronecker_edges(scale, edgefactor, seed=seed)
            if builder == "from_edges":
                return tb.Graph.from_edges(src, dst, num_vertices=n)
            if builder == "kronecker":
                return tb.kronecker(scale, edgefactor, seed=seed)
            if builder == "mmread":
                return scipy.io.mmread(path)
            if builder == "save_mtx":
                return tb.save_graph(written, path)
            if builder == "mmwrite":
                # the file save_graph writes: each edge once, a symmetric pattern
                return scipy.io.mmwrite(path, matrix, symmetry="symmetric", field="pattern")
            return tb.read_graph(path)

        if builder == "workers":
            from distributed import Client, LocalCluster

            with LocalCluster(n_workers=workers, threads_per_worker=max(1, (os.cpu_count() or 2) // workers),
                              processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
                    Client(cluster, set_as_default=False) as client, tb.Runtime(client) as rt:
                tb.kronecker(6, seed=seed, runtime=rt)
                walls = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    g = tb.kronecker(scale, edgefactor, seed=seed, runtime=rt)
                    walls.append(time.perf_counter() - start)
                    del g
            return {"seconds": min(walls), "csr": None, "added": None}
        before = _rss()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # the peak restarts from here
        except OSError:
            pass
        walls = []
        for i in range(repeats):
            start = time.perf_counter()
            g = build()
            walls.append(time.perf_counter() - start)
            if i == 0:
                peak = _hwm()
        made = written if builder in ("save_mtx", "mmwrite") else g
        csr = (None if builder in ("generate", "mmread")
               else int(made.indptr.nbytes + made.indices.nbytes))
        added = None if peak is None else peak - before
        return {"seconds": min(walls), "csr": csr, "added": added}


def main(argv=None) -> list[dict]:
    p = harness.options(__doc__, scales=(16, 18), repeats=2)
    p.add_argument("--builders", nargs="+", default=BUILDERS, choices=BUILDERS)
    p.add_argument("--workers", type=int, default=2, help="worker processes of 'workers'")
    p.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        builder, scale = args.child[0], int(args.child[1])
        print(json.dumps(child(builder, scale, args.edgefactor, args.seed, args.repeats,
                               args.workers)))
        return []
    out = harness.Results("build", args)
    cores = os.cpu_count() or 1
    gap_missing = peers.GapPeer().why_not if "gap" in args.builders else None
    for scale in args.scale:
        for builder in args.builders:
            if builder == "gap" and gap_missing:
                out.add(builder=builder, scale=scale, status=gap_missing)
                continue
            run = subprocess.run([sys.executable, __file__, "--child", builder, str(scale),
                                  "--edgefactor", str(args.edgefactor), "--seed", str(args.seed),
                                  "--repeats", str(args.repeats), "--workers", str(args.workers)],
                                 capture_output=True, text=True)
            if run.returncode:
                raise RuntimeError(f"{builder} at scale {scale} failed:\n{run.stderr[-3000:]}")
            m = json.loads(run.stdout.strip().splitlines()[-1])
            edges = args.edgefactor * (1 << scale)
            csr_mib = m["csr"] / 2**20 if m["csr"] else np.nan
            added_mib = m["added"] / 2**20 if m["added"] is not None else np.nan
            out.add(builder=builder, scale=scale, seconds=m["seconds"],
                    medges_per_s_per_core=edges / m["seconds"] / cores / 1e6,
                    csr_mib=csr_mib, peak_added_mib=added_mib,
                    peak_over_csr=added_mib / csr_mib if m["csr"] else np.nan,
                    workers=args.workers if builder == "workers" else "")
        _against_scipy([r for r in out.rows if r.get("scale") == scale])
    out.save()
    return out.rows


def _against_scipy(rows: list[dict]) -> None:
    """``vs_scipy`` on one scale's ``rows``: a reader's or writer's wall over its scipy
    peer's (:data:`SCIPY_PEERS`), where both ran."""
    seconds = {r["builder"]: r.get("seconds") for r in rows}
    for r in rows:
        peer = SCIPY_PEERS.get(r["builder"])
        if peer and seconds.get(peer) and r.get("seconds"):
            r["vs_scipy"] = r["seconds"] / seconds[peer]


if __name__ == "__main__":
    main()
