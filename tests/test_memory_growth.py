"""Long use: what a search leaves behind on the client, scheduler and workers is bounded.

Counted, not measured as resident memory (which distributed's own bounded histories and
the allocator make noisy): ``benchmarks/soak.py`` measures the RSS slope over thousands
of searches; these tests fail on the per-search growth it found. What still grows per
search on an external cluster is Dask's, and bounded (``soak.py --external``): dask's
``key_split`` cache (100,000 task keys, ~17 MiB), distributed's low-level logs (1,000
entries each) and its system monitor (by time, not by searches).
"""

from __future__ import annotations

import pytest
from reference import scipy_distances

import taskbfs as tb
from taskbfs.placed.placement import MAX_PLACED_GRAPHS, _placed
from taskbfs.runtime.plugin import MAX_POLICIES, PLUGIN_NAME, SPAN_ID
from taskbfs.runtime.worker import TOPIC_PREFIX

from test_faults import ProcessCluster  # isort: skip  (tests/test_faults.py)

WORKERS_TIMEOUT = 180


def _log_records(dask_worker=None, dask_scheduler=None) -> int:
    """Log records the server keeps in its bounded in-memory log (the dashboard's logs)."""
    return len((dask_worker or dask_scheduler)._deque_handler.deque)


def _plugin_tables(dask_scheduler=None) -> dict:
    plugin = dask_scheduler.plugins[PLUGIN_NAME]
    return {"max_programs": plugin.max_programs, "decisions": len(plugin.decisions),
            "sizes": len(plugin._sizes), "deferred": len(plugin._deferred),
            "policies": len(plugin.policies)}


def _uncollected_records(dask_worker=None) -> int:
    from taskbfs.runtime.worker import _records

    return len(_records.get(dask_worker) or {})


def test_searches_leave_no_log_records_and_bounded_tables(runtime):
    """30 searches (each way of running them, their traces read) add no log record on
    the workers or the scheduler (each search added one per worker and one on the
    scheduler: ``client.run`` logs every call, kept up to 10,000), leave no trace records
    on the workers, and the plugin's and the runtime's tables stay within their bounds."""
    graph = tb.kronecker(8, seed=1)
    for dispatch in ("auto", "tasks"):
        assert len(tb.bfs(graph, 1, runtime=runtime, dispatch=dispatch).trace) > 0
    workers = runtime.client.run(_log_records)
    scheduler = runtime.client.run_on_scheduler(_log_records)
    for i in range(30):
        result = tb.bfs(graph, 1 + i % 5, runtime=runtime, dispatch=("auto", "tasks")[i % 2])
        assert len(result.trace) > 0
    after = runtime.client.run(_log_records)
    assert all(after[w] - workers[w] < 5 for w in workers), (workers, after)
    assert runtime.client.run_on_scheduler(_log_records) - scheduler < 5
    assert sum(runtime.client.run(_uncollected_records).values()) <= 1  # the running one
    tables = runtime.client.run_on_scheduler(_plugin_tables)
    bound = tables.pop("max_programs")
    assert tables["policies"] <= MAX_POLICIES
    assert all(count <= bound for count in tables.values()), tables
    assert len(_placed.get(runtime, {})) <= MAX_PLACED_GRAPHS


def _scheduler_entries(dask_scheduler=None) -> dict:
    """Entries the scheduler keeps that a search could add: taskbfs's message topics and
    their events, the plugin's tables, the taskbfs span's task groups, the tasks and task
    groups the scheduler still knows, its clients, its log records."""
    topics = {name: topic for name, topic in dask_scheduler._broker._topics.items()
              if name.startswith(TOPIC_PREFIX)}
    span = dask_scheduler.extensions["spans"].spans.get(SPAN_ID)
    return {"taskbfs topics": len(topics),
            "taskbfs topic events": sum(len(t.events) for t in topics.values()),
            **{f"plugin {k}": v for k, v in _plugin_tables(dask_scheduler).items()
               if k != "max_programs"},
            "span groups": len(span.groups) if span is not None else 0,
            "tasks": len(dask_scheduler.tasks), "task groups": len(dask_scheduler.task_groups),
            "clients": len(dask_scheduler.clients),
            "log records": _log_records(dask_scheduler=dask_scheduler)}


def _worker_entries(dask_worker=None) -> dict:
    """Entries a worker keeps that a search could add: uncollected trace records, the
    runtime's per-worker cache, its data and tasks, its log records."""
    from taskbfs.runtime.worker import _caches

    return {"uncollected records": _uncollected_records(dask_worker),
            "cached": len(_caches.get(dask_worker) or {}),
            "data": len(dask_worker.data), "tasks": len(dask_worker.state.tasks),
            "log records": _log_records(dask_worker=dask_worker)}


def _entries(rt) -> dict:
    out = {f"scheduler {k}": v for k, v in rt.client.run_on_scheduler(_scheduler_entries).items()}
    for address, entries in rt.client.run(_worker_entries).items():
        out.update({f"{address} {k}": v for k, v in entries.items()})
    out.update({"client futures": len(rt.client.futures),
                "client event handlers": len(rt.client._event_handlers),
                "runtime programs": len(rt._programs),
                "placed graphs": len(_placed.get(rt, {}))})
    return out


@pytest.fixture(scope="module")
def process_cluster(tmp_path_factory):
    """A ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (started
    together: one at a time takes over a minute on a loaded 2-core machine)."""
    cluster = ProcessCluster(tmp_path_factory.mktemp("growth"))
    try:
        for name in ("a", "b"):
            cluster._spawn(name, ["worker", cluster.address, "--name", name, "--host",
                                  "127.0.0.1", "--no-dashboard", "--no-nanny", "--nthreads",
                                  "1", "--resources", "CPU=1"])
        yield cluster
    finally:
        cluster.close()


def test_searches_on_an_external_cluster_leave_nothing_per_search(process_cluster):
    """On a scheduler and workers of their own processes, 4 searches then 12 more (both
    ways of running them, results checked): nothing taskbfs keeps on the scheduler, the
    workers or the client has more entries after the 16th search than after the 4th
    (``client.run`` logs one record per call: the counting itself, at most 2)."""
    with tb.Runtime(process_cluster.address) as rt:
        rt.client.wait_for_workers(2, timeout=WORKERS_TIMEOUT)
        graph = tb.kronecker(8, seed=1)
        expected = {s: scipy_distances(graph, s) for s in range(1, 4)}

        def searches(count: int) -> None:
            for i in range(count):
                source = 1 + i % 3
                result = tb.bfs(graph, source, runtime=rt, dispatch=("auto", "tasks")[i % 2])
                assert (result.distances == expected[source]).all()
                assert len(result.trace) > 0

        searches(4)
        first = _entries(rt)
        searches(12)
        later = _entries(rt)
    grown = {k: (first[k], v) for k, v in later.items()
             if v > first.get(k, 0) + (2 if k.endswith("log records") else 0)}
    assert not grown, grown
    assert first["scheduler taskbfs topics"] <= 1  # the last program's, swept by the next


def test_a_record_that_comes_after_its_programs_trace_was_read_is_dropped():
    """A task that ends after its program's records were collected (the trace read) leaves
    no record behind for no one; other programs' records are kept."""
    from taskbfs.runtime import worker as runtime_worker

    class _Worker:
        address = "tcp://127.0.0.1:1"

    w = _Worker()
    runtime_worker._record(w, "p", "k1", "bfs_step", "smp", 0.0, 1.0, {})
    collected = runtime_worker.collect_records("p", dask_worker=w)["result"].data
    assert [r["key"] for r in collected] == ["k1"]
    runtime_worker._record(w, "p", "k2", "bfs_barrier", "smp", 1.0, 2.0, {})  # late
    runtime_worker._record(w, "q", "k3", "bfs_step", "smp", 0.0, 1.0, {})
    kept = runtime_worker._records[w]
    assert set(kept) == {"q"} and [r["key"] for r in kept["q"]] == ["k3"]
    runtime_worker.forget_worker_state(w)
