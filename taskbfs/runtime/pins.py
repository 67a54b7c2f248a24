"""Pins: a placed task runs on a worker that holds its largest input.

The scheduler plugin (:mod:`taskbfs.runtime.plugin`) decides each task's device; then
:func:`pin_to_data` restricts it to the workers of that device that hold its largest
input, so that Dask's work stealing does not carry the task, and then its data, to
another worker. :func:`repin_after_loss` moves those pins off a worker that leaves.
Both run in the scheduler's thread, on its ``TaskState`` objects.
"""

from __future__ import annotations

import time

from taskbfs.runtime.task import GPU_RESOURCE, TASK_ANNOTATION

#: Bytes of a CPU task's largest input from which, when only workers that run no CPU tasks
#: hold it, the task runs on a holder: copying a graph range's slice costs more than its step.
STAY_WITH_DATA_BYTES = 1 << 26


def pin_to_data(ts) -> None:
    """Pin a task placed on a CPU to the CPU workers that hold its largest input (every
    worker runs CPU tasks on a cluster without a ``CPU`` resource), when any does; when
    only workers that run no CPU tasks hold it (a GPU worker) and it has at least
    :data:`STAY_WITH_DATA_BYTES`, to those, without the resource restriction
    (the worker then runs the task's CPU implementation); else leave it to Dask. A task
    placed on a GPU is pinned to the GPU workers that hold its largest input, when any does
    (a range built on its GPU worker: every step of it runs there, where the device cache
    holds it, whatever the sizes of its other inputs).

    Without the pin, Dask's work stealing moves a task queued on a busy worker to an idle
    one, which fetches the task's input; the Active Memory Manager then drops one of the
    two copies, possibly the first, and over many calls data placed on several workers
    gathers on one (a BFS's graph slices over a long soak: benchmarks/soak.py). A
    non-loose worker restriction beside the resource restriction is what stealing
    respects; the task still runs on any holder, and :func:`repin_after_loss` moves the
    pin off a worker that leaves.
    """
    largest = None
    for dts in ts.dependencies:
        if dts.who_has and (largest is None or dts.nbytes > largest.nbytes):
            largest = dts
    holders = None if largest is None else {
        ws.address for ws in largest.who_has
        if _runs_resources(ws, ts.resource_restrictions)}
    if (not holders and largest is not None and ts.resource_restrictions != {GPU_RESOURCE: 1}
            and largest.nbytes >= STAY_WITH_DATA_BYTES):
        # only workers that run no CPU tasks hold it (a graph's range on its GPU worker),
        # and moving it costs more than the task: a holder runs the CPU implementation
        ts.resource_restrictions = None
        holders = {ws.address for ws in largest.who_has}
    ts.worker_restrictions = holders or None
    if holders:
        ts.loose_restrictions = False


def _runs_resources(ws, restrictions: dict | None) -> bool:
    """Whether worker ``ws`` offers the resources ``restrictions`` asks for."""
    return not restrictions or all(ws.resources.get(name, 0) >= amount
                                   for name, amount in restrictions.items())


def repin_after_loss(scheduler, address: str) -> None:
    """Pin again, where their largest input is now, the tasks not yet running that
    :func:`pin_to_data` pinned to ``address``, a worker that left (Dask leaves a task
    restricted to workers that are all gone waiting for them forever); those that
    waited for a worker (``no-worker``) are assigned again. Scans the scheduler's tasks
    once per lost worker."""
    recommendations = {}
    for ts in list(scheduler.tasks.values()):
        if (ts.state not in ("waiting", "no-worker") or not ts.worker_restrictions
                or address not in ts.worker_restrictions or not placed_by_policy(ts)):
            continue
        pin_to_data(ts)
        if ts.state == "no-worker":
            recommendations[ts.key] = "processing"
    if recommendations:
        scheduler.transitions(recommendations, stimulus_id=f"taskbfs-repin-{time.time()}")


def placed_by_policy(ts) -> bool:
    """Whether ``ts`` is a taskbfs task its policy placed (not one pinned by its program
    with ``worker=``)."""
    mark = (ts.annotations or {}).get(TASK_ANNOTATION)
    return isinstance(mark, dict) and mark.get("worker") is None
