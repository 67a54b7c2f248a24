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
from taskbfs.errors import (
    DeviceUnavailableError,
    SearchTimeoutError,
    TaskBFSError,
    WorkerLostError,
)
from taskbfs.runtime import ExchangeAborted
from taskbfs.search import faults as faults_module
from taskbfs.search import owner_levels

from programs import runtime_without_warm_up, slow_path_pair  # isort: skip  (tests/programs.py)


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
    waits for its handshake forever); a search that sends a changed setting to the
    workers times out too. Once it continues, the cluster searches again."""
    with runtime_without_warm_up(processes.address) as rt:
        for name in ("stop-a", "stop-b"):
            processes.add_worker(name, rt.client)
        graph = _path_graph(200)
        _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt))
        fresh = tb.Runtime(rt.client)  # searched first while the scheduler is stopped
        for dispatch in ("tasks", "auto"):
            stopped = []

            def stop(summary, stopped=stopped):
                if summary.level == 3 and not stopped:
                    stopped.append(time.perf_counter())
                    processes.signal("scheduler", signal.SIGSTOP)

            try:
                with pytest.raises(SearchTimeoutError, match=r"timeout of 3 s: it was at level"):
                    _within(30, lambda d=dispatch, stop=stop: tb.bfs(
                        graph, 0, tasks=4, runtime=rt, timeout=3, dispatch=d, progress=stop))
                assert stopped and time.perf_counter() - stopped[0] < 3 + 2
                if dispatch == "auto":
                    setting("runtime.connect-timeout", 2)
                    start = time.perf_counter()
                    with pytest.raises(TaskBFSError, match="did not answer within 2 s"):
                        _within(30, lambda: tb.bfs(graph, 0, runtime=processes.address,
                                                   timeout=3))
                    assert time.perf_counter() - start < 2 + 2
                    # a changed setting is sent to the workers within the timeout too
                    setting("search.summary-interval", 0.5)
                    start = time.perf_counter()
                    with pytest.raises(SearchTimeoutError):
                        _within(30, lambda: tb.bfs(graph, 0, tasks=4, runtime=rt, timeout=3))
                    assert time.perf_counter() - start < 3 + 2
                    # a runtime's first search (the live page's hook, once per runtime)
                    start = time.perf_counter()
                    with pytest.raises(SearchTimeoutError):
                        _within(30, lambda: tb.bfs(graph, 0, tasks=4, runtime=fresh, timeout=3))
                    assert time.perf_counter() - start < 2 + 3 + 2
            finally:
                processes.signal("scheduler", signal.SIGCONT)
            _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt, timeout=60))
        fresh.close()
        for name in ("stop-a", "stop-b"):
            processes.kill(name, rt.client)


def test_a_retry_waits_for_the_slices_dask_recomputes(processes):
    """A graph built on two workers from an edge chunk that takes 3 s to make; a worker
    holding slices SIGKILLed when the client hears of level 0 of the graph's first
    search: the second attempt waits
    while Dask recomputes the lost slices (their futures are "lost" meanwhile), and
    returns the scipy-checked result. Before, each attempt failed at its first check
    (~1 s), and the search took three attempts and ~13.5 s or failed."""
    with runtime_without_warm_up(processes.address) as rt:
        names = {processes.add_worker(name, rt.client): name for name in ("slow-a", "slow-b")}
        graph = tb.DistributedGraph.from_chunks(  # the chunk is released once split
            rt, [rt.client.submit(slow_path_pair, 60, 3.0, pure=False)], ranges=4)
        reference = _path_graph(60)
        # the only holder of a slice (a search would copy slices between the workers)
        victim = sorted(ws[0] for ws in rt.client.who_has(graph.slices).values())[-1]
        killed = []

        def kill(summary):
            if not killed:
                killed.append(summary.level)
                processes.kill(names[victim], rt.client)

        result = _within(60, lambda: tb.bfs(graph, 0, tasks=4, runtime=rt, dispatch="tasks",
                                            progress=kill, timeout=45))
        np.testing.assert_array_equal(result.distances, scipy_distances(reference, 0))
        assert killed == [0] and result.attempts == 2 and result.lost_workers == [victim]
        for address, name in names.items():
            if address != victim:
                processes.kill(name, rt.client)


def test_attempts_that_lose_workers_say_so_once(processes, setting):
    """One retry; a worker holding slices SIGKILLed at level 2 of the first attempt and
    another at level 5 of the second: one WorkerLostError that names each attempt's
    level and worker once (it repeated the whole message per attempt before), with both
    workers. Then, with no worker left, a search says the cluster has no workers
    (DeviceUnavailableError), not "needs 0 MiB ... 0 MiB free"."""
    setting("search.retries-on-worker-loss", 1)
    with runtime_without_warm_up(processes.address) as rt:
        names = {processes.add_worker(name, rt.client): name
                 for name in ("twice-a", "twice-b", "twice-c")}
        graph = _path_graph(40)
        _check(graph, 0, tb.bfs(graph, 0, tasks=6, runtime=rt, dispatch="tasks"))
        killed = []

        def kill(summary):
            if summary.level >= (2 if not killed else 5) and len(killed) < 2:
                from taskbfs.placed.placement import _placed

                held = {w for (token, *_), p in _placed[rt].items() if token == graph.token
                        for ws in rt.client.who_has(p.slices).values() for w in ws}
                victim = sorted(held - set(killed))[-1]
                killed.append(victim)
                processes.kill(names[victim], rt.client)

        with pytest.raises(WorkerLostError) as lost:
            tb.bfs(graph, 0, tasks=6, runtime=rt, dispatch="tasks", progress=kill, timeout=60)
        message = str(lost.value)
        assert lost.value.workers == killed and len(killed) == 2
        assert "each of its 2 attempts" in message and "attempt 1 at level 2" in message
        assert "attempt 2 at level 5" in message
        assert all(message.count(w) == 1 for w in killed), message
        assert message.count("left the cluster") == 2, message

        setting("runtime.connect-timeout", 2)
        for address, name in names.items():
            if address not in killed:
                processes.kill(name, rt.client)
        with pytest.raises(DeviceUnavailableError, match="the cluster has no workers"):
            tb.bfs(graph, 0, tasks=6, runtime=rt)


def test_a_frozen_owner_is_a_search_timeout(processes, monkeypatch):
    """Two owners trading pieces (``dispatch="auto"``), no ``timeout``; one SIGSTOPped
    when the client hears of level 3: SearchTimeoutError naming it once the other owner
    has waited the exchange's timeout (the client's ``mailbox.EXCHANGE_TIMEOUT``, sent
    with the owner tasks: 3 s here; 300 s by default) for its message, not the owners'
    ExchangeAborted."""
    monkeypatch.setattr(owner_levels, "EXCHANGE_TIMEOUT", 3)
    with runtime_without_warm_up(processes.address) as rt:
        names = {processes.add_worker(name, rt.client): name for name in ("froze-a", "froze-b")}
        graph = _path_graph(300)
        _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt))
        victim = sorted(names)[-1]
        stopped = []

        def stop(summary):
            if summary.level >= 3 and not stopped:
                stopped.append(time.perf_counter())
                processes.signal(names[victim], signal.SIGSTOP)

        try:
            with pytest.raises(SearchTimeoutError, match="did not answer the other owners") as late:
                _within(60, lambda: tb.bfs(graph, 0, tasks=4, runtime=rt, progress=stop))
            assert victim in str(late.value) and time.perf_counter() - stopped[0] < 3 + 10
        finally:
            processes.signal(names[victim], signal.SIGCONT)
        _check(graph, 0, tb.bfs(graph, 0, tasks=4, runtime=rt, timeout=60))
        for name in names.values():
            processes.kill(name, rt.client)


@pytest.mark.parametrize("timed_out", [True, False], ids=["send-timed-out", "send-failed"])
def test_an_undelivered_message_is_a_search_timeout(processes, monkeypatch, timed_out):
    """A peer that did not take an owner's message (the send timed out or failed, rather
    than its own message being late): SearchTimeoutError naming that peer, whether or not
    the exchange's timeout is known, never a formatting error of its own."""
    monkeypatch.setattr(faults_module, "LOST_WORKER_WAIT", 0.0)
    undelivered = ExchangeAborted("the exchange 'x': a message of round 1 was not delivered "
                                  "to tcp://127.0.0.1:9: TimeoutError")
    undelivered.workers = ("tcp://127.0.0.1:9",)
    undelivered.timeout = 3.0 if timed_out else None
    with runtime_without_warm_up(processes.address) as rt:
        with pytest.raises(SearchTimeoutError, match="tcp://127.0.0.1:9 did not answer"):
            with faults_module.faults(rt, _path_graph(3), time.time(),
                                      faults_module.Deadline(None), faults_module.Heard()):
                raise undelivered
