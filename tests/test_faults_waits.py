"""A worker lost while the dispatched loop waits: the waits notice it at once.

The owner loop of a ``dispatch="tasks"`` search waits for the owners' reports and for
pinned tasks (``_Search.listen`` / ``settle``); a task pinned to a worker that died would
wait forever, so the waits check that every placed slice is intact and every owner is
there. Here a worker process holding slices is SIGKILLed from another thread while the
client waits (LocalCluster with three worker processes, 127.0.0.1; their nannies start
replacements).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster
from reference import scipy_distances

import taskbfs as tb
from taskbfs.errors import WorkerLostError
from taskbfs.placed.placement import _placed
from taskbfs.runtime.plugin import workers_of

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

#: a path: one level per vertex, each a round of Dask tasks; the kills come at levels 4 and
#: 5, long before its end
LEVELS = 30


@pytest.fixture(scope="module")
def spread():
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        yield rt


def _path() -> tb.Graph:
    return tb.Graph.from_edges(np.arange(LEVELS - 1), np.arange(1, LEVELS))


def _all_three_up(rt) -> None:
    """Wait until the nannies have brought back the workers earlier tests killed: a worker
    still starting (or leaving) during a search would be one more change than the test's own."""
    rt.client.wait_for_workers(3, timeout=60)


def _killer(rt, graph, at_level: int):
    """A ``progress`` callback that, when the client hears of ``at_level``, SIGKILLs a
    worker holding slices of ``graph`` from another thread a moment later (the client is
    then waiting for the next level); ``killed`` gets (worker, time of the kill)."""
    _all_three_up(rt)
    placed = [p for (token, *_), p in _placed[rt].items() if token == graph.token]
    holders = sorted({w for ws in rt.client.who_has(placed[0].slices).values() for w in ws})
    victim, pid = holders[-1], rt.client.run(os.getpid)[holders[-1]]
    killed = []

    def kill():
        time.sleep(0.05)
        killed.append((victim, time.perf_counter()))
        os.kill(pid, signal.SIGKILL)

    def progress(summary):
        if summary.level == at_level and not killed:
            threading.Thread(target=kill, daemon=True).start()

    return progress, killed


def test_lost_worker_fails_the_wait_at_once(spread, setting):
    """Without retries: one WorkerLostError naming the worker, seconds after the kill
    (not a timeout: there is none), and the next search of the graph is right."""
    setting("search.retries-on-worker-loss", 0)
    graph = _path()
    tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks")
    progress, killed = _killer(spread, graph, at_level=5)
    with pytest.raises(WorkerLostError) as lost:
        tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks", progress=progress)
    (victim, at), = killed
    assert time.perf_counter() - at < 10
    assert lost.value.workers == [victim] and lost.value.level >= 5
    result = tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks")
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))


def test_lost_worker_is_recovered_from(spread):
    """With the default retry: the search runs again on the workers left and returns the
    scipy-checked result, saying which worker it lost."""
    graph = _path()
    tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks")
    progress, killed = _killer(spread, graph, at_level=5)
    result = tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks", progress=progress)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))
    tb.validate(graph, 0, result.parents, result.distances)
    assert result.attempts == 2 and result.lost_workers == [killed[0][0]]


def test_lost_owner_of_a_graph_built_on_the_workers_fails_the_wait(spread, setting):
    """A graph built on the workers: its lost slices can be recomputed, so nothing errs,
    but the owner tasks pinned to the dead worker would wait forever (until ``timeout``:
    58.7 s measured without the check). The wait checks the owners and raises
    WorkerLostError within seconds (2.3 s measured)."""
    setting("search.retries-on-worker-loss", 0)
    _all_three_up(spread)
    graph = tb.kronecker(11, runtime=spread)
    tb.bfs(graph, 1, tasks=6, runtime=spread, dispatch="tasks", direction="top-down")
    holders = sorted({w for ws in spread.client.who_has(graph.slices).values() for w in ws})
    victim, pid = holders[-1], spread.client.run(os.getpid)[holders[-1]]
    killed = []

    def kill():
        time.sleep(0.05)
        killed.append(time.perf_counter())
        os.kill(pid, signal.SIGKILL)

    def progress(summary):
        if summary.level == 1 and not killed:
            threading.Thread(target=kill, daemon=True).start()

    with pytest.raises(WorkerLostError) as lost:
        tb.bfs(graph, 1, tasks=6, runtime=spread, dispatch="tasks", direction="top-down",
               progress=progress, timeout=60)
    assert time.perf_counter() - killed[0] < 20
    assert lost.value.workers == [victim]


def _back_arcs_path() -> tb.Graph:
    """A directed path 0 -> 1 -> ... with arcs from each vertex back to 0 and to the
    one two before it: one level per vertex, and in-neighbours at every distance."""
    n = LEVELS
    back = [(v, u) for v in range(2, n) for u in (0, v - 2)]
    src = np.r_[np.arange(n - 1), [v for v, _ in back]]
    dst = np.r_[np.arange(1, n), [u for _, u in back]]
    return tb.Graph.from_edges(src, dst, num_vertices=n, directed=True)


def test_directed_search_resumes_from_the_level_it_lost(spread):
    """A worker holding slices of a directed graph searched top-down SIGKILLed when the
    client hears of level 4 (the client waits until the scheduler has removed it): the
    search resumes from level 4 (its owners rebuilt from the distances the client kept,
    the parents found again over in-arcs: the transposed slices, which a top-down search
    places only for that) and returns the scipy-checked result; the next search is right
    too. (Bottom-up and auto resumes: the kill matrix of tests/test_faults.py; the
    rebuild on directed shapes: tests/test_faults_resume.py.)"""
    direction = "top-down"
    graph = _back_arcs_path()
    _all_three_up(spread)
    tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks", direction=direction)
    placed = [p for (token, *_), p in _placed[spread].items() if token == graph.token]
    holders = sorted({w for ws in spread.client.who_has(placed[0].slices).values() for w in ws})
    victim, pid = holders[-1], spread.client.run(os.getpid)[holders[-1]]

    def progress(summary):
        if summary.level == 4 and victim in spread.client.nthreads():
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while victim in workers_of(spread.client):
                assert time.monotonic() < deadline
                time.sleep(0.05)

    result = tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks", direction=direction,
                    progress=progress)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))
    tb.validate(graph, 0, result.parents, result.distances)
    assert result.attempts == 2 and result.lost_workers == [victim]
    assert result.resumed_from == [4]
    again = tb.bfs(graph, 0, tasks=6, runtime=spread, dispatch="tasks", direction=direction)
    np.testing.assert_array_equal(again.distances, result.distances)


@pytest.mark.filterwarnings("ignore:the trace has no record:RuntimeWarning")  # the lost worker's
def test_owner_levels_resume_after_a_lost_owner(spread):
    """``dispatch="auto"`` (each owner runs the levels in one task and trades pieces with
    the others, taskbfs.search.owner_levels): a worker holding slices of a 300-level path
    SIGKILLed when the client hears of level 20. The owners left stop waiting for it (the
    client aborts their exchange: none is still running afterwards), the search resumes
    from a level the client kept, and returns the scipy-checked result."""
    levels = 300
    graph = tb.Graph.from_edges(np.arange(levels - 1), np.arange(1, levels))
    _all_three_up(spread)
    tb.bfs(graph, 0, tasks=6, runtime=spread)
    placed = [p for (token, *_), p in _placed[spread].items() if token == graph.token]
    holders = sorted({w for ws in spread.client.who_has(placed[0].slices).values() for w in ws})
    assert len(holders) > 1  # several owners: owner levels, not one included task
    victim, pid = holders[-1], spread.client.run(os.getpid)[holders[-1]]

    def progress(summary):
        if summary.level == 20 and victim in spread.client.nthreads():
            os.kill(pid, signal.SIGKILL)

    result = tb.bfs(graph, 0, tasks=6, runtime=spread, progress=progress, timeout=120)
    np.testing.assert_array_equal(result.distances, scipy_distances(graph, 0))
    tb.validate(graph, 0, result.parents, result.distances)
    assert result.attempts == 2 and result.lost_workers == [victim]
    assert result.resumed_from and result.resumed_from[0] >= 20
    resumed = result.trace[result.trace["attempt"] == 2]  # (the lost worker's records are gone)
    assert len(resumed) and resumed["included"].all()  # it ran owner levels too

    def running(dask_worker):
        return len(dask_worker.state.long_running)

    deadline = time.monotonic() + 10
    while any(spread.client.run(running).values()):
        assert time.monotonic() < deadline, "an owner task still waits for the lost one"
        time.sleep(0.1)
