"""Long use: what a search leaves behind on the client, scheduler and workers is bounded.

Counted, not measured as resident memory (which distributed's own bounded histories and
the allocator make noisy): ``benchmarks/soak.py`` measures the RSS slope over thousands
of searches; these tests fail on the per-search growth it found.
"""

from __future__ import annotations

import taskbfs as tb
from taskbfs.bfs.placement import MAX_PLACED_GRAPHS, _placed
from taskbfs.runtime.plugin import MAX_POLICIES, PLUGIN_NAME


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
