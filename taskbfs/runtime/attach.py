"""Attaching runtimes to a cluster: the placement plugin on its scheduler and
:class:`LatencyPlugin` on its workers, registered by the first runtime, counted per
runtime, and taken away with all they changed when the last one leaves.
"""

from __future__ import annotations

import functools

from distributed.diagnostics.plugin import WorkerPlugin

from taskbfs.runtime.mailbox import MAILBOX_OP, deliver, forget_mailbox
from taskbfs.runtime.plugin import PLUGIN_NAME, PlacementPlugin
from taskbfs.runtime.resident import RESIDENT_OP, run_resident
from taskbfs.runtime.worker import (
    COLLECT_OP,
    RECORDS_OP,
    collect_records,
    forget_worker_state,
    peek_records,
)


def attach(client, user: str) -> None:
    """Make ``client``'s scheduler place taskbfs tasks, for the runtime ``user``.

    Registers :class:`PlacementPlugin` on the scheduler and :class:`LatencyPlugin` on the
    workers unless they are there, and counts ``user`` among the plugin's users; one
    scheduler call, so that two runtimes attaching at once register one plugin.
    """
    client.run_on_scheduler(_attach, user)


def detach(client, user: str) -> bool:
    """Undo :func:`attach` for ``user``. When no runtime uses the plugin any more, what
    the runtimes registered is removed and everything it changed put back: the
    scheduler's stream intervals and handlers (:meth:`PlacementPlugin.teardown`), the
    worker plugin (whose ``teardown`` restores the workers). A plugin registered some
    other way (e.g. by a scheduler preload) stays. Returns whether it was removed.
    """
    return client.run_on_scheduler(_detach, user)


async def _attach(user: str, dask_scheduler=None) -> None:
    from distributed.protocol.pickle import dumps

    scheduler = dask_scheduler
    plugin = scheduler.plugins.get(PLUGIN_NAME)
    if plugin is None:
        plugin = PlacementPlugin()
        plugin.setup(scheduler)
        scheduler.add_plugin(plugin, name=PLUGIN_NAME)
        plugin.registered.add("scheduler")
    plugin.users.add(user)
    plugin.shorten_stream_intervals(scheduler)  # a program of resident calls sends no batch
    if LatencyPlugin.name not in scheduler.worker_plugins:
        plugin.registered.add("worker")
        await scheduler.register_worker_plugin(None, dumps(LatencyPlugin()),
                                               LatencyPlugin.name,
                                               idempotent=True)


async def _detach(user: str, dask_scheduler=None) -> bool:
    scheduler = dask_scheduler
    plugin = scheduler.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return False
    plugin.users.discard(user)
    if plugin.users or not plugin.registered:
        return False
    registered, plugin.registered = plugin.registered, set()
    if "scheduler" in registered:
        plugin.teardown(scheduler)
        scheduler.remove_plugin(PLUGIN_NAME)
    if "worker" in registered and LatencyPlugin.name in scheduler.worker_plugins:
        await scheduler.unregister_worker_plugin(None, LatencyPlugin.name)
    return True


class LatencyPlugin(WorkerPlugin):
    """Worker plugin: report finished tasks to the scheduler without the 2 ms batching delay.

    It also serves a program's records: to a watcher while it runs (the worker handler
    :data:`~taskbfs.runtime.worker.RECORDS_OP`) and to :meth:`PlacementPlugin.trace` when
    it ends (:data:`~taskbfs.runtime.worker.COLLECT_OP`); and the runtime's resident calls
    (:data:`~taskbfs.runtime.resident.RESIDENT_OP`), and the exchanges between running
    tasks (:data:`~taskbfs.runtime.mailbox.MAILBOX_OP`). ``teardown`` (when the last
    runtime leaves, :func:`detach`) removes the handlers, puts the worker's interval back
    and drops what the runtime kept on the worker (:func:`~taskbfs.runtime.worker_cache`,
    uncollected trace records).
    """

    name = "taskbfs-latency"

    def __init__(self, interval: float = 0.0):
        self.interval = float(interval)  # the worker's batching interval while it is set up
        self._intervals: dict[int, float] = {}  # id(worker) -> its interval before ours

    def setup(self, worker) -> None:
        stream = getattr(worker, "batched_stream", None)
        if stream is not None and hasattr(stream, "interval"):
            self._intervals.setdefault(id(worker), stream.interval)
            stream.interval = self.interval
        for op, handler in ((RECORDS_OP, peek_records), (COLLECT_OP, collect_records),
                            (RESIDENT_OP, run_resident), (MAILBOX_OP, deliver)):
            worker.handlers[op] = functools.update_wrapper(
                functools.partial(handler, dask_worker=worker), handler)

    def teardown(self, worker) -> None:
        for op in (RECORDS_OP, COLLECT_OP, RESIDENT_OP, MAILBOX_OP):
            worker.handlers.pop(op, None)
        forget_mailbox(worker.address)
        interval = self._intervals.pop(id(worker), None)
        stream = getattr(worker, "batched_stream", None)
        if interval is not None and stream is not None:
            stream.interval = interval
        forget_worker_state(worker)
