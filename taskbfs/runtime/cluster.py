"""``Runtime``: where taskbfs runs — an existing scheduler, a Client, or the embedded default.

The embedded default (:mod:`~taskbfs.runtime.embedded`) is an in-process
``LocalCluster``-style cluster (threads, no processes, so partitions and frontiers are
shared by reference): one CPU worker whose threads are the machine's cores and which
advertises ``CPU=<threads>``, plus one worker per GPU advertising ``GPU=1`` and running one
thread (as dask-cuda does). Under ``NUMBA_ENABLE_CUDASIM=1`` the simulated GPU counts as
one GPU.

A runtime also takes a Cluster object (``LocalCluster``, dask-jobqueue's, dask-kubernetes',
or anything with a ``scheduler_address``). Workers of dask-cuda (``LocalCUDACluster``,
``dask cuda worker``) advertise no ``GPU`` resource: a runtime finds them (a worker that
runs one of dask-cuda's worker plugins and sees a CUDA device) and gives each ``GPU=1``
(:func:`~taskbfs.runtime.attach.claim_dask_cuda_gpu`), which it keeps; workers that join later are not looked at
(start them with ``--resources GPU=1``).

Every runtime attaches the placement plugin to its scheduler (and the latency plugin to
its workers) and shortens its client's batching interval (:mod:`~taskbfs.runtime.attach`). On a cluster that is not its
own (an address or a Client it was given), :meth:`Runtime.close` puts all of that back
once no other runtime uses it: plugins unregistered, batching intervals of the client,
the scheduler and the workers restored, per-worker caches dropped, the client left open.

Settings (``taskbfs.*`` in ``dask.config``) are read where they are used. Workers in other
processes get the caller's: :meth:`Runtime.share_settings` sends them when they changed,
as a worker plugin (so workers that join later get them too), taken back on close.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
import uuid
import weakref

from distributed import Client, Worker
from distributed.deploy import Cluster

from taskbfs import config
from taskbfs.errors import DeviceUnavailableError, InvalidParameterError, TaskBFSError
from taskbfs.runtime.attach import (
    SettingsPlugin,
    WarmUpPlugin,
    attach,
    claim_dask_cuda_gpu,
    detach,
    restore_client,
    speed_up_client,
    warm_up_workers,
)
from taskbfs.runtime.collective import close_communicators
from taskbfs.runtime.connect import connect, dashboard_link, is_cluster_like
from taskbfs.runtime.embedded import freeze_long_lived_objects, start_embedded_cluster
from taskbfs.runtime.plugin import (
    RESOURCES_TOPIC,
    add_listener,
    cluster_resources,
    workers_of,
    workers_with,
)
from taskbfs.runtime.resident import Residents
from taskbfs.runtime.task import CPU_RESOURCE, CUDA, GPU_RESOURCE, SMP

logger = logging.getLogger(__name__)


def _in_process(client: Client) -> bool:
    """True when every worker of ``client``'s cluster runs in this process (data moves
    between them by reference)."""
    workers = getattr(getattr(client, "cluster", None), "workers", None)
    return bool(workers) and all(isinstance(w, Worker) for w in workers.values())


class Runtime:
    """The cluster taskbfs runs on.

    Parameters
    ----------
    address_or_client : str, distributed.Client, Cluster or None
        A scheduler address (``"tcp://host:8786"``) to connect to, a Client to wrap, a
        Cluster object (``LocalCluster``, ``dask_cuda.LocalCUDACluster``, a dask-jobqueue
        or dask-kubernetes cluster: anything with a ``scheduler_address``) to connect a
        client of its own to (the cluster stays up after :meth:`close`), or None to start
        the embedded default cluster (closed again by :meth:`close`).
    threads : int, optional
        Embedded default only: CPU worker threads (default: all cores).
    gpus : int, optional
        Embedded default only: GPU workers, 0 or 1 (default: 1 when this process sees a
        GPU). Its workers run in this process, where numba gives every thread the same
        GPU: a machine's further GPUs take a worker process each
        (``deploy/start-local-cluster.sh``, ``CUDA_VISIBLE_DEVICES`` per worker).
    security : distributed.Security, optional
        How to reach a ``tls://`` scheduler address (CA file, client certificate and
        key); default: what Dask's ``distributed.comm.tls`` settings say. A ``tls://``
        address without them raises :class:`InvalidParameterError`.
    dashboard_address : str or None
        Embedded default only: where to serve the dashboard; ``"default"``: the setting
        ``taskbfs.runtime.dashboard-address`` (``"127.0.0.1:0"``: this machine only, a
        free port); ``":0"`` listens on every interface; None serves none.

    Notes
    -----
    The runtime serves no page of its own on the dashboard; consumers hook into the
    placement decisions with :meth:`add_listener` (the BFS's live page,
    :func:`taskbfs.dashboard.install`, does).

    Examples
    --------
    >>> import taskbfs as tb
    >>> with tb.Runtime() as rt:
    ...     rt.dashboard_link.startswith("http://127.0.0.1:")   # this machine only
    True
    """

    def __init__(self, address_or_client=None, *, threads: int | None = None, gpus: int | None = None,
                 dashboard_address: str | None = "default", security=None):
        started = time.perf_counter()
        self._owned_cluster = None
        self._dashboard_link: str | None = None
        self._owned_client = None
        if dashboard_address == "default":
            dashboard_address = config.get("runtime.dashboard-address")
        self._dashboard_address = dashboard_address
        self._user = f"runtime-{uuid.uuid4().hex[:12]}"  # how the scheduler plugin counts us
        self._attached = False
        self._sped_up = False
        self._listeners: dict[str, bool] = {}  # name -> whether add_listener put it in place
        self._programs: weakref.WeakSet = weakref.WeakSet()
        self._pending: set = set()  # answers still on their way (Program.finished_later)
        self._shared_settings = None  # the settings last sent to the workers
        self._resources: dict | None = None  # the totals the scheduler last announced
        self._resources_heard = 0  # how many announcements arrived
        self._listening_resources = False
        self._warming = False  # whether our WarmUpPlugin is registered
        self._worker_resources: dict | None = None  # address -> resources, until one joins or leaves
        if address_or_client is None:
            self._owned_cluster = start_embedded_cluster(threads, gpus, dashboard_address)
            self.client = self._owned_client = Client(self._owned_cluster, set_as_default=False)
            freeze_long_lived_objects()
        elif isinstance(address_or_client, Client):
            self.client = address_or_client
        elif isinstance(address_or_client, (str, Cluster)) or is_cluster_like(address_or_client):
            self.client = self._owned_client = connect(address_or_client, security)
        else:
            raise InvalidParameterError(
                "runtime must be a scheduler address, a distributed.Client, a Cluster (an "
                f"object with a scheduler_address) or None, got {address_or_client!r}"
            )
        _by_client[id(self.client)] = self  # tb.bfs finds us from the current client
        self._sped_up = speed_up_client(self.client)
        try:
            attach(self.client, self._user)
            self._attached = True
        except Exception as exc:
            self.close()
            raise TaskBFSError(
                "could not register the taskbfs placement plugin on the scheduler "
                f"(is taskbfs installed where the scheduler runs?): {exc}"
            ) from None
        self.share_settings()
        if self._owned_cluster is None:
            self._claim_dask_cuda_gpus()
        _listen_for_resources(self.client, self)
        self._listening_resources = True
        self._warming = warm_up_workers(self.client)
        #: Seconds this runtime took to be ready: connecting, or starting the embedded
        #: cluster, with the workers' warm-up (the search code loaded; the first time after
        #: an install, numba compiles it into its cache).
        self.start_seconds = time.perf_counter() - started


    def _claim_dask_cuda_gpus(self) -> None:
        try:
            claimed = self.client.run(claim_dask_cuda_gpu)
        except Exception as exc:  # a worker that cannot run it is not a GPU worker we know of
            logger.warning("taskbfs: could not look for dask-cuda GPU workers: %s", exc)
            return
        for worker in sorted(w for w, ok in claimed.items() if ok):
            logger.info("taskbfs: dask-cuda worker %s runs GPU tasks (resource GPU=1 added)", worker)

    # ------------------------------------------------------------------ info
    @property
    def dashboard_link(self) -> str | None:
        """URL of the Dask dashboard, if the scheduler serves one: at the address its
        HTTP server listens on (the scheduler's host when it listens on every
        interface), formatted by distributed's ``distributed.dashboard.link`` template."""
        if self._owned_cluster is not None and self._dashboard_address is None:
            return None
        if self._dashboard_link is None:
            try:
                self._dashboard_link = dashboard_link(self.client)
            except Exception:
                logger.debug("taskbfs: no dashboard address", exc_info=True)
                return None
        return self._dashboard_link

    def resources(self, timeout: float | None = None) -> dict:
        """Totals the workers advertise: ``{"CPU": n, "GPU": m, "workers": k}``.

        Asked of the scheduler once (at most ``timeout`` seconds, else ``TimeoutError``);
        after that, the scheduler's plugin announces the totals whenever a worker joins or
        leaves, and the runtime answers from the last announcement without a round trip.
        """
        if self._resources is None:
            heard = self._resources_heard
            totals = cluster_resources(self.client, timeout)
            if self._resources_heard == heard:  # else an announcement is newer than this answer
                self._resources = totals
        return dict(self._resources)

    def _heard_resources(self, event) -> None:
        """An announcement of the cluster's totals (see :meth:`resources`)."""
        _timestamp, totals = event
        if isinstance(totals, dict):
            self._resources_heard += 1
            self._resources = totals
            self._worker_resources = None

    def free_memory(self, timeout: float | None = None) -> int | None:
        """Bytes the workers can still take: this machine's available memory when they
        run in this process, else per worker its memory limit less what its process
        uses, summed (asked of the scheduler within ``timeout`` seconds); None when a
        worker has no limit (then nobody can tell)."""
        return self.free_memory_later()(timeout)

    def free_memory_later(self):
        """:meth:`free_memory` as a call ``answer(timeout)``, asked of the scheduler now, so
        that its round trip runs beside the caller's next ones."""
        if self.in_process:
            free = available_memory()
            return lambda timeout=None: free
        asked = asyncio.run_coroutine_threadsafe(
            self.client.scheduler.identity(n_workers=-1), self.client.loop.asyncio_loop)
        return lambda timeout=None: _free_of(asked.result(timeout))

    @property
    def has_gpu(self) -> bool:
        """True if any worker advertises the ``GPU`` resource."""
        return self.resources().get(GPU_RESOURCE, 0) > 0

    def require_gpu(self, why: str, resources: dict | None = None) -> None:
        """Raise :class:`DeviceUnavailableError` unless a GPU worker is present (in
        ``resources``, those :meth:`resources` gave just before, else asked now)."""
        resources = self.resources() if resources is None else resources
        if not resources.get(GPU_RESOURCE, 0) > 0:
            raise DeviceUnavailableError(
                f"{why} needs a GPU, but no worker of this cluster advertises the "
                f"'{GPU_RESOURCE}' resource (workers: {resources})"
            )

    def gpu_workers(self) -> list[str]:
        """The addresses of the workers that advertise a GPU."""
        return workers_with(workers_of(self.client), GPU_RESOURCE)

    def on_gpu_workers(self, func, *args, timeout: float | None = None,
                       args_of=None) -> dict:
        """``func(*args)`` as one task on each GPU worker, futures in ``args`` fetched
        there first (OmpSs: copying data in to a device before its tasks run, e.g. into
        the worker's :mod:`~taskbfs.runtime.device_data` service); waits for them
        (``timeout`` seconds, else ``TimeoutError``). ``args_of(address)``, when given,
        gives each worker its own arguments, appended to ``args`` (data for that device
        only). Returns ``{address: result}`` (empty without GPU workers)."""
        gpus = self.gpu_workers()
        futures = [self.client.submit(func, *args, *(args_of(address) if args_of else ()),
                                      workers=[address], allow_other_workers=False,
                                      resources={GPU_RESOURCE: 1}, pure=False)
                   for address in gpus]
        try:
            results = [future.result(timeout=timeout) for future in futures]
        finally:
            for future in futures:
                future.release()
        return dict(zip(gpus, results, strict=True))

    @property
    def in_process(self) -> bool:
        """Whether every worker runs in this process (data moves between them by reference)."""
        return _in_process(self.client)

    def holds_together(self, futures, timeout: float | None = None) -> bool:
        """Whether one worker can read all of ``futures`` without copying them: the
        workers share this process's memory (the embedded default, or a ``LocalCluster``
        of threads), or one worker holds every one of them (asked of the scheduler
        within ``timeout`` seconds)."""
        return self.in_process or bool(self._holders(futures, timeout))

    def _holders(self, futures, timeout: float | None = None) -> set:
        """The workers that hold every one of ``futures`` (asked of the scheduler)."""
        who_has = self.client.sync(self.client.scheduler.who_has,
                                   keys=[f.key for f in futures], callback_timeout=timeout)
        holders = [set(workers) for workers in who_has.values()]
        return set.intersection(*holders) if holders else set()

    def include_site(self, futures, policy, timeout: float | None = None,
                     resources: dict | None = None) -> str | None:
        """Where one task can run, as included tasks (OmpSs ``final``), the tasks of a
        program that read ``futures``, instead of dispatching each through the scheduler:
        ``"smp"`` (a CPU worker), ``"cuda"`` (the GPU worker, whose host threads run the
        CPU tasks too), or None (dispatch them).

        One worker must read every one of ``futures`` without copies
        (:meth:`holds_together`) and offer every device ``policy`` may choose: a policy
        that never picks the GPU (or a cluster without one) is included on a CPU worker;
        one that may, on the cluster's one GPU worker. With several GPU workers the tasks
        are dispatched, so that they spread over them. ``resources``: what
        :meth:`resources` gave just before (else asked now).
        """
        if not self.holds_together(futures, timeout):
            return None
        resources = self.resources(timeout) if resources is None else resources
        gpus = int(resources.get(GPU_RESOURCE, 0))
        if not gpus or not getattr(policy, "uses_gpu", True):  # a user policy may use it
            return SMP
        return CUDA if gpus == 1 else None

    @functools.cached_property
    def residents(self) -> Residents:
        """This runtime's resident calls (:mod:`taskbfs.runtime.resident`)."""
        return Residents(self.client)

    def resident_site(self, futures, device: str, timeout: float | None = None) -> str | None:
        """The worker that runs a resident call of a task on ``device`` that reads
        ``futures``: one that offers the device (the ``GPU`` resource for "cuda", the
        ``CPU`` one, where workers declare it, for "smp") and holds every one of them
        (any such worker when the workers share this process's memory); None if none
        does. The workers' resources are asked once, again after one joins or leaves."""
        if self._worker_resources is None:
            self._worker_resources = {address: info.get("resources") or {}
                                      for address, info in workers_of(self.client, timeout).items()}
        wanted = GPU_RESOURCE if device == CUDA else CPU_RESOURCE
        declared = any(wanted in r for r in self._worker_resources.values())
        offering = sorted(address for address, r in self._worker_resources.items()
                          if r.get(wanted, 0) > 0 or (wanted == CPU_RESOURCE and not declared))
        if not offering or self.in_process:
            return offering[0] if offering else None
        holders = self._holders(futures, timeout).intersection(offering)
        return min(holders) if holders else None

    def share_settings(self, timeout: float | None = None) -> None:
        """Give the workers this process's ``taskbfs`` settings, if they changed since the
        last call (a dictionary comparison when they did not), within ``timeout`` seconds
        (else ``TimeoutError``).

        Workers in this process read the same settings already; those of other processes
        get them through a worker plugin (:class:`SettingsPlugin`), which workers that join
        later run too, and which puts their own settings back when :meth:`close` removes it.
        """
        if self.in_process:
            return
        settings = config.snapshot()
        if settings == self._shared_settings:
            return
        plugin = SettingsPlugin(settings)
        register = getattr(self.client, "_register_worker_plugin", None)
        if timeout is None or register is None:
            self.client.register_plugin(plugin, name=SettingsPlugin.name)
        else:  # what register_plugin runs, which takes no timeout (a stopped scheduler)
            self.client.sync(register, plugin, SettingsPlugin.name,
                             getattr(plugin, "idempotent", False),
                             callback_timeout=timeout)
        self._shared_settings = settings

    # ------------------------------------------------------------------ consumers
    def add_listener(self, name: str, setup, timeout: float | None = None) -> bool:
        """Hook a listener into the scheduler plugin's placement decisions, once per name.

        ``setup(scheduler)`` runs on the scheduler (once per plugin and ``name``; later
        calls from this runtime cost nothing) and returns the listener: a callable
        ``fn(program, decision)``, optionally with ``fn.message(program, message)`` (see
        :class:`~taskbfs.runtime.PlacementPlugin`). It must be picklable (a function of a
        module the scheduler can import). The listener goes with the plugin when the last
        runtime closes. Returns whether it is in place (a failing ``setup`` is logged on
        the scheduler, never raised, and not tried again by this runtime: a consumer's
        hook must not stop or slow a program). The scheduler is asked within ``timeout``
        seconds, else ``TimeoutError`` (and asked again by the next call).
        """
        if name not in self._listeners:  # a failed setup is not tried again either
            self._listeners[name] = bool(add_listener(self.client, name, setup, timeout))
        return self._listeners[name]

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close this runtime.

        Its open programs are closed. An embedded cluster is shut down with its client. On
        a cluster that is not its own, what the runtime changed is put back once no other
        runtime uses it (see the module docstring), and a Client it was given stays open.
        Idempotent.
        """
        close_communicators(self)
        with contextlib.suppress(Exception):  # what the programs asked for, if it can come
            concurrent.futures.wait(list(self._pending), timeout=PENDING_WAIT_SECONDS)
        self._pending.clear()
        for program in list(self._programs):
            try:
                program.close()
            except Exception:  # its client may be gone: nothing left to release
                logger.debug("taskbfs: closing program %s failed", program.id, exc_info=True)
        self._programs = weakref.WeakSet()
        if self._owned_cluster is None:  # a cluster that outlives us: leave it as it was
            self._restore_cluster()
        if self._owned_client is not None:
            self._owned_client.close()
            self._owned_client = None
        if self._owned_cluster is not None:
            self._owned_cluster.close()
            self._owned_cluster = None

    def _restore_cluster(self) -> None:
        running = self.client.status in ("running", "connecting")
        if self._listening_resources:
            _stop_listening_for_resources(self.client, self)
            self._listening_resources = False
        if self._attached and running:
            try:
                detach(self.client, self._user)
            except Exception:  # the scheduler may be gone already
                logger.debug("taskbfs: could not detach from the scheduler", exc_info=True)
        self._attached = False
        self._listeners.clear()
        if self._shared_settings is not None and running:
            try:
                self.client.unregister_worker_plugin(SettingsPlugin.name)
            except Exception:  # the workers may be gone already
                logger.debug("taskbfs: could not take the settings back", exc_info=True)
        self._shared_settings = None
        if self._warming and running:
            try:
                self.client.unregister_worker_plugin(WarmUpPlugin.name)
            except Exception:  # the workers may be gone already
                logger.debug("taskbfs: could not remove the warm-up plugin", exc_info=True)
        self._warming = False
        if self._sped_up:
            restore_client(self.client)
            self._sped_up = False

    def heal(self) -> bool:
        """Restart the embedded cluster's workers that stopped (closed or crashed), with
        their first settings; returns whether one was. A runtime on a cluster that is not
        its own leaves that to whoever runs it (a ``dask worker`` under its nanny is
        restarted by it). :func:`taskbfs.search` calls this before each search."""
        cluster = self._owned_cluster
        if cluster is None:
            return False
        dead = [name for name, worker in cluster.workers.items()
                if getattr(worker, "status", None) is None
                or worker.status.name in ("closed", "closing", "failed")]
        if not dead:
            return False
        logger.warning("taskbfs: restarting the embedded cluster's stopped worker(s) %s", dead)
        for name in dead:
            del cluster.workers[name]
        cluster.sync(cluster._correct_state)
        self.client.wait_for_workers(len(cluster.worker_spec),
                                     timeout=config.get("runtime.connect-timeout"))
        return True  # warmed by the WarmUpPlugin as they joined

    def _track(self, program) -> None:
        """Close ``program`` with this runtime (:meth:`close`)."""
        self._programs.add(program)

    def _track_pending(self, future) -> None:
        """Have :meth:`close` wait for ``future`` (an answer a program asked for)."""
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    def __enter__(self) -> Runtime:
        """Open for the ``with`` block, with :attr:`client` the current Dask client in it
        (``Client.as_current``): dask collections (``r.to_dask()``) compute on it."""
        self._as_current = self.client.as_current()
        self._as_current.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        current, self._as_current = getattr(self, "_as_current", None), None
        try:
            if current is not None:
                current.__exit__(None, None, None)
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"Runtime({self.client.scheduler.address!r})"


#: Seconds :meth:`Runtime.close` waits for answers its programs asked for and did not
#: wait for (a search's trace records).
PENDING_WAIT_SECONDS = 10.0

#: Seconds a reading of this machine's available memory is reused: reading it
#: (``/proc/meminfo``) costs more than a small search can spare per call.
MEMORY_READING_SECONDS = 1.0
_memory_reading = (float("-inf"), 0)  # (time.monotonic() when read, bytes available)


def _free_of(identity: dict) -> int | None:
    """Per worker of the scheduler's ``identity``, its memory limit less what its process
    uses, summed; None when a worker has no limit."""
    free = 0
    for worker in identity["workers"].values():
        limit = worker.get("memory_limit") or 0
        if limit <= 0:
            return None
        free += max(0, int(limit) - int(worker.get("metrics", {}).get("memory", 0)))
    return free


def available_memory() -> int:
    """Bytes this machine has available (``psutil``), read at most once per
    :data:`MEMORY_READING_SECONDS`."""
    global _memory_reading
    import psutil  # a dependency of distributed

    read_at, available = _memory_reading
    now = time.monotonic()
    if now - read_at > MEMORY_READING_SECONDS:
        available = int(psutil.virtual_memory().available)
        _memory_reading = (now, available)
    return available


#: Per client, the runtimes that keep the resource totals the scheduler announces (a
#: client has one handler per event topic; several runtimes may share a client).
_resource_listeners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _listen_for_resources(client, runtime) -> None:
    """Have ``runtime`` hear the totals announced on ``client`` (:meth:`Runtime.resources`)."""
    listeners = _resource_listeners.get(client)
    if listeners is None:
        listeners = _resource_listeners[client] = weakref.WeakSet()

        def heard(event, listeners=listeners):
            for listener in list(listeners):
                listener._heard_resources(event)

        client.subscribe_topic(RESOURCES_TOPIC, heard)
    listeners.add(runtime)


def _stop_listening_for_resources(client, runtime) -> None:
    """Undo :func:`_listen_for_resources`; the last runtime of a client unsubscribes it."""
    listeners = _resource_listeners.get(client)
    if listeners is None:
        return
    listeners.discard(runtime)
    if not listeners:
        del _resource_listeners[client]
        with contextlib.suppress(Exception):  # the client may be closing already
            client.unsubscribe_topic(RESOURCES_TOPIC)
            # distributed's unsubscribe keeps the handler (and what it refers to)
            getattr(client, "_event_handlers", {}).pop(RESOURCES_TOPIC, None)


#: id(client) -> an open Runtime on that client (weak: a closed one drops out).
_by_client: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def runtime_of(client) -> Runtime | None:
    """An open :class:`Runtime` on ``client``, or None."""
    rt = _by_client.get(id(client))
    return rt if rt is not None and rt.client is client and _attached_runtime(rt) else None


def _attached_runtime(rt) -> bool:
    return rt._attached and rt.client.status in ("running", "connecting")


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The embedded default runtime of this process, started on first use (once, whatever
    the threads asking), closed at exit; its stopped workers are restarted
    (:meth:`Runtime.heal`)."""
    global _default
    with _default_lock:
        if _default is None or _default.client.status not in ("running", "connecting"):
            import atexit

            _default = Runtime(None)
            atexit.register(_close_default)
        else:
            _default.heal()
        return _default


def _close_default() -> None:
    global _default
    if _default is not None:
        try:
            _default.close()
        finally:
            _default = None
