"""taskbfs side by side with the tools people would otherwise use, same graph, same keys.

One Graph500 Kronecker graph, one set of search keys (degree >= 1), then on every key:

- taskbfs (embedded default cluster or ``--scheduler``) for each T of ``--tasks`` (a small
  sweep); the table shows the default T and the best T (by median MTEPS);
- the same CPU kernels in a plain Python level loop without Dask (``plain_loop.py``) at
  every T of the sweep, on a thread pool (as many threads as the embedded cluster's worker)
  and on one thread. taskbfs and the two plain loops run key by key side by side, so that
  the ratio the issue targets sees one machine load (the machine is shared and noisy);
- scipy ``breadth_first_order``, python-graphblas (masked ``vxm`` with ``any_secondi``),
  igraph ``Graph.bfs``, and networkx ``bfs_predecessors`` (scale <= 16 by default).

Every peer's distances (from its levels, or the depths of its parent tree) must equal
taskbfs's for every key. MTEPS = Graph500 traversed edges (those of the key's component)
/ search seconds, harmonic mean over the keys; "x taskbfs" = peer MTEPS / taskbfs MTEPS
at its best T. Each peer gets one untimed warm-up search first. Building a peer's own
graph structure is not timed (reported in the notes). Peers that are not installed are
reported as such.

Memory: peak resident set size (RSS) of this process, by a thread that samples
``psutil.Process().memory_info().rss`` every 5 ms, combined with
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the kernel's exact lifetime peak, which
counts when it rises inside the measured block). The embedded cluster runs in this process
(threads), so its workers' numba allocations and partition copies are included;
tracemalloc would miss them. The column "peak RSS +MB" is, for each peer, the peak RSS
during its timed searches minus the RSS before it built its own structures: for taskbfs,
before the runtime started (so: runtime, placed partitions of every T of the sweep, the
search state), measured in a pass of taskbfs alone at the best T; for the plain loop,
before its slices of every T were built; for the others, before their matrix or graph
object was built (build temporaries that are freed again do not count). Memory that a
peer frees may stay mapped to the process and be reused by later peers, so increases of
later peers can be understated; taskbfs runs first.

    python benchmarks/peers.py --scale 16 --keys 16 --tasks 4 8 16 32 [--markdown]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plain_loop import Slices, plain_bfs  # noqa: E402

import taskbfs as tb  # noqa: E402
from taskbfs.bfs.core import tasks_for_slots  # noqa: E402

MB = 1 << 20


# ------------------------------------------------------------------ measurements
@dataclass
class Row:
    """One line of the table: a peer's per-key seconds and what went with them."""

    name: str
    seconds: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    status: str = "ok"  # ok | not installed | skipped (...) | DISAGREES (...)
    note: str = ""
    peak_mb: float = float("nan")  # peak RSS over the RSS before the peer's structures
    mismatches: int = 0

    @property
    def mteps(self) -> float:
        if not self.seconds:
            return float("nan")
        teps = np.asarray(self.edges, float) / np.asarray(self.seconds, float)
        return len(teps) / np.sum(1.0 / teps) / 1e6

    @property
    def mteps_median(self) -> float:
        """Median over the keys of each search's MTEPS (the issue's table)."""
        if not self.seconds:
            return float("nan")
        return float(np.median(np.asarray(self.edges, float) / np.asarray(self.seconds, float))) / 1e6

    def speed_vs(self, base: Row) -> float:
        """Median over the keys of base seconds / own seconds (> 1: faster than base)."""
        if not self.seconds or len(self.seconds) != len(base.seconds):
            return float("nan")
        return float(np.median(np.asarray(base.seconds) / np.asarray(self.seconds)))

    @property
    def median(self) -> float:
        return float(np.median(self.seconds)) if self.seconds else float("nan")


class PeakRSS:
    """Peak RSS of this process over a ``with`` block (see the module docstring)."""

    def __init__(self, interval: float = 0.005, baseline: int | None = None):
        self.interval = interval
        self.baseline = baseline  # RSS to measure the increase from (default: at __enter__)
        self.start = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = None

    @staticmethod
    def _rss() -> int:
        try:
            import psutil

            return psutil.Process().memory_info().rss
        except ImportError:  # fall back to ru_maxrss alone (Linux: KiB)
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def _sample(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._rss())

    def __enter__(self):
        self.peak = self._rss()
        self.start = self.peak if self.baseline is None else self.baseline
        self._maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if maxrss > self._maxrss0:  # a new lifetime high was set inside the block
            self.peak = max(self.peak, maxrss)

    @property
    def increase_mb(self) -> float:
        return (self.peak - self.start) / MB


@njit(cache=True)
def tree_depths(parents, source):  # pragma: no cover - numba
    """Depth of every vertex in a parent tree (-1 unreached); all -2 if the tree is broken.

    Each vertex is pushed once (-3 marks the chain being walked, so a cycle is caught).
    """
    n = parents.size
    depth = np.full(n, -1, np.int64)
    depth[source] = 0
    stack = np.empty(n, np.int64)
    for v in range(n):
        if parents[v] < 0 or depth[v] >= 0:
            continue
        top = 0
        u = v
        while depth[u] == -1:
            if parents[u] < 0 or parents[u] == u:
                return np.full(n, -2, np.int64)
            depth[u] = -3
            stack[top] = u
            top += 1
            u = parents[u]
        if depth[u] == -3:
            return np.full(n, -2, np.int64)
        d = depth[u]
        while top > 0:
            top -= 1
            d += 1
            depth[stack[top]] = d
    return depth


class Reference:
    """taskbfs's distances per key (1 byte per vertex when levels fit), and its edges."""

    def __init__(self):
        self.distances: dict[int, np.ndarray] = {}
        self.edges: dict[int, int] = {}

    def add(self, key, distances, edges):
        small = np.int8 if distances.max() < 127 else np.int32
        self.distances[key] = distances.astype(small)
        self.edges[key] = int(edges)

    def check(self, row: Row, key, distances) -> None:
        ref = self.distances[key]
        bad = int(np.count_nonzero(ref.astype(np.int64) != distances))
        if bad:
            row.mismatches += 1
            row.status = f"DISAGREES ({row.mismatches} keys; key {key}: {bad} vertices differ)"


# ------------------------------------------------------------------ peers
@dataclass
class CoreRuns:
    """taskbfs and the plain loop at every T, measured key by key side by side."""

    taskbfs: dict  # T -> Row
    plain: dict  # T -> Row (thread pool)
    serial: dict  # T -> Row (one thread)
    best: int = 0
    total: PeakRSS | None = None  # runtime start .. end of the taskbfs runs
    rerun: Row | None = None  # taskbfs alone at the best T (its memory pass)
    rerun_plain: Row | None = None  # plain loop alone at the best T, before the runtime started
    workers: dict = field(default_factory=dict)
    warm: float = 0.0


def warm_kernels() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny graph, before any
    memory is measured, so that no peer's memory or time includes compilation."""
    tiny = tb.kronecker(6, seed=1)
    for direction in ("top-down", "bottom-up", "auto"):
        r = plain_bfs(tiny, int(tb.search_keys(tiny, 1)[0]), tasks=2, threads=1, direction=direction)
    tree_depths(r.parents, r.source)


def run_core(graph, keys, task_counts, ref, scheduler, threads) -> CoreRuns:
    """taskbfs (on the cluster) and the plain loop (same kernels, no Dask) at every T.

    First the plain loop alone at every T, before the runtime exists: its memory column
    and its speed with no Dask thread in the process. Then, with the runtime up, for each
    T and key three searches back to back (taskbfs, plain loop on ``threads`` threads,
    plain loop on one), so that all three see the same machine load; the first T's
    taskbfs results are validated and become the reference. Last, at the best T (median
    MTEPS), a pass of taskbfs alone: its memory column, and a re-measurement free of the
    selection of the best T.
    """
    runs = CoreRuns({}, {}, {})
    label = f"{threads} thread{'s' if threads > 1 else ''}"
    warm_kernels()
    before_slices = PeakRSS._rss()
    slices = {t: Slices(graph, t) for t in task_counts}
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    alone = {}
    try:
        with PeakRSS(baseline=before_slices) as plain_mem:
            for tasks in task_counts:
                plain_bfs(graph, keys[0], slices=slices[tasks], threads=threads, pool=pool)
                alone[tasks] = [plain_bfs(graph, key, slices=slices[tasks], threads=threads,
                                          pool=pool).elapsed for key in keys]
        with PeakRSS() as total, tb.Runtime(scheduler) as rt:
            runs.workers = rt.resources()
            t0 = time.perf_counter()
            tb.bfs(graph, keys[0], tasks=task_counts[0], runtime=rt)  # warm-up: placement
            runs.warm = time.perf_counter() - t0
            for tasks in task_counts:
                tb.bfs(graph, keys[0], tasks=tasks, runtime=rt)  # place every T's partitions
            for i, tasks in enumerate(task_counts):
                row = runs.taskbfs[tasks] = Row(f"taskbfs T={tasks}")
                plain = runs.plain[tasks] = Row(f"plain loop T={tasks}, {label}")
                serial = runs.serial[tasks] = Row(f"plain loop T={tasks}, 1 thread")
                for key in keys:
                    r = tb.bfs(graph, key, tasks=tasks, runtime=rt)
                    if i == 0:
                        tb.validate(graph, key, r.parents, levels=r.distances)
                        ref.add(key, r.distances, r.traversed_edges)
                    else:
                        ref.check(row, key, r.distances)
                    _record(row, key, r.elapsed, ref)
                    for out, n in ((plain, threads), (serial, 1)):
                        p = plain_bfs(graph, key, slices=slices[tasks], threads=n, pool=pool)
                        ref.check(out, key, p.distances)
                        _record(out, key, p.elapsed, ref)
            runs.best = max(runs.taskbfs, key=lambda t: runs.taskbfs[t].mteps_median)
            runs.rerun = Row(f"taskbfs T={runs.best}, alone")
            with PeakRSS(baseline=total.start) as mem:
                for key in keys:
                    r = tb.bfs(graph, key, tasks=runs.best, runtime=rt)
                    _record(runs.rerun, key, r.elapsed, ref)
            runs.rerun.peak_mb = mem.increase_mb
        runs.total = total
    finally:
        if pool is not None:
            pool.shutdown()
    runs.rerun_plain = Row(f"plain loop T={runs.best}, alone")
    for key, seconds in zip(keys, alone[runs.best], strict=True):
        _record(runs.rerun_plain, key, seconds, ref)
    for t in task_counts:
        runs.taskbfs[t].peak_mb = runs.rerun.peak_mb
        runs.plain[t].peak_mb = runs.serial[t].peak_mb = plain_mem.increase_mb
    return runs


def _record(row: Row, key, seconds, ref) -> None:
    row.seconds.append(seconds)
    row.edges.append(ref.edges[key])


def timed_peer(row: Row, keys, ref, search, build=None):
    """Build the peer's structure (untimed), warm up, then time ``search(key)`` per key.

    ``search`` returns ``(seconds, distances)``.
    """
    before = PeakRSS._rss()
    if build is not None:
        t0 = time.perf_counter()
        build()
        row.note = f"build {time.perf_counter() - t0:.1f} s (untimed)"
    search(keys[0])
    with PeakRSS(baseline=before) as mem:
        for key in keys:
            seconds, distances = search(key)
            ref.check(row, key, distances)
            row.seconds.append(seconds)
            row.edges.append(ref.edges[key])
    row.peak_mb = mem.increase_mb
    return row


def parents_to_depths(parents, source):
    p = np.asarray(parents, dtype=np.int64)
    p[p < 0] = -1
    p[source] = source
    return tree_depths(p, source)


def run_scipy(graph, keys, ref):
    from scipy.sparse.csgraph import breadth_first_order

    row = Row("scipy breadth_first_order")
    holder = {}

    def build():
        holder["A"] = graph.to_scipy()

    def search(key):
        t0 = time.perf_counter()
        # The CSR already holds both arcs of every edge, so directed=True is the same
        # search without scipy symmetrising the matrix on every call.
        _, pred = breadth_first_order(holder["A"], key, directed=True, return_predecessors=True)
        seconds = time.perf_counter() - t0
        return seconds, parents_to_depths(pred, key)

    timed_peer(row, keys, ref, search, build)
    row.note = "directed=True on the symmetric CSR, predecessors; " + row.note
    return row


def run_graphblas(graph, keys, ref):
    try:
        import graphblas as gb
        from graphblas import Matrix, Vector, semiring
    except ImportError:
        return Row("python-graphblas", status="not installed")
    row = Row("python-graphblas vxm any_secondi")
    n = graph.num_vertices
    holder = {}

    def build():
        holder["A"] = Matrix.from_csr(graph.indptr, graph.indices, values=True, dtype=bool,
                                      nrows=n, ncols=n)

    any_secondi = semiring.ss.any_secondi[gb.dtypes.INT64]

    def search(key):
        A = holder["A"]
        t0 = time.perf_counter()
        frontier = Vector(gb.dtypes.INT64, n)
        parents = Vector(gb.dtypes.INT64, n)
        frontier[key] = key
        parents[key] = key
        while frontier.nvals:
            # frontier<!parents, replace> = frontier any.secondi A: each unvisited
            # neighbour gets the id of one frontier vertex (its parent).
            frontier(~parents.S, replace=True) << any_secondi(frontier @ A)
            parents(frontier.S) << frontier
        seconds = time.perf_counter() - t0
        return seconds, parents_to_depths(parents.to_dense(fill_value=-1), key)

    timed_peer(row, keys, ref, search, build)
    row.note = f"{gb.ss.config['nthreads']} threads; " + row.note
    return row


def run_igraph(graph, keys, ref):
    try:
        import igraph as ig
    except ImportError:
        return Row("igraph", status="not installed")
    row = Row("igraph Graph.bfs")
    holder = {}

    def build():
        src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.indptr))
        keep = src < graph.indices
        s, d = src[keep], graph.indices[keep]
        del src, keep
        g = ig.Graph(n=graph.num_vertices)
        chunk = 1 << 23
        for i in range(0, s.size, chunk):
            g.add_edges(list(zip(s[i : i + chunk].tolist(), d[i : i + chunk].tolist(), strict=True)))
        holder["G"] = g

    def search(key):
        g = holder["G"]
        t0 = time.perf_counter()
        vids, layers, _parents = g.bfs(key)
        seconds = time.perf_counter() - t0
        vids = np.asarray(vids, dtype=np.int64)
        layers = np.asarray(layers, dtype=np.int64)
        distances = np.full(graph.num_vertices, -1, dtype=np.int64)
        distances[vids] = np.repeat(np.arange(layers.size - 1), np.diff(layers))
        return seconds, distances

    timed_peer(row, keys, ref, search, build)
    return row


def run_networkx(graph, keys, ref, scale, max_scale):
    row = Row("networkx bfs_predecessors")
    if scale > max_scale:
        row.status = f"skipped (scale > {max_scale})"
        return row
    try:
        import networkx as nx
    except ImportError:
        return Row("networkx", status="not installed")
    holder = {}

    def build():
        src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.indptr))
        keep = src < graph.indices
        g = nx.Graph()
        g.add_nodes_from(range(graph.num_vertices))
        g.add_edges_from(zip(src[keep].tolist(), graph.indices[keep].tolist(), strict=True))
        holder["G"] = g

    def search(key):
        t0 = time.perf_counter()
        pred = dict(nx.bfs_predecessors(holder["G"], key))
        seconds = time.perf_counter() - t0
        parents = np.full(graph.num_vertices, -1, dtype=np.int64)
        if pred:
            parents[np.fromiter(pred.keys(), np.int64)] = np.fromiter(pred.values(), np.int64)
        return seconds, parents_to_depths(parents, key)

    timed_peer(row, keys, ref, search, build)
    return row


# ------------------------------------------------------------------ report
def machine_line() -> str:
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines()
                     if line.startswith("Model name"))
    except Exception:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB"


def versions() -> str:
    out = []
    for mod in ("numpy", "numba", "scipy", "dask", "distributed", "graphblas", "igraph", "networkx"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except Exception:
            out.append(f"{mod} -")
    return ", ".join(out)


def _git_head() -> str:
    try:
        out = subprocess.run(["git", "-C", str(Path(tb.__file__).parent), "log", "-1", "--format=%h"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(Path(tb.__file__).parent), "status", "--porcelain",
                                "."], capture_output=True, text=True, check=True).stdout.strip()
        return f"(commit {out}{' + uncommitted changes' if dirty else ''})"
    except Exception:
        return "(not a git checkout)"


def fmt(x, spec) -> str:
    return "" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def fmt_mteps(x) -> str:
    return fmt(x, ".1f" if x >= 10 else ".3g")


def print_table(rows, base: Row, markdown: bool) -> None:
    head = ["peer", "MTEPS hmean", "MTEPS median", "median s", "x taskbfs", "peak RSS +MB",
            "status / notes"]
    lines = []
    for r in rows:
        ok = r.status == "ok" or r.status.startswith("DISAGREES")
        cells = [r.name,
                 fmt_mteps(r.mteps) if ok else "",
                 fmt_mteps(r.mteps_median) if ok else "",
                 fmt(r.median, ".4f") if ok else "",
                 fmt(r.speed_vs(base), ".2f") if ok else "",
                 fmt(r.peak_mb, ".0f") if ok else "",
                 r.status if r.status != "ok" else r.note]
        lines.append(cells)
    print_grid(head, lines, markdown)


def print_grid(head, lines, markdown: bool, left=(0, -1)) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for cells in lines:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    left = {i % len(head) for i in left}
    for cells in [head, *lines]:
        print("  ".join(c.ljust(w) if i in left else c.rjust(w)
                        for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--edgefactor", type=int, default=16)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tasks", type=int, nargs="+", default=[4, 8, 16, 32],
                        help="T sweep for taskbfs and the plain loop (the default T is added)")
    parser.add_argument("--threads", type=int, default=None,
                        help="plain-loop threads (default: os.cpu_count(), as the embedded cluster)")
    parser.add_argument("--scheduler", default=None, help="Dask scheduler (default: embedded cluster)")
    parser.add_argument("--networkx-max-scale", type=int, default=16)
    parser.add_argument("--skip", nargs="*", default=[], choices=["scipy", "graphblas", "igraph", "networkx"])
    parser.add_argument("--markdown", action="store_true", help="print the tables as markdown")
    args = parser.parse_args(argv)
    threads = args.threads or os.cpu_count() or 1
    # the T bfs() picks by default on the embedded cluster (one CPU slot per core)
    default_t = tasks_for_slots(threads)
    task_counts = sorted({default_t, *args.tasks})

    print(f"machine: {machine_line()}; date {time.strftime('%Y-%m-%d %H:%M')}; "
          f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"versions: {versions()}; taskbfs from {Path(tb.__file__).parent} {_git_head()}")
    t0 = time.perf_counter()
    graph = tb.kronecker(args.scale, edgefactor=args.edgefactor, seed=args.seed)
    keys = [int(k) for k in tb.search_keys(graph, args.keys, seed=args.seed)]
    graph_mb = (graph.indptr.nbytes + graph.indices.nbytes) / MB
    print(f"graph: Kronecker scale {args.scale}, edgefactor {args.edgefactor}, seed {args.seed}: "
          f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges, CSR {graph_mb:.0f} MB "
          f"(generated and built in {time.perf_counter() - t0:.1f} s); {len(keys)} keys")

    ref = Reference()
    core = run_core(graph, keys, task_counts, ref, args.scheduler, threads)
    tb_rows, best_t, mem = core.taskbfs, core.best, core.total
    print(f"taskbfs: cluster {core.workers}; warm-up search {core.warm:.2f} s (untimed); memory: "
          f"peak RSS {mem.peak / MB:.0f} MB = {mem.start / MB:.0f} MB before the runtime started "
          f"(graph, harness, plain-loop slices) + {mem.increase_mb:.0f} MB (runtime start, "
          f"placement of {len(task_counts)} partitionings, all searches of the sweep); in a pass "
          f"of taskbfs alone at T={best_t} the peak was {core.rerun.peak_mb:.0f} MB over the RSS "
          f"before the runtime started (the table's column)")
    print(f"measured alone at T={best_t}: taskbfs {fmt_mteps(core.rerun.mteps_median)} MTEPS median "
          f"(after the sweep), plain loop {fmt_mteps(core.rerun_plain.mteps_median)} (before the "
          f"runtime started); ratio {core.rerun_plain.speed_vs(core.rerun):.2f}")
    plain_rows = core.plain
    plain_serial = core.serial[best_t] if threads > 1 else None

    others = []
    if "scipy" not in args.skip:
        others.append(run_scipy(graph, keys, ref))
    if "graphblas" not in args.skip:
        others.append(run_graphblas(graph, keys, ref))
    if "igraph" not in args.skip:
        others.append(run_igraph(graph, keys, ref))
    if "networkx" not in args.skip:
        others.append(run_networkx(graph, keys, ref, args.scale, args.networkx_max_scale))

    default_row = tb_rows[default_t]
    default_row.name += " (default)"
    best_row = tb_rows[best_t]
    if best_t != default_t:
        best_row.name += f" (best of {' '.join(map(str, task_counts))})"
    else:
        default_row.name += f", best of {' '.join(map(str, task_counts))}"
    rows = [default_row] + ([best_row] if best_t != default_t else [])
    rows += [plain_rows[best_t]] + ([plain_serial] if plain_serial else []) + others

    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\nscale {args.scale}, {len(keys)} keys, edges per key {min(ref.edges.values()):,} .. "
          f"{max(ref.edges.values()):,}. MTEPS = Graph500 traversed edges / seconds: harmonic mean "
          f"over the keys (Graph500) and median (the issue's table); x taskbfs = median over the "
          f"keys of taskbfs T={best_t} seconds / peer seconds (> 1: faster than taskbfs); best T "
          f"by median MTEPS\n")
    print_table(rows, best_row, args.markdown)

    print("\nT sweep: taskbfs on the cluster vs the same kernels in the plain loop, run key by "
          "key side by side; MTEPS median (harmonic mean); taskbfs / plain = median over the "
          "keys of the time ratio; extra s = median over the keys of the time difference\n")
    sweep = []
    for t in task_counts:
        a, b, c = tb_rows[t], plain_rows[t], core.serial[t]
        extra = np.median(np.asarray(a.seconds) - np.asarray(b.seconds))
        sweep.append([str(t), f"{fmt_mteps(a.mteps_median)} ({fmt_mteps(a.mteps)})",
                      f"{fmt_mteps(b.mteps_median)} ({fmt_mteps(b.mteps)})",
                      f"{fmt_mteps(c.mteps_median)} ({fmt_mteps(c.mteps)})",
                      f"{b.speed_vs(a):.2f}", f"{c.speed_vs(a):.2f}", f"{extra:.4f}"])
    print_grid(["T", "taskbfs", f"plain, {threads} threads", "plain, 1 thread",
                f"taskbfs / plain {threads} thr", "taskbfs / plain 1 thr", "extra s"], sweep,
               args.markdown, left=())
    plain_best = plain_rows[best_t]
    serial_best = core.serial[best_t]
    print(f"\ntaskbfs / plain loop at taskbfs's best T={best_t}: {plain_best.speed_vs(best_row):.2f} "
          f"with {threads} threads, {serial_best.speed_vs(best_row):.2f} with 1 thread (median "
          f"per-key time ratios; by harmonic-mean MTEPS {plain_best.mteps / best_row.mteps:.2f} and "
          f"{serial_best.mteps / best_row.mteps:.2f}); issue target <= 1.3")
    disagree = [r.name for r in [*tb_rows.values(), *plain_rows.values(), *core.serial.values(),
                                 *others] if r.status.startswith("DISAGREES")]
    if disagree:
        print(f"DISAGREEMENT with taskbfs's distances: {', '.join(disagree)}")
        return 1
    print("distances: every peer agrees with taskbfs on every key "
          "(taskbfs's reference run also passed Graph500 validation)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
