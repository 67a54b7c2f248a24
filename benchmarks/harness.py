"""The one harness every question script in ``benchmarks/`` stands on.

Returns
    The pieces a measurement needs, each done one way: :func:`options` (the command-line
    options every script shares: graph, keys, repeats, CSV), :func:`graph` and :func:`keys`
    (a Graph500 Kronecker graph and its search keys, from scale, edgefactor and seed),
    :func:`warm_up` and :func:`timed_bfs` (one untimed call, then the wall time around the
    public call ``tb.bfs``: what its user waits), :class:`Reference` (scipy's BFS distances,
    the peer every answer is checked against), :func:`hmean_teps`, and :class:`Results`
    (one CSV row per measurement, with the machine, the date, the command line and the git
    commit; ``report.py`` turns the CSVs into ``RESULTS.md``).
Approach
    Public API only: ``import taskbfs as tb`` and its public names. The clock is the
    user's: ``time.perf_counter()`` around the call, the graph built and placed before it.

    >>> import harness                                          # doctest: +SKIP
    >>> g = harness.graph(16); ks = harness.keys(g, 4)          # doctest: +SKIP
    >>> seconds, r = harness.timed_bfs(g, ks[0], tasks=4)       # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np
from numba import njit

import taskbfs as tb

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


# ------------------------------------------------------------------ options
def options(description: str, scales=(16,), keys: int = 4, repeats: int = 3,
            edgefactor: int = 16) -> argparse.ArgumentParser:
    """A parser with the options every question shares (a script adds its own)."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=int, nargs="+", default=list(scales),
                   help="Kronecker scales, 2**scale vertices (default %(default)s)")
    p.add_argument("--edgefactor", type=int, default=edgefactor, help="edges per vertex (default %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="the graph's seed (default %(default)s)")
    p.add_argument("--keys", type=int, default=keys, help="Graph500 search keys, degree >= 1 (default %(default)s)")
    p.add_argument("--repeats", type=int, default=repeats, help="timed rounds over the keys (default %(default)s)")
    p.add_argument("--csv", default=None,
                   help="CSV to append the rows to (default benchmarks/results/<script>.csv)")
    p.add_argument("--no-csv", action="store_true", help="print only, write no CSV")
    return p


# ------------------------------------------------------------------ graphs and keys
def graph(scale: int, edgefactor: int = 16, seed: int = 1, runtime=None) -> tb.Graph:
    """The Graph500 Kronecker graph of ``scale`` (built on the workers with ``runtime``)."""
    return tb.kronecker(scale, edgefactor=edgefactor, seed=seed, runtime=runtime)


def keys(g, count: int, seed: int = 2) -> list[int]:
    """``count`` Graph500 search keys of ``g`` (vertices of degree >= 1)."""
    return [int(k) for k in tb.search_keys(g, count, seed=seed)]


# ------------------------------------------------------------------ timing
def warm_up(g, key: int, **kw) -> None:
    """One untimed call: the graph placed for these settings, the kernels loaded."""
    tb.bfs(g, key, **kw)


def timed_bfs(g, key: int, **kw):
    """``(wall seconds around tb.bfs, result)``."""
    start = time.perf_counter()
    r = tb.bfs(g, key, **kw)
    return time.perf_counter() - start, r


def hmean_teps(edges, seconds) -> float:
    """Harmonic mean of traversed edges / seconds over searches (Graph500's mean)."""
    teps = np.asarray(edges, float) / np.asarray(seconds, float)
    return float(len(teps) / np.sum(1.0 / teps)) if len(teps) else float("nan")


# ------------------------------------------------------------------ the peer's answer
class Reference:
    """scipy's BFS distances per key (``scipy.sparse.csgraph``), computed once each."""

    def __init__(self, g):
        self.graph = g
        self._matrix = None
        self._cache: dict[int, np.ndarray] = {}

    def distances(self, key: int) -> np.ndarray:
        if key not in self._cache:
            from scipy.sparse.csgraph import breadth_first_order

            if self._matrix is None:
                self._matrix = self.graph.to_scipy()
            order, pred = breadth_first_order(self._matrix, key, directed=True,
                                              return_predecessors=True)
            self._cache[key] = depths(order, pred, key, self.graph.num_vertices)
        return self._cache[key]

    def check(self, key: int, distances, who: str = "taskbfs") -> None:
        """Raise AssertionError naming ``who`` when its distances differ from scipy's."""
        expected = self.distances(key)
        bad = int(np.count_nonzero(np.asarray(distances, np.int64) != expected))
        if bad:
            raise AssertionError(f"{who}, key {key}: {bad} distances differ from scipy's")


def depths(order, pred, source: int, n: int) -> np.ndarray:
    """BFS distances from a BFS order and its predecessors (-1 unreached)."""
    d = np.full(n, -1, np.int64)
    d[source] = 0
    _depths(np.asarray(order, np.int64), np.asarray(pred, np.int64), d)
    return d


@njit(cache=True)
def _depths(order, pred, d):  # pragma: no cover - numba
    for i in range(1, order.size):  # BFS order: a vertex's predecessor comes before it
        v = order[i]
        d[v] = d[pred[v]] + 1


# ------------------------------------------------------------------ where and when
@lru_cache(maxsize=1)
def machine() -> dict:
    """CPU model, cores and GPU (name x count, '' without one) of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = ""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        names = [n.strip() for n in out.splitlines() if n.strip()]
        if names:
            gpu = f"{names[0]} x{len(names)}" if len(names) > 1 else names[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count() or 1, "gpu": gpu}


@lru_cache(maxsize=1)
def commit() -> str:
    """The git commit of the checkout (``+dirty`` with uncommitted changes to tracked
    files); ``TASKBFS_COMMIT`` where the copy has no git (the device machine)."""
    if os.environ.get("TASKBFS_COMMIT"):
        return os.environ["TASKBFS_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=HERE, text=True,
                               capture_output=True, check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def command() -> str:
    """The command line that ran this script, as one would type it."""
    script = Path(sys.argv[0])
    try:
        script = script.resolve().relative_to(HERE.parent)
    except ValueError:
        pass
    return " ".join(["python", shlex.quote(str(script)), *map(shlex.quote, sys.argv[1:])])


class Results:
    """The rows of one run of a question script, appended to its CSV on :meth:`save`.

    Every row gets the columns ``question, run, date, cpu, cores, gpu, commit, command,
    source`` before its own: ``run`` (the UTC start time) groups a run's rows, ``source``
    is ``run`` for a measurement made by the script (``transcribed ...`` for figures
    copied from an older page)."""

    def __init__(self, question: str, args=None):
        self.question = question
        self.path = None
        if args is None or not getattr(args, "no_csv", False):
            self.path = Path(args.csv) if args is not None and args.csv else RESULTS / f"{question}.csv"
        now = _dt.datetime.now(_dt.timezone.utc)
        self.base = {"question": question, "run": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "date": now.strftime("%Y-%m-%d"), **machine(), "commit": commit(),
                     "command": command(), "source": "run"}
        self.rows: list[dict] = []

    def add(self, **row) -> dict:
        """Record one measurement and print it as one line."""
        full = {**self.base, **{k: _plain(v) for k, v in row.items()}}
        self.rows.append(full)
        print("  ".join(f"{k}={_show(v)}" for k, v in row.items()), flush=True)
        return full

    def save(self) -> Path | None:
        """Append the rows to the CSV (its header grows to hold new columns)."""
        if self.path is None or not self.rows:
            return None
        old: list[dict] = []
        fields: list[str] = []
        if self.path.exists():
            with self.path.open(newline="") as f:
                reader = csv.DictReader(f)
                fields = list(reader.fieldnames or [])
                old = list(reader)
        for row in self.rows:
            fields += [k for k in row if k not in fields]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(old + self.rows)
        print(f"{len(self.rows)} rows -> {self.path}", flush=True)
        return self.path


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return round(float(v), 6)
    return v


def _show(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def median(values) -> float:
    return float(np.median(values)) if len(values) else float("nan")


# ------------------------------------------------------------------ where to run
def add_runtime_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", default=None,
                   help="a scheduler address (default: the embedded in-process cluster)")
    p.add_argument("--threads", type=int, default=None,
                   help="worker threads of the embedded cluster (default: every core)")


def runtime(args):
    """A :class:`tb.Runtime` for ``--scheduler`` / ``--threads``, else None: the embedded
    default cluster, started once per process (what ``tb.bfs`` uses unasked)."""
    if getattr(args, "scheduler", None):
        return tb.Runtime(args.scheduler)
    if getattr(args, "threads", None):
        return tb.Runtime(threads=args.threads)
    return None


def close(rt) -> None:
    if rt is not None:
        rt.close()


def has_gpu(rt=None) -> bool:
    """Whether the runtime (the embedded default one for None) has a GPU worker: a
    ``gpu`` search of a tiny graph runs, or raises ``tb.DeviceUnavailableError``."""
    tiny = tb.Graph.from_edges([0], [1])
    try:
        tb.bfs(tiny, 0, strategy="gpu", tasks=1, runtime=rt)
    except tb.DeviceUnavailableError:
        return False
    return True


# ------------------------------------------------------------------ clusters of processes
def gpu_count() -> int:
    """GPUs ``nvidia-smi -L`` lists (0 without the tool)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def worker_commands(scheduler_file: str, gpus: int, cpu_threads: int, share: bool,
                    simulate: bool, cpu_workers: int = 1) -> list[tuple[list[str], dict]]:
    """``(argv, environment)`` of every worker process: the CPU workers (``cpu``,
    ``cpu-1``, ...), then one per GPU (``gpu-0``, ...), pinned with
    ``CUDA_VISIBLE_DEVICES`` (``share``: all on the first GPU this process may use;
    ``simulate``: ``NUMBA_ENABLE_CUDASIM=1``)."""
    # an equal share of the host's memory each (Dask's default, the share of a worker's
    # threads, is too little for a GPU worker of one thread)
    base = [sys.executable, "-m", "dask", "worker", "--scheduler-file", scheduler_file,
            "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0", "--no-nanny",
            "--memory-limit", f"{1 / (gpus + cpu_workers):.4f}"]
    env = dict(os.environ)
    if simulate:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    commands = [([*base, "--name", "cpu" if i == 0 else f"cpu-{i}", "--nthreads",
                  str(cpu_threads), "--resources", f"CPU={cpu_threads}"],
                 {**env, "CUDA_VISIBLE_DEVICES": ""}) for i in range(cpu_workers)]
    # the GPUs this process may use, as the host numbers them (sharing: the first)
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    for i in range(gpus):
        device = (visible or ["0"])[0] if share else (visible[i] if i < len(visible) else str(i))
        commands.append(([*base, "--name", f"gpu-{i}", "--nthreads", "1", "--resources",
                          "GPU=1"], {**env, "CUDA_VISIBLE_DEVICES": device}))
    return commands


@contextmanager
def cluster(gpus: int, cpu_threads: int, share: bool = False, simulate: bool = False,
            timeout: float = 120, cpu_workers: int = 1):
    """A scheduler and its workers as separate ``dask`` CLI processes on 127.0.0.1
    (deploy/README.md); yields a connected ``distributed.Client``. Every process is
    stopped on exit."""
    from distributed import Client

    procs = []
    with tempfile.TemporaryDirectory(prefix="taskbfs-cluster-") as tmp:
        sched_file = os.path.join(tmp, "scheduler.json")
        logs = open(os.path.join(tmp, "processes.log"), "w")  # noqa: SIM115 - closed below
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--dashboard-address", "127.0.0.1:0", "--scheduler-file", sched_file],
                stdout=logs, stderr=subprocess.STDOUT))
            _wait_for(lambda: os.path.exists(sched_file), timeout, "the scheduler file")
            for argv, env in worker_commands(sched_file, gpus, cpu_threads, share, simulate,
                                             cpu_workers):
                procs.append(subprocess.Popen(argv, env=env, stdout=logs,
                                              stderr=subprocess.STDOUT))
            client = Client(scheduler_file=sched_file, timeout=timeout)
            try:
                client.wait_for_workers(gpus + cpu_workers, timeout=timeout)
                yield client
            finally:
                client.close()
        finally:
            # the workers first, while their scheduler is up, then the scheduler
            _stop(procs[1:])
            _stop(procs[:1])
            logs.close()


def _stop(procs, timeout: float = 15) -> None:
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
    """``{worker name: resources}`` of a cluster's workers."""
    # asked now: the client's cached copy may list no workers for a moment
    info = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    return {w["name"]: dict(w.get("resources", {})) for w in info.values()}
