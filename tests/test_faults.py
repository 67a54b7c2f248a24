"""Faults and long use: a lost worker, a frozen worker, too many tasks, many searches,
several threads at once, and what the embedded runtime exposes on the network.

The lost and frozen workers are real ``dask worker`` processes (no nanny, so that a killed
one stays dead until the test starts another) beside a ``dask scheduler`` process, every
one on 127.0.0.1; they get SIGKILL and SIGSTOP. Results are compared with scipy.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from reference import scipy_distances

import taskbfs as tb
from taskbfs.errors import InvalidParameterError, SearchTimeoutError, WorkerLostError
from taskbfs.runtime import Policy, Program
from taskbfs.runtime.plugin import PLUGIN_NAME, PlacementPlugin, workers_of

from programs import WORKER_PYTHONPATH  # isort: skip  (tests/programs.py)

START_TIMEOUT = 60


class ProcessCluster:
    """A ``dask scheduler`` and ``dask worker`` processes (one thread, ``CPU=1``, no
    nanny) on 127.0.0.1, started and stopped by the test."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH)
        self._spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(tmp / "s.json")])
        deadline = time.monotonic() + START_TIMEOUT
        while not ((tmp / "s.json").exists() and (tmp / "s.json").stat().st_size):
            assert self.procs["scheduler"].poll() is None, self.log("scheduler")
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        self.address = json.loads((tmp / "s.json").read_text())["address"]

    def _spawn(self, name: str, args: list[str]) -> None:
        with open(self.tmp / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen([sys.executable, "-m", "dask", *args],
                                                stdout=log, stderr=subprocess.STDOUT, env=self.env)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()[-3000:]

    def add_worker(self, name: str, client, *extra: str) -> str:
        """Start worker ``name`` (``extra``: more ``dask worker`` options); its address
        once the scheduler has it running (after the runtime's warm-up there)."""
        self._spawn(name, ["worker", self.address, "--name", name, "--host", "127.0.0.1",
                           "--no-dashboard", "--no-nanny", "--nthreads", "1",
                           "--resources", "CPU=1", *extra])
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            found = self.workers(client).get(name)
            if found:
                return found
            assert self.procs[name].poll() is None, self.log(name)
            assert time.monotonic() < deadline, f"worker {name} did not join"
            time.sleep(0.1)

    @staticmethod
    def workers(client) -> dict[str, str]:
        info = workers_of(client)
        return {w["name"]: address for address, w in info.items() if w["status"] == "running"}

    def signal(self, name: str, sig: int) -> None:
        os.kill(self.procs[name].pid, sig)

    def kill(self, name: str, client) -> None:
        """SIGKILL worker ``name`` and wait until the scheduler has removed it."""
        self.signal(name, signal.SIGKILL)
        self.procs[name].wait(timeout=30)
        deadline = time.monotonic() + 30
        while name in self.workers(client):
            assert time.monotonic() < deadline, f"the scheduler still lists {name}"
            time.sleep(0.05)

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):  # workers before the scheduler
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.fixture
def processes(tmp_path):
    cluster = ProcessCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def kill_matrix(tmp_path_factory):
    """One scheduler process for the kill matrix's directions: each test starts where the
    one before left (two live workers), which saves three process starts per direction."""
    cluster = ProcessCluster(tmp_path_factory.mktemp("kill-matrix"))
    try:
        yield cluster
    finally:
        cluster.close()


def _path_graph(n: int) -> tb.Graph:
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def _check(graph, source, result) -> None:
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents, result.distances)


def _holders(rt, graph, wait: float = 0) -> set[str]:
    """The workers that hold a slice of ``graph`` placed on ``rt`` (waiting up to
    ``wait`` seconds for it to be placed)."""
    from taskbfs.placed.placement import _placed

    deadline = time.monotonic() + wait
    while True:
        placed = [p for (token, *_), p in _placed.get(rt, {}).items() if token == graph.token]
        if placed or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return {w for p in placed for ws in rt.client.who_has(p.futures()).values() for w in ws}


# ---------------------------------------------------------------------------- lost workers
def test_worker_killed_between_searches(processes):
    """The next search of the same graph places its lost slices again (on the worker
    left, then on a restarted one), and a graph stays unchangeable on this cluster too."""
    with tb.Runtime(processes.address) as rt:
        a = processes.add_worker("a", rt.client)
        b = processes.add_worker("b", rt.client)
        graph = tb.kronecker(10, seed=3)
        _check(graph, 5, tb.bfs(graph, 5, tasks=4, runtime=rt))
        assert _holders(rt, graph) == {a, b}
        with pytest.raises(ValueError, match="read-only"):
            graph.indices[0] = 1

        processes.kill("b", rt.client)
        _check(graph, 5, _search_after_losing(b, graph, 5, rt))
        assert _holders(rt, graph) == {a}

        c = processes.add_worker("c", rt.client)
        processes.kill("a", rt.client)
        _check(graph, 5, _search_after_losing(a, graph, 5, rt))
        assert _holders(rt, graph) == {c}


def _search_after_losing(worker: str, graph, source, rt):
    """A search of ``graph`` once ``worker`` has gone: the client may hear of the loss
    only from this search (then it raises WorkerLostError naming the worker, and the
    next search is the one that places the graph again)."""
    try:
        return tb.bfs(graph, source, tasks=4, runtime=rt)
    except WorkerLostError as exc:
        assert exc.workers == [worker] and worker in str(exc)
        return tb.bfs(graph, source, tasks=4, runtime=rt)


@pytest.mark.parametrize("direction", ["top-down", "bottom-up", "auto"])
def test_search_survives_a_worker_killed_at_any_level(kill_matrix, direction):
    """SIGKILL of a worker holding slices when the client hears of level 1, of level 2,
    of the last level (the result is being assembled), and right after a search: every
    search returns the scipy-checked result, from a second attempt on the workers left
    when it lost one, resumed from the level it had heard of (its trace says which
    attempt ran each level), and so does the next search of the same graph.
    A new worker joins after each kill (two workers to start with: new ones, or those the
    previous direction left)."""
    processes = kill_matrix
    with tb.Runtime(processes.address) as rt:
        for name in ("a", "b")[len(processes.workers(rt.client)):]:
            processes.add_worker(f"{direction}-{name}", rt.client)
        names = {address: name for name, address in processes.workers(rt.client).items()}
        assert len(names) == 2, names
        graph = tb.kronecker(11, seed=7)
        source = int(tb.search_keys(graph, 1, seed=3)[0])
        _check(graph, source, tb.bfs(graph, source, tasks=4, runtime=rt, direction=direction))
        for i, at in enumerate([1, 2, "last", "after"]):
            victim = sorted(_holders(rt, graph))[-1]
            killed = []

            def kill(summary, at=at, victim=victim, killed=killed):
                last = summary.frontier_size == 0
                if not killed and (summary.level == at or (at == "last" and last)):
                    killed.append(victim)
                    processes.kill(names[victim], rt.client)

            result = tb.bfs(graph, source, tasks=4, runtime=rt, direction=direction,
                            dispatch="tasks", progress=kill)
            _check(graph, source, result)
            if at == "after":
                processes.kill(names[victim], rt.client)
                assert result.attempts == 1 and result.resumed_from == []
            else:
                with warnings.catch_warnings():  # the victim's steps may have lost their records
                    warnings.simplefilter("ignore", RuntimeWarning)
                    trace, levels = result.trace, result.levels
                k = len(levels) if at == "last" else at
                assert killed == [victim]
                assert result.attempts == 2 and result.lost_workers == [victim]
                assert result.resumed_from == [k]
                assert (trace["attempt"] == np.where(trace["level"] < k, 1, 2)).all()
                assert (trace["resumed_from"] == np.where(trace["level"] < k, 0, k)).all()
                assert trace.loc[trace["worker"].isna(), "level"].lt(k).all()
                assert len(trace) == levels["tasks"].sum() > 0
            _check(graph, 3, tb.bfs(graph, 3, tasks=4, runtime=rt, direction=direction))
            names[processes.add_worker(f"{direction}-c{i}", rt.client)] = f"{direction}-c{i}"


def test_search_without_retries_raises_worker_lost(processes, setting):
    """``search.retries-on-worker-loss = 0``: SIGKILL of a worker holding slices when the
    client hears of level 3 gives one WorkerLostError naming it and the level, at once;
    then the same graph is searched correctly on the worker left."""
    setting("search.retries-on-worker-loss", 0)
    with tb.Runtime(processes.address) as rt:
        names = {processes.add_worker(name, rt.client): name for name in ("a", "b")}
        graph = _path_graph(40)  # 40 levels: the kill at level 3 is long before the end
        _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt))
        victim = sorted(_holders(rt, graph))[-1]
        killed = []

        def kill(summary):
            if summary.level == 3 and not killed:
                killed.append(time.perf_counter())
                processes.signal(names[victim], signal.SIGKILL)

        with pytest.raises(WorkerLostError) as lost:
            tb.bfs(graph, 0, tasks=4, runtime=rt, dispatch="tasks", progress=kill)
        assert time.perf_counter() - killed[0] < 10
        assert lost.value.workers == [victim] and victim in str(lost.value)
        assert lost.value.level >= 3 and f"at level {lost.value.level}" in str(lost.value)
        _check(graph, 7, tb.bfs(graph, 7, tasks=4, runtime=rt))


def test_retries_setting_is_checked(runtime, setting):
    setting("search.retries-on-worker-loss", -1)
    with pytest.raises(InvalidParameterError, match="retries-on-worker-loss"):
        tb.bfs(_path_graph(4), 0, runtime=runtime)


def test_search_fails_when_no_worker_is_left(processes, setting):
    """The only worker killed mid-search: nothing to run again on, one WorkerLostError
    (after ``runtime.connect-timeout`` seconds of waiting for a worker: 2 s here, set once
    the client has connected, instead of the default 10 s)."""
    with tb.Runtime(processes.address) as rt:
        processes.add_worker("a", rt.client)
        graph = tb.kronecker(9, seed=5)
        _check(graph, 1, tb.bfs(graph, 1, tasks=2, runtime=rt))
        setting("runtime.connect-timeout", 2)

        def kill(summary):
            if summary.level == 1 and processes.procs["a"].poll() is None:
                processes.kill("a", rt.client)

        with pytest.raises(WorkerLostError, match="worker .* left the cluster"):
            tb.bfs(graph, 1, tasks=2, runtime=rt, dispatch="tasks", progress=kill)


def test_trace_says_which_steps_lost_their_record(runtime, monkeypatch):
    """A step whose record went with its worker keeps its row (no worker, no times) and
    the reader is warned, instead of a shorter trace."""
    graph = tb.kronecker(9, seed=2)
    full = tb.bfs(graph, 1, tasks=3, runtime=runtime, dispatch="tasks").trace
    finished_later = Program.finished_later

    def without_task_1(self):
        pending = finished_later(self)
        records, placements = pending.result(60)
        answer = concurrent.futures.Future()
        answer.set_result(([r for r in records if r.get("task") != 1], placements))
        return answer

    monkeypatch.setattr(Program, "finished_later", without_task_1)
    result = tb.bfs(graph, 1, tasks=3, runtime=runtime, dispatch="tasks")
    with pytest.warns(RuntimeWarning, match=r"no record of \d+ of \d+ steps"):
        trace = result.trace
    assert len(trace) == len(full)
    lost = trace[trace["task"] == 1]
    assert len(lost) and lost["worker"].isna().all() and lost["start"].isna().all()
    assert trace[trace["task"] != 1]["worker"].notna().all()


def test_embedded_runtime_restarts_a_stopped_worker():
    with tb.Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        graph = tb.kronecker(9, seed=4)
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))
        cluster = rt._owned_cluster
        worker = next(iter(cluster.workers.values()))
        cluster.sync(worker.close)
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))
        assert len(workers_of(rt.client)) == 1
        assert not rt.heal()  # nothing left to restart


def test_search_beyond_the_workers_memory_is_refused(processes):
    """A worker whose memory limit its process already uses: a search is refused before
    it starts, saying how much it needs and how much is free; a worker with room runs it."""
    with tb.Runtime(processes.address) as rt:
        processes.add_worker("small", rt.client, "--memory-limit", "1MB")
        graph = tb.kronecker(12, seed=2)
        with pytest.raises(tb.InsufficientMemoryError,
                           match=r"needs [\d,]+ MiB on the workers \(graph slices [\d,]+ MiB, "
                                 r"search state [\d,]+ MiB\) but they have 0 MiB free") as err:
            tb.bfs(graph, 1, tasks=2, runtime=rt)
        expected = graph.indptr.nbytes + graph.indices.nbytes + 17 * graph.num_vertices
        assert err.value.needed == expected and err.value.available == 0
        processes.kill("small", rt.client)
        processes.add_worker("big", rt.client, "--memory-limit", "4GB")
        _check(graph, 1, tb.bfs(graph, 1, tasks=2, runtime=rt))


# ---------------------------------------------------------------------------- never hang
def test_frozen_worker_times_out(processes):
    """A SIGSTOPped worker holding slices: SearchTimeoutError after ``timeout`` seconds,
    naming the level; the cluster works again once the worker continues."""
    with tb.Runtime(processes.address) as rt:
        processes.add_worker("a", rt.client)
        processes.add_worker("b", rt.client)
        graph = tb.kronecker(10, seed=6)
        _check(graph, 4, tb.bfs(graph, 4, tasks=4, runtime=rt))
        processes.signal("b", signal.SIGSTOP)
        try:
            start = time.perf_counter()
            with pytest.raises(SearchTimeoutError, match=r"timeout of 3 s: it was at level \d+ "):
                tb.bfs(graph, 4, tasks=4, runtime=rt, timeout=3)
            assert 3 <= time.perf_counter() - start < 3 + 5
        finally:
            processes.signal("b", signal.SIGCONT)
        _check(graph, 4, tb.bfs(graph, 4, tasks=4, runtime=rt, timeout=60))


def test_the_clusters_own_timeout_is_a_search_timeout(runtime, monkeypatch):
    """distributed's TimeoutError in a call without ``timeout`` (e.g. a scatter that found
    no running worker) is a SearchTimeoutError saying so, not a TypeError."""
    from taskbfs.search import core

    def no_workers(*args, **kwargs):
        raise TimeoutError("No valid workers found")

    monkeypatch.setattr(core, "place_graph", no_workers)
    with pytest.raises(SearchTimeoutError, match=r"did not answer in time \(No valid workers "
                                                 r"found\): it was before its first level"):
        tb.bfs(tb.kronecker(6, seed=1), 0, runtime=runtime)


@pytest.mark.parametrize("timeout", [0, -1, "10", True, float("nan")])
def test_timeout_must_be_positive_seconds(runtime, timeout):
    with pytest.raises(InvalidParameterError, match="timeout"):
        tb.bfs(_path_graph(4), 0, runtime=runtime, timeout=timeout)


def test_default_timeout_is_the_setting(runtime, setting):
    setting("search.timeout", 1e-9)
    with pytest.raises(SearchTimeoutError, match="timeout of 1e-09 s"):
        tb.bfs(tb.kronecker(12, seed=1), 0, runtime=runtime)


# ---------------------------------------------------------------------------- bounded use
@pytest.mark.parametrize("tasks", [16385, 10**7])
def test_too_many_tasks_is_refused(runtime, tasks):
    with pytest.raises(InvalidParameterError, match=f"tasks = {tasks} is more than"):
        tb.bfs(_path_graph(4), 0, tasks=tasks, runtime=runtime)


def test_the_most_tasks_is_a_setting(runtime, setting):
    setting("max-tasks", 3)
    graph = tb.kronecker(8, seed=1)
    _check(graph, 1, tb.bfs(graph, 1, tasks=3, runtime=runtime))
    with pytest.raises(InvalidParameterError, match="at most taskbfs.max-tasks = 3"):
        tb.bfs(graph, 1, tasks=4, runtime=runtime)


def test_plugin_keeps_a_bounded_number_of_uncollected_decisions():
    """Programs whose trace is never collected keep at most ``max_decisions`` decisions
    in all (the oldest programs dropped first); a collected one keeps none."""
    plugin = PlacementPlugin(max_decisions=1000)
    for p in range(50):
        for k in range(300):
            plugin._record(f"p{p}", f"t-{p}-{k}", {"task": k, "size": 1}, "smp", 0.0, Policy("cpu"))
    kept = {p: len(log) for p, log in plugin.decisions.items()}
    assert sum(kept.values()) <= 1000 and "p49" in kept and "p0" not in kept
    assert len(plugin._release("p49")) == 300 and "p49" not in plugin.decisions


def test_searches_leave_no_topics_handlers_spans_or_decisions(runtime):
    """Each search's message topic (scheduler) and handler (client) go with it; the
    searches share one span, which keeps only the task groups the scheduler still has,
    the workers' metrics are not keyed per search, and the scheduler plugin keeps no
    placement decision of a search once its trace was collected."""
    graph = tb.kronecker(8, seed=1)

    def topics(dask_scheduler=None):
        return sorted(name for name in dask_scheduler._broker._topics
                      if name.startswith("taskbfs-messages-"))

    def spans(dask_scheduler=None):
        ext = dask_scheduler.extensions["spans"]
        return len(ext.spans), len(ext.spans["taskbfs"].groups)

    def metric_keys(dask_worker=None):
        return len(dask_worker.digests_total)

    def decisions(dask_scheduler=None):
        plugin = dask_scheduler.plugins[PLUGIN_NAME]
        return set(plugin.decisions), sum(len(log) for log in plugin.decisions.values())

    tb.bfs(graph, 1, runtime=runtime)
    for dispatch in ("auto", "tasks") * 2:
        tb.bfs(graph, 1, runtime=runtime, dispatch=dispatch)
    keys, (num_spans, _) = runtime.client.run(metric_keys), runtime.client.run_on_scheduler(spans)
    programs, kept = runtime.client.run_on_scheduler(decisions)
    for dispatch in ("auto", "tasks") * 8:
        result = tb.bfs(graph, 1, runtime=runtime, dispatch=dispatch)
    assert result.placements  # the last search's trace (and decisions) came back
    now_programs, now_kept = runtime.client.run_on_scheduler(decisions)
    assert now_programs <= programs and now_kept <= kept  # was +16 programs, +160 decisions
    assert len(runtime.client.run_on_scheduler(topics)) <= 1  # the last one, until the next
    assert not [t for t in runtime.client._event_handlers if t.startswith("taskbfs-messages-")]
    now_spans, groups = runtime.client.run_on_scheduler(spans)
    assert now_spans == num_spans and groups <= 12  # was 16 spans more, and all their groups
    after = runtime.client.run(metric_keys)
    assert all(after[w] - keys[w] < 16 for w in keys)  # was 4 per search


FIRST_CALLS = textwrap.dedent("""
    import threading
    import taskbfs as tb
    import taskbfs.runtime.cluster as cluster

    started = []
    start = cluster.start_embedded_cluster
    cluster.start_embedded_cluster = lambda *a: started.append(1) or start(*a)
    graph = tb.kronecker(8, seed=1)
    results = []
    threads = [threading.Thread(target=lambda: results.append(tb.bfs(graph, 1, tasks=2)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(started), len({id(r) for r in results}),
          len({tuple(r.distances) for r in results}))
""")


def test_concurrent_first_calls_start_one_runtime():
    out = subprocess.run([sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["1", "4", "1"]


# ---------------------------------------------------------------------------- network
def test_the_embedded_http_host_is_a_setting(setting):
    """``runtime.host`` moves the workers' (and a dashboard-less scheduler's) HTTP servers
    (to another loopback address here: a test opens nothing to the network)."""
    import psutil

    setting("runtime.host", "127.0.0.2")
    with tb.Runtime(threads=1, gpus=0, dashboard_address=None) as rt:
        tb.bfs(tb.kronecker(6, seed=1), 1, runtime=rt)
        ours = {c.laddr.port for c in psutil.Process().net_connections("inet")
                if c.status == psutil.CONN_LISTEN and c.laddr.ip == "127.0.0.2"}
        assert len(ours) == 2  # the scheduler's and the worker's


LISTENING = textwrap.dedent("""
    import urllib.request

    import psutil
    import taskbfs as tb

    for kwargs in ({}, {"dashboard_address": None}, {"dashboard_address": ":0"}):
        with tb.Runtime(**kwargs) as rt:
            tb.bfs(tb.kronecker(6, seed=1), 1, runtime=rt)
            print(sorted({c.laddr.ip for c in psutil.Process().net_connections("inet")
                          if c.status == psutil.CONN_LISTEN}))
            link = rt.dashboard_link
            print(link and urllib.request.urlopen(link, timeout=30).status)
""")


def test_embedded_runtime_listens_on_localhost_only():
    """Scheduler (dashboard or not), worker HTTP servers: all on 127.0.0.1 unless asked
    otherwise; the dashboard link names where it is served."""
    out = subprocess.run([sys.executable, "-c", LISTENING], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=WORKER_PYTHONPATH))
    assert out.returncode == 0, out.stderr[-3000:]
    # ":0" asks for the dashboard on every interface: opened deliberately, and only it
    assert out.stdout.split("\n")[:6] == ["['127.0.0.1']", "200", "['127.0.0.1']", "None",
                                          "['0.0.0.0', '127.0.0.1']", "200"]
