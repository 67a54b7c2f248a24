"""Trust under faults (issue 44): every wait of a call is bounded, and each fault ends in
one clear error (or a retry that succeeds) rather than a hang or a raw traceback.

Faults are real: ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1
(tests/test_faults.py's :class:`ProcessCluster`) get SIGKILL, SIGSTOP and SIGCONT; the
embedded runtime's in-process workers are closed as a search starts. Results are compared
with scipy.
"""

from __future__ import annotations

import signal
import threading
import time

import distributed
import numpy as np
import pytest
from reference import scipy_distances
from test_faults import ProcessCluster

import taskbfs as tb
from taskbfs.errors import SearchTimeoutError, TaskBFSError, WorkerLostError

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    """One ``dask scheduler`` process for the module; each test starts the ``dask worker``
    processes it needs (named after it) and kills them or leaves them to the next."""
    cluster = ProcessCluster(tmp_path_factory.mktemp("trust"))
    try:
        yield cluster
    finally:
        cluster.close()


def _within(seconds: float, call):
    """``call()``'s value, or the exception it raised, run in another thread: the test
    fails (instead of hanging) when it has not returned after ``seconds``."""
    out = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _check(graph, source, result) -> None:
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, source))
    tb.validate(graph, source, result.parents, result.distances)


# ---------------------------------------------------------------------- embedded runtime
def test_a_worker_closing_as_a_search_starts_is_retried():
    """The embedded cluster's worker closed from another thread as each of 5 searches
    starts: each returns the scipy-checked result (a retry on the restarted worker) or
    raises WorkerLostError, never a TypeError from a resident call the closing worker
    answered with nothing (15 of 20 tries did before)."""
    with tb.Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        graph = tb.kronecker(9, seed=4)
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))
        for _ in range(5):
            cluster = rt._owned_cluster
            worker = next(iter(cluster.workers.values()))
            closing = threading.Thread(target=cluster.sync, args=(worker.close,))
            closing.start()
            try:
                result = tb.bfs(graph, 2, tasks=2, runtime=rt)
            except WorkerLostError:
                pass
            else:
                _check(graph, 2, result)
            finally:
                closing.join()
        _check(graph, 2, tb.bfs(graph, 2, tasks=2, runtime=rt))


# ---------------------------------------------------------------------- dask CLI clusters
def test_a_result_lost_with_its_owner_is_an_error(processes):
    """A search of a graph built on two workers leaves its result there; the owner of
    some of it SIGKILLed after the search: reading ``distances`` raises WorkerLostError
    naming it within seconds (the owner tasks that wrote it are pinned to the dead
    worker's address, and Dask waited for it in ``no-worker`` forever), and the graph is
    searched again on the worker left (its slices recomputed by Dask)."""
    with runtime_without_warm_up(processes.address) as rt:
        names = {processes.add_worker(name, rt.client): name for name in ("kept-a", "kept-b")}
        graph = tb.kronecker(9, seed=5, runtime=rt)
        result = tb.bfs(graph, 1, runtime=rt)
        assert result.on_workers
        with rt.client.as_current():
            distributed.wait(result._kept.pieces, timeout=30)
        holders = {w for ws in rt.client.who_has(result._kept.pieces).values() for w in ws}
        assert holders == set(names)  # one owner each
        victim = sorted(holders)[-1]
        processes.kill(names[victim], rt.client)
        start = time.perf_counter()
        with pytest.raises(WorkerLostError, match="result .* was kept on worker") as lost:
            _within(30, lambda: result.distances)
        assert time.perf_counter() - start < 10
        assert lost.value.workers == [victim]
        again = tb.bfs(graph, 1, runtime=rt)
        np.testing.assert_array_equal(again.distances,
                                      scipy_distances(tb.kronecker(9, seed=5), 1))
        processes.kill(names[sorted(holders)[0]], rt.client)


def _path_graph(n: int) -> tb.Graph:
    return tb.Graph.from_edges(np.arange(n - 1), np.arange(1, n))


def test_a_stopped_scheduler_is_a_search_timeout(processes, setting):
    """The scheduler SIGSTOPped when the client hears of level 3 of a 200-level search
    (levels dispatched as tasks, or run by two owners trading pieces): SearchTimeoutError
    after ``timeout`` (3 s) naming the level, not a wait in ``Client.nthreads()`` for as
    long as the scheduler stays stopped (420 s and more before). Connecting to the
    stopped scheduler fails after ``runtime.connect-timeout`` (distributed's Client
    waits for its handshake forever). Once it continues, the cluster searches again."""
    with runtime_without_warm_up(processes.address) as rt:
        for name in ("stop-a", "stop-b"):
            processes.add_worker(name, rt.client)
        graph = _path_graph(200)
        _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt))
        for dispatch in ("tasks", "auto"):
            stopped = []

            def stop(summary):
                if summary.level == 3 and not stopped:
                    stopped.append(time.perf_counter())
                    processes.signal("scheduler", signal.SIGSTOP)

            try:
                with pytest.raises(SearchTimeoutError, match=r"timeout of 3 s: it was at level"):
                    _within(30, lambda: tb.bfs(graph, 0, tasks=4, runtime=rt, timeout=3,
                                               dispatch=dispatch, progress=stop))
                assert stopped and time.perf_counter() - stopped[0] < 3 + 2
                if dispatch == "auto":
                    setting("runtime.connect-timeout", 2)
                    start = time.perf_counter()
                    with pytest.raises(TaskBFSError, match="did not answer within 2 s"):
                        _within(30, lambda: tb.bfs(graph, 0, runtime=processes.address,
                                                   timeout=3))
                    assert time.perf_counter() - start < 2 + 2
            finally:
                processes.signal("scheduler", signal.SIGCONT)
            _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt, timeout=60))
        for name in ("stop-a", "stop-b"):
            processes.kill(name, rt.client)
