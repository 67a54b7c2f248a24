"""Graph slices stay with the workers they were placed on (issue 18, the soak of session 17).

A dispatched search's step reads its slice where the slice was placed. When that worker is
busy and another is idle, Dask's work stealing takes a queued step for the idle one when
the step's measured duration makes it worth it (on a loaded machine); the thief then
fetches the slice, the Active Memory Manager drops one of the two copies, possibly the
owner's, and over many searches every slice can end on one worker (each later search then
runs as one task there). Here: two CPU worker processes on 127.0.0.1; before each search
the owner of the source's slice is kept busy by a task holding its ``CPU`` resource, and a
scheduler plugin of the test makes the scheduler think a step takes a second (the loaded
machine, where the steal is worth it). Every step must still run on its slice's worker,
every slice stay there alone, and the result equal scipy's.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
from reference import scipy_distances
from shapes import grid

import taskbfs as tb
from taskbfs.bfs.placement import place_graph
from taskbfs.bfs.steps import STEP
from taskbfs.runtime import SMP, Policy, Program

from programs import PROBE, runtime_without_warm_up  # isort: skip  (tests/programs.py)

TASKS = 4
#: Seconds the busy task holds its worker's CPU: long enough for several stealing rounds
#: (every 100 ms), short enough for a quick test.
BUSY = 1.5
#: What the scheduler is told a step and the busy task take (by task prefix): a step far
#: above the ~0.1 s its stealing assumes a transfer costs, the busy task far above a step,
#: so that every step queued behind it is worth stealing.
SECONDS = {STEP.name: 1.0, "busy": 30.0}


class SlowSteps(SchedulerPlugin):
    """Tell the scheduler that every step and busy task takes what :data:`SECONDS` says
    (a step as it measures on a loaded machine): set when a batch arrives, before its
    tasks are assigned."""

    name = "test-slow-steps"

    def __init__(self):
        self.scheduler = None

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler

    def update_graph(self, scheduler, *, keys=(), **kwargs) -> None:
        for key in keys:
            ts = scheduler.tasks.get(key)
            if ts is not None and ts.prefix.name in SECONDS:
                ts.prefix.duration_average = SECONDS[ts.prefix.name]


@pytest.fixture(scope="module")
def pair():
    """Two CPU worker processes on 127.0.0.1, the test's plugin on their scheduler: each
    offers one ``CPU`` (for steps) and two threads (its owner tasks, which take no ``CPU``,
    run beside a busy task)."""
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2)
        client.register_plugin(SlowSteps())
        with runtime_without_warm_up(client) as rt:
            yield rt


def _holders(client, futures) -> list[set[str]]:
    """Who holds each of ``futures``, asked of the scheduler."""
    who = client.who_has(futures)
    return [set(who[f.key]) for f in futures]


def _busy(client, worker: str) -> list:
    """Keep ``worker`` busy: a task holding its CPU for :data:`BUSY` seconds and one queued
    behind it (so that a step queued there too makes more tasks than threads: a victim for
    the work stealing), both assigned there before this returns."""
    futures = [client.submit(time.sleep, seconds, resources={"CPU": 1}, workers=[worker],
                             allow_other_workers=False, key=f"busy-{uuid.uuid4().hex}")
               for seconds in (BUSY, 0)]
    deadline = time.monotonic() + 30
    while len(client.processing([worker])[worker]) < len(futures):
        assert time.monotonic() < deadline, "the busy tasks were not assigned"
        time.sleep(0.01)
    return futures


def _assigned(client, key: str) -> tuple[str, set[str]]:
    """The worker ``key`` is assigned to, and the workers it is restricted to, once the
    scheduler has assigned it."""
    def look(dask_scheduler=None):
        ts = dask_scheduler.tasks.get(key)
        where = ts and ts.processing_on
        return where and (where.address, set(ts.worker_restrictions or ()))

    deadline = time.monotonic() + 30
    while not (found := client.run_on_scheduler(look)):
        assert time.monotonic() < deadline, f"{key} was not assigned"
        time.sleep(0.01)
    return tuple(found)


def test_steps_run_where_their_slices_are_while_the_owner_is_busy(pair):
    rt, client = pair, pair.client
    shape = grid(16, 16)
    graph = tb.Graph.from_edges(shape.src, shape.dst, num_vertices=shape.num_vertices)
    placed = place_graph(rt, graph, TASKS, "edges", need_transpose=True)
    owners = [holders.pop() for holders in _holders(client, placed.slices)]
    assert len(set(owners)) == 2, f"the slices were not spread over both workers: {owners}"
    for source in (0, shape.num_vertices - 1, 7, 200):
        owner = owners[int(np.searchsorted(placed.parts.bounds, source, side="right")) - 1]
        busy = _busy(client, owner)
        r = tb.bfs(graph, source, tasks=TASKS, runtime=rt, dispatch="tasks", timeout=60)
        client.gather(busy)
        np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
        steps = r.trace[r.trace["name"] == STEP.name]
        assert len(steps) > 0
        moved = {t: w for t, w in zip(steps["task"].astype(int), steps["worker"], strict=True)
                 if w != owners[t]}
        assert not moved, f"steps ran away from their slices (task: worker): {moved}"
    client.sync(client.scheduler.amm_run_once)
    assert _holders(client, placed.slices) == [{o} for o in owners]


def test_a_task_pinned_to_a_worker_that_leaves_runs_where_its_input_went():
    """A CPU task is pinned to its input's worker; that worker leaves (retired: Dask copies
    its data to the other first) before the task can start there. The task runs on the
    worker that holds its input now, instead of waiting forever for the one that left."""
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                      dashboard_address="127.0.0.1:0", resources={"CPU": 1}) as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        leaving, staying = sorted(client.scheduler_info()["workers"])
        value = np.arange(100_000)
        p = Program(rt, Policy("cpu"))
        p.put_future("x", client.scatter(value, workers=[leaving]))
        busy = _busy(client, leaving)
        key = p.submit(PROBE, ins=["x"], outs=["y"])
        assert _assigned(client, key) == (leaving, {leaving})
        client.retire_workers([leaving])
        device, got = p.get("y", timeout=30)
        assert (device, int(got.sum())) == (SMP, int(value.sum()))
        assert [r["worker"] for r in p.records()] == [staying]
        del busy
