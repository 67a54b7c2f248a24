"""The runtime's start runs the worker warm-ups (taskbfs.runtime.attach.WORKER_WARM_UP) on every worker,
and on workers that join while it is open;
the BFS's warm-up (taskbfs.search.warmup) runs the search body on tiny graphs."""

from __future__ import annotations

import threading

from distributed import Client, LocalCluster

import taskbfs as tb
from taskbfs.runtime import attach
from taskbfs.search import compiled_levels, warmup

CALLS: list = []
_lock = threading.Lock()


def record(dask_worker) -> str:
    """A warm-up for the test: notes which worker ran it."""
    with _lock:
        CALLS.append(dask_worker.address)
    return dask_worker.address


def test_every_worker_runs_the_warm_ups_when_a_runtime_starts(monkeypatch):
    monkeypatch.setattr(attach, "WORKER_WARM_UP", (f"{__name__}:record", "no.such.module:f"))
    CALLS.clear()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster:
        with tb.Runtime(cluster.scheduler_address) as rt:  # the bad name is logged, not raised
            assert sorted(CALLS) == sorted(rt.client.scheduler_info()["workers"])
            cluster.scale(3)  # a worker that joins later (a lost one's replacement) runs them too
            rt.client.wait_for_workers(3, timeout=30)
            assert sorted(CALLS) == sorted(rt.client.scheduler_info()["workers"])
        cluster.scale(4)  # the runtime took its warm-up away when it closed
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(4, timeout=30)
            assert len(CALLS) == 3


def test_the_bfs_warm_up_runs_the_search_body_and_never_raises(monkeypatch):
    assert warmup.warm_up() >= 0.0  # a plain call, no worker: the CPU searches

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(warmup, "run_search", broken)
    assert warmup.warm_up() >= 0.0  # logged, not raised


def test_the_warm_up_runs_the_big_graph_kernels_on_tiny_graphs():
    """The warm-up's big-graph pass turns the one-launch small levels (on a GPU worker)
    and the compiled loop off, so that its tiny graphs' levels load the kernels a big
    graph's levels run (otherwise a worker compiles them inside the first search that
    crosses those sizes); everything is as it was after it."""
    from taskbfs.kernels.gpu_levels import DeviceLevels

    small_arcs, compiled = DeviceLevels.small_level_arcs, compiled_levels.COMPILED_LEVEL_EDGES
    assert small_arcs > 0 and compiled > 0
    with warmup._compiled_levels(False, gpu=True):
        assert DeviceLevels.small_level_arcs == compiled_levels.COMPILED_LEVEL_EDGES == 0
    with warmup._compiled_levels(False):  # a CPU worker: the compiled loop only
        assert DeviceLevels.small_level_arcs == small_arcs
        assert compiled_levels.COMPILED_LEVEL_EDGES == 0
    assert (DeviceLevels.small_level_arcs, compiled_levels.COMPILED_LEVEL_EDGES) == (small_arcs, compiled)


def _frozen_objects(dask_worker) -> int:
    import gc

    return gc.get_freeze_count()


def test_warmed_workers_keep_their_objects_out_of_full_collections():
    """After the warm-up, each worker process's objects are frozen (gc.freeze): a full
    collection no longer walks the loaded modules and compiled code during a search."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster:
        with Client(cluster, set_as_default=False) as client:
            # not always 0 in a fresh worker process (the GPU machine's image freezes some)
            before = client.run(_frozen_objects)
            with tb.Runtime(client):
                frozen = client.run(_frozen_objects)
    assert len(frozen) == 2, frozen
    assert all(frozen[w] - before[w] > 10_000 for w in frozen), (before, frozen)
