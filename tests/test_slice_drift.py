"""Graph slices stay with the workers they were placed on (issue 18, the soak of session 17).

A dispatched search's step reads its slice where the slice was placed. When that worker is
busy and another is idle, Dask's work stealing takes a queued step for the idle one when
the step's measured duration makes it worth it (on a loaded machine); the thief then
fetches the slice, the Active Memory Manager drops one of the two copies, possibly the
owner's, and over many searches every slice can end on one worker (each later search then
runs as one task there). Here: two CPU worker processes on 127.0.0.1; in each search the
owner of the source's slice is kept busy by a task holding its ``CPU`` resource until the
step queued there was stolen or stayed 2 s, and a scheduler plugin of the test makes the
scheduler think a step takes a second (the loaded machine, where the steal is worth it).
Every step must still run on its slice's worker, every slice stay there alone, and the
result equal scipy's. A second test loses the worker a task is pinned to.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid

import numpy as np
import pytest
from distributed import Client, Event, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
from reference import scipy_distances
from shapes import grid

import taskbfs as tb
from taskbfs.placed.placement import place_graph
from taskbfs.runtime import SMP, Policy, Program
from taskbfs.search.steps import STEP_NAME

from programs import PROBE, runtime_without_warm_up  # isort: skip  (tests/programs.py)

TASKS = 4
#: Seconds a step waits on its busy owner for the work stealing to take it: many stealing
#: rounds (every 100 ms).
STEAL_WINDOW = 2.0
#: What the scheduler is told a step and a busy task take: a step far above the ~0.1 s its
#: stealing assumes a transfer costs, a busy task far above a step, so that every step
#: queued behind one is worth stealing.
STEP_SECONDS, BUSY_SECONDS = 1.0, 30.0
BUSY = "busy"
#: Seconds each busy task keeps the worker that leaves busy: longer than its retirement
#: takes (its in-process thread pool then waits for the sleep on closing).
LEAVING_BUSY = 3.0


def _of_steps(ts) -> bool:
    """Whether scheduler task ``ts`` has a step's prefix (``bfs_step-<program kind>``;
    the getitems that split a step's output share it)."""
    return ts.prefix.name.startswith(STEP_NAME + "-")


class SlowSteps(SchedulerPlugin):
    """Tell the scheduler that every step takes :data:`STEP_SECONDS` (as it measures on a
    loaded machine) and a busy task :data:`BUSY_SECONDS`: set when a batch arrives,
    before its tasks are assigned."""

    name = "test-slow-steps"

    def __init__(self):
        self.scheduler = None

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler

    def update_graph(self, scheduler, *, keys=(), **kwargs) -> None:
        for key in keys:
            ts = scheduler.tasks.get(key)
            if ts is not None and _of_steps(ts):
                ts.prefix.duration_average = STEP_SECONDS
            elif ts is not None and ts.prefix.name == BUSY:
                ts.prefix.duration_average = BUSY_SECONDS


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


def _hold(event: str) -> None:
    """Wait (on a worker) until the test sets ``event``."""
    Event(event).wait(timeout=60)


def _busy(client, worker: str, hold, *args) -> list:
    """Keep ``worker`` busy: a task holding its CPU while ``hold(*args)`` runs and one
    queued behind it (so that a step queued there too makes more tasks than threads: a
    victim for the work stealing), both assigned there before this returns."""
    futures = [client.submit(hold, *args, resources={"CPU": 1}, workers=[worker],
                             allow_other_workers=False, key=f"{BUSY}-{i}-{uuid.uuid4().hex}")
               for i in range(2)]
    deadline = time.monotonic() + 30
    while len(client.processing([worker])[worker]) < len(futures):
        assert time.monotonic() < deadline, "the busy tasks were not assigned"
        time.sleep(0.01)
    return futures


def _steps_assigned(dask_scheduler=None) -> list[str]:
    """The workers the scheduler assigned the steps it holds to (a step has a resource
    restriction, the getitems that split its output none)."""
    return [ts.processing_on.address for ts in dask_scheduler.tasks.values()
            if ts.processing_on is not None and _of_steps(ts) and ts.resource_restrictions]


def _search_while_busy(client, rt, graph, source: int, owner: str):
    """Search from ``source`` while ``owner`` is busy: released once a step assigned to
    ``owner`` (waiting there) left it or stayed :data:`STEAL_WINDOW` seconds."""
    event = f"test-busy-{uuid.uuid4().hex}"
    busy = _busy(client, owner, _hold, event)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waited = pool.submit(_release_when_stolen_or_kept, client, owner, event)
        r = tb.bfs(graph, source, tasks=TASKS, runtime=rt, dispatch="tasks", timeout=120)
        assert waited.result(), f"no step of the search from {source} waited on {owner}"
    client.gather(busy)
    return r


def _release_when_stolen_or_kept(client, owner: str, event: str) -> bool:
    """Set ``event`` once a step assigned to ``owner`` left it or stayed there for
    :data:`STEAL_WINDOW` seconds; returns whether one was assigned there (within 60 s)."""
    try:
        deadline = time.monotonic() + 60
        while owner not in client.run_on_scheduler(_steps_assigned):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        window = time.monotonic() + STEAL_WINDOW
        while time.monotonic() < window and owner in client.run_on_scheduler(_steps_assigned):
            time.sleep(0.01)
        return True
    finally:
        Event(event, client=client).set()


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
        r = _search_while_busy(client, rt, graph, source, owner)
        np.testing.assert_array_equal(r.distances, scipy_distances(graph, source))
        steps = r.trace[r.trace["name"] == STEP_NAME]
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
        # a sleep, not an Event: a worker of this process would keep the Event's client
        busy = _busy(client, leaving, time.sleep, LEAVING_BUSY)
        key = p.submit(PROBE, ins=["x"], outs=["y"])
        assert _assigned(client, key) == (leaving, {leaving})
        client.retire_workers([leaving])
        device, got = p.get("y", timeout=30)
        assert (device, int(got.sum())) == (SMP, int(value.sum()))
        assert [r["worker"] for r in p.records()] == [staying]
        del busy
