"""What a runtime installs on a cluster, and takes back when it closes.

The placement plugin on the scheduler and :class:`LatencyPlugin` on the workers
(:func:`attach`, :func:`detach`: registered by the first runtime, counted per runtime,
removed with all they changed when the last one leaves); a shorter batching interval on
the client (:func:`speed_up_client`, counted the same way); the caller's settings
(:class:`SettingsPlugin`) and the warm-ups (:class:`WarmUpPlugin`) on every worker,
those that join later too; ``GPU=1`` on dask-cuda's GPU workers
(:func:`claim_dask_cuda_gpu`), which they keep.
"""

from __future__ import annotations

import functools
import gc
import logging
import weakref

import dask
from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin

from taskbfs.runtime.embedded import detect_gpus
from taskbfs.runtime.mailbox import MAILBOX_OP, deliver, forget_mailbox
from taskbfs.runtime.plugin import PLUGIN_NAME, PlacementPlugin
from taskbfs.runtime.resident import RESIDENT_OP, run_resident
from taskbfs.runtime.task import GPU_RESOURCE
from taskbfs.runtime.worker import (
    COLLECT_OP,
    RECORDS_OP,
    collect_records,
    forget_worker_state,
    peek_records,
)

logger = logging.getLogger(__name__)


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


#: The client's batching interval while a runtime uses it: a BFS level waits on a chain of
#: dependent tasks, so every batching delay is paid per level.
CLIENT_BATCH_INTERVAL = 0.0
#: Per client: [its batching interval before the first runtime shortened it, runtimes using it].
_client_intervals: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def speed_up_client(client: Client) -> bool:
    """Shorten the client's message batching interval (10 ms by default in distributed).

    Level-synchronous BFS sends one small batch per level and waits for its answer, so
    the batching delay is paid on every level. The client's own interval is kept (counted
    per runtime) for :func:`restore_client`. Returns whether it was shortened.
    """
    comm = getattr(client, "scheduler_comm", None)
    if comm is None or not hasattr(comm, "interval"):
        return False
    entry = _client_intervals.get(client)
    if entry is None:
        entry = _client_intervals[client] = [comm.interval, 0]
    entry[1] += 1
    comm.interval = CLIENT_BATCH_INTERVAL
    return True


def restore_client(client: Client) -> None:
    """Undo :func:`speed_up_client` for one runtime: the last one puts the interval back."""
    entry = _client_intervals.get(client)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _client_intervals[client]
        comm = getattr(client, "scheduler_comm", None)
        if comm is not None and hasattr(comm, "interval"):
            comm.interval = entry[0]


#: Functions ("module:function") every worker runs when a runtime starts: a GPU worker's
#: memory set up before any GPU work, the search code loaded before the first search.
WORKER_WARM_UP = ("taskbfs.kernels.gpu_memory:use_rmm_if_available", "taskbfs.search.warmup:warm_up")


def warm_up_workers(client) -> bool:
    """Run :data:`WORKER_WARM_UP` on every worker now and on every worker that joins
    later (:class:`WarmUpPlugin`): a replacement for a lost worker must not load the
    search code inside the search that needs it. Returns whether the plugin is in place."""
    names = list(WORKER_WARM_UP)
    if not names:
        return False
    try:
        client.register_plugin(WarmUpPlugin(names), name=WarmUpPlugin.name)
        return True
    except Exception as exc:  # a warm-up only saves time: never fail the start for it
        logger.warning("taskbfs: the worker warm-up %s failed: %s", names, exc)
        return False


def warm_worker(name: str, dask_worker=None):
    """Call the function ``name`` ("module:function") on this worker (run by
    :class:`~taskbfs.runtime.Runtime` at its start, with ``client.run``, for each of
    :data:`WORKER_WARM_UP`): it gets the worker and loads what its tasks will need.
    The runtime knows the function by name only, and imports it there."""
    import importlib

    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)(dask_worker)


class SettingsPlugin(WorkerPlugin):
    """Sets ``taskbfs.*`` in a worker process's ``dask.config`` to the caller's settings,
    and puts the worker's own back at teardown.

    Parameters
    ----------
    settings : dict
        The ``taskbfs`` subtree of the caller's ``dask.config``.
    """

    name = "taskbfs-settings"

    def __init__(self, settings: dict):
        self.settings = settings
        self._applied = None

    def setup(self, worker) -> None:
        self._applied = dask.config.set({"taskbfs": self.settings})

    def teardown(self, worker) -> None:
        if self._applied is not None:
            self._applied.__exit__(None, None, None)
            self._applied = None


class WarmUpPlugin(WorkerPlugin):
    """Runs the warm-up functions ``names`` (``"module:function"``, see
    :func:`warm_worker`) on each worker when it is registered and on each worker that
    joins later; a failing one is logged, never raised. Then it moves every object of the
    worker's process out of reach of Python's full garbage collections (``gc.freeze``):
    the modules, compiled code and runtime state made so far live as long as the process,
    and a full collection that walks them (numba, pandas and distributed loaded) would
    stall whatever search runs when it fires. The embedded runtime's
    workers share the caller's process, so its objects are frozen too: a cycle among them
    that becomes garbage later is kept, not collected.
    """

    name = "taskbfs-warm-up"

    def __init__(self, names: list[str]):
        self.names = names

    def setup(self, worker) -> None:
        for name in self.names:
            try:
                warm_worker(name, worker)
            except Exception as exc:  # a warm-up only saves time
                logger.warning("taskbfs: the worker warm-up %s failed: %s", name, exc)
        gc.freeze()


async def claim_dask_cuda_gpu(dask_worker=None) -> bool:
    """Give this worker the ``GPU`` resource if it is a dask-cuda GPU worker without it.

    Run on every worker of a cluster that is not the runtime's own (``client.run``). A
    dask-cuda worker (``LocalCUDACluster``, ``dask cuda worker``) is one running a worker
    plugin defined by the ``dask_cuda`` package (dask-cuda installs its CPU affinity,
    RMM and pre-import plugins on every worker it starts, one worker per GPU) in a
    process that sees a CUDA device (:func:`detect_gpus`). Returns whether it was given
    ``GPU=1``. A worker started with ``--resources GPU=...`` is left as it is.
    """
    state = dask_worker.state
    if state.total_resources.get(GPU_RESOURCE, 0) > 0:
        return False
    plugins = getattr(dask_worker, "plugins", {}).values()
    if not any(type(p).__module__.split(".")[0] == "dask_cuda" for p in plugins):
        return False
    if detect_gpus() < 1:
        return False
    await dask_worker.set_resources(**{GPU_RESOURCE: 1})
    return True
