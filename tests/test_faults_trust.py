"""Trust under faults (issue 44): every wait of a call is bounded, and each fault ends in
one clear error (or a retry that succeeds) rather than a hang or a raw traceback.

Faults are real: ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1
(tests/test_faults.py's :class:`ProcessCluster`) get SIGKILL, SIGSTOP and SIGCONT; the
embedded runtime's in-process workers are closed as a search starts. Results are compared
with scipy.
"""

from __future__ import annotations

import threading
import time

import distributed
import numpy as np
import pytest
from reference import scipy_distances
from test_faults import ProcessCluster

import taskbfs as tb
from taskbfs.errors import WorkerLostError

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
