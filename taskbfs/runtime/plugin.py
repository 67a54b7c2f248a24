"""Device placement in the scheduler: the scheduler half and the client half together.

Scheduler half
    :class:`PlacementPlugin`, a Dask ``SchedulerPlugin``. In ``update_graph`` — before the
    new tasks transition, so before any is assigned to a worker — it reads each task's
    ``taskbfs`` annotation (program, size, implementations, task id) and the batch's
    ``taskbfs_policy`` annotation, asks :meth:`Policy.decide`, and sets the task's
    ``resource_restrictions`` to ``{"GPU": 1}`` or ``{"CPU": 1}``. The worker then runs the
    matching implementation (see :mod:`taskbfs.runtime.worker`). A task submitted with
    ``follow`` (keys of tasks whose outputs it reads, e.g. a BFS level's barrier) goes to
    the GPU worker when all of those were placed there for good, so that their outputs stay
    where they are; otherwise the policy decides. Every decision is logged (bounded) so
    that traces and the dashboard can show it.
Client half
    :func:`placement_annotations` builds those annotations, and the small functions below
    query the plugin through scheduler handlers.

A cluster whose workers declare no ``CPU`` resource (a plain Dask cluster) gets no CPU
restriction: any worker runs CPU tasks there.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque

from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from taskbfs import config
from taskbfs.errors import DeviceUnavailableError
from taskbfs.runtime.policy import Policy
from taskbfs.runtime.task import CUDA, SMP
from taskbfs.runtime.worker import SIZES_KEY, program_of_topic

logger = logging.getLogger(__name__)

PLUGIN_NAME = "taskbfs-placement"
#: Annotation names carried by every runtime task.
TASK_ANNOTATION = "taskbfs"
POLICY_ANNOTATION = "taskbfs_policy"
#: Resource names the workers advertise.
GPU_RESOURCE = "GPU"
CPU_RESOURCE = "CPU"
#: Size labels kept per program (a BFS keeps one per level; only the latest few matter).
MAX_SIZE_LABELS = 16


def policy_to_dict(policy: Policy) -> dict:
    """Plain-data form of a policy, for annotations and messages."""
    return {"kind": policy.kind, "lam": policy.lam, "gpu_tasks": sorted(policy.gpu_tasks)}


def policy_from_dict(data: dict | None) -> Policy:
    """Inverse of :func:`policy_to_dict`; None gives the default policy."""
    if not data:
        return Policy()
    return Policy(data["kind"], data["lam"], frozenset(data.get("gpu_tasks", ())))


class PlacementPlugin(SchedulerPlugin):
    """Scheduler plugin that places every taskbfs task on a CPU or GPU worker.

    Parameters
    ----------
    max_programs : int
        How many programs' decision logs to keep (oldest dropped first).
    max_decisions : int
        Most decisions kept per program.

    Attributes
    ----------
    decisions : OrderedDict[str, deque[dict]]
        Per program id: ``{"key", "task", "size", "device", "time", "policy", "lam"}`` and
        the task's tags, per placed task.
    listeners : list of callable
        Called as ``fn(program, decision)`` for each decision, in the scheduler's thread
        (the dashboard page, :mod:`taskbfs.dashboard`, is one). A listener with a
        ``message`` method also gets ``fn.message(program, message)`` for each dict a
        program's task publishes (:func:`~taskbfs.runtime.publish`): work a task runs
        inside itself (:func:`~taskbfs.runtime.include`) is placed by no one, and a
        program can say what it did that way. A listener that raises is dropped.
    """

    name = PLUGIN_NAME

    def __init__(self, max_programs: int = 64, max_decisions: int = 100_000):
        self.max_programs = max_programs
        self.max_decisions = max_decisions
        self.decisions: OrderedDict[str, deque] = OrderedDict()
        self.listeners: list = []
        self.scheduler = None
        self._sizes: OrderedDict[str, OrderedDict] = OrderedDict()  # program -> label -> sizes
        self._deferred: OrderedDict[str, dict] = OrderedDict()  # program -> label -> tasks

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        scheduler.handlers["taskbfs_placements"] = self.placements
        scheduler.handlers["taskbfs_resources"] = self.resources
        _add_dashboard_page(scheduler, self)

    # ------------------------------------------------------------- scheduler half
    def update_graph(self, scheduler, *, annotations=None, **kwargs) -> None:
        marks = (annotations or {}).get(TASK_ANNOTATION)
        if not marks:
            return
        _shorten_stream_intervals(scheduler)
        totals = _resource_totals(scheduler)
        policies: dict[int, Policy] = {}
        followers = []
        for key, mark in marks.items():
            ts = scheduler.tasks.get(key)
            if ts is None or not mark:
                # helper tasks of a batch (e.g. the getitem that splits a multi-output
                # task) carry a None mark: the global annotation is ``marks.get``
                continue
            policy_data = (ts.annotations or {}).get(POLICY_ANNOTATION)
            policy = policies.get(id(policy_data))
            if policy is None:
                policy = policies[id(policy_data)] = policy_from_dict(policy_data)
            label = mark.get("size_from")
            if label is None:
                if mark.get("follow"):
                    followers.append((ts, mark, policy))  # once the tasks it follows are placed
                else:
                    self._place(ts, mark, policy, mark.get("size"), totals)
                continue
            program = mark.get("program", "")
            sizes = self._sizes.get(program, {}).get(label)
            if sizes is not None:
                self._place(ts, mark, policy, _size_of(sizes, mark), totals)
                continue
            # Its size is not known yet: a provisional placement (as if size 0) holds
            # until the sizes arrive, which they do before the task can start.
            self._restrict(ts, self._decide(policy, mark, None, totals), totals)
            waiting = self._deferred.setdefault(program, {}).setdefault(label, [])
            waiting.append((key, mark, policy))
            _bound(self._deferred, self.max_programs)
        for ts, mark, policy in followers:
            self._place_follower(ts, mark, policy, totals)

    def log_event(self, topic, msg) -> None:
        """Place the tasks that waited for sizes a task published (see :func:`publish`)."""
        program = program_of_topic(topic) if isinstance(topic, str) else None
        if program is None or not isinstance(msg, dict):
            return
        self._tell_listeners(program, msg)
        if SIZES_KEY not in msg:
            return
        label, sizes = msg[SIZES_KEY]["label"], msg[SIZES_KEY]["sizes"]
        known = self._sizes.setdefault(program, OrderedDict())
        known[label] = sizes
        _bound(known, MAX_SIZE_LABELS)
        _bound(self._sizes, self.max_programs)
        waiting = self._deferred.get(program, {}).pop(label, ())
        if not waiting or self.scheduler is None:
            return
        totals = _resource_totals(self.scheduler)
        for key, mark, policy in waiting:
            ts = self.scheduler.tasks.get(key)
            if ts is not None and ts.state in ("released", "waiting", "no-worker"):
                self._place(ts, mark, policy, _size_of(sizes, mark), totals)

    def _place(self, ts, mark: dict, policy: Policy, size, totals: dict) -> None:
        """Decide one task's device from its size, restrict it there and log it."""
        device = self._decide(policy, mark, size, totals)
        self._restrict(ts, device, totals)
        self._record(mark.get("program", ""), ts.key, dict(mark, size=size), device, time.time(),
                     policy)

    def _place_follower(self, ts, mark: dict, policy: Policy, totals: dict) -> None:
        """A task submitted with ``follow``: on the GPU worker when every task it follows
        is placed there for good, by the policy otherwise."""
        if not self._all_on_gpu(mark["follow"], mark.get("program", "")):
            self._place(ts, mark, policy, mark.get("size"), totals)
            return
        self._restrict(ts, CUDA, totals)
        tags = {**mark.get("tags", {}), "followed": True}
        self._record(mark.get("program", ""), ts.key, dict(mark, tags=tags), CUDA, time.time(),
                     policy)

    def _all_on_gpu(self, keys, program: str) -> bool:
        """Whether every task in ``keys`` is placed on the GPU for good (one placed
        provisionally, still waiting for its size, does not count: it may move)."""
        waiting = {key for tasks in self._deferred.get(program, {}).values() for key, *_ in tasks}
        for key in keys:
            ts = self.scheduler.tasks.get(key) if self.scheduler is not None else None
            if ts is None or key in waiting or ts.resource_restrictions != {GPU_RESOURCE: 1}:
                return False
        return True

    @staticmethod
    def _decide(policy: Policy, mark: dict, size, totals: dict) -> str:
        try:
            return policy.decide(
                size=size,
                impls=tuple(mark.get("impls", (SMP, CUDA))),
                gpu_present=totals.get(GPU_RESOURCE, 0) > 0,
                task_id=mark.get("task"),
            )
        except DeviceUnavailableError:
            return CUDA  # waits for a GPU worker; the client checks before submitting

    @staticmethod
    def _restrict(ts, device: str, totals: dict) -> None:
        if device == CUDA:
            ts.resource_restrictions = {GPU_RESOURCE: 1}
        elif totals.get(CPU_RESOURCE, 0) > 0:
            ts.resource_restrictions = {CPU_RESOURCE: 1}
        elif ts.resource_restrictions == {GPU_RESOURCE: 1}:  # a provisional GPU placement
            ts.resource_restrictions = None  # a plain Dask cluster: any worker runs CPU tasks

    def _record(self, program: str, key, mark: dict, device: str, now: float, policy: Policy) -> None:
        log = self.decisions.get(program)
        if log is None:
            log = self.decisions[program] = deque(maxlen=self.max_decisions)
            while len(self.decisions) > self.max_programs:
                self.decisions.popitem(last=False)
        decision = {
            "key": key,
            "task": mark.get("task"),
            "size": mark.get("size"),
            "device": device,
            "time": now,
            "policy": policy.kind,
            "lam": policy.lam,
            **mark.get("tags", {}),
        }
        log.append(decision)
        for listener in list(self.listeners):
            try:
                listener(program, decision)
            except Exception:  # a broken listener must never break scheduling
                self.listeners.remove(listener)

    def _tell_listeners(self, program: str, message: dict) -> None:
        for listener in list(self.listeners):
            hook = getattr(listener, "message", None)
            if hook is None:
                continue
            try:
                hook(program, message)
            except Exception:  # a broken listener must never break scheduling
                self.listeners.remove(listener)

    # ------------------------------------------------------------- handlers
    def placements(self, program: str | None = None) -> list[dict] | dict:
        """Decision log of one program (or program id → count of decisions)."""
        if program is None:
            return {p: len(log) for p, log in self.decisions.items()}
        return [dict(d, key=str(d["key"])) for d in self.decisions.get(program, ())]

    def resources(self) -> dict:
        """Total resources the workers advertise, plus the number of workers."""
        totals = _resource_totals(self.scheduler)
        totals["workers"] = len(self.scheduler.workers)
        return totals


def _add_dashboard_page(scheduler, plugin) -> None:
    """Serve the live page (``/taskbfs`` on the scheduler's dashboard), fed by ``plugin.listeners``.

    The page lives outside the runtime room (:mod:`taskbfs.dashboard`); a scheduler
    without Bokeh or without a dashboard simply has no page: this never fails.
    """
    try:
        from taskbfs.dashboard import install

        install(scheduler, plugin)
    except Exception:
        logger.warning("taskbfs: the /taskbfs dashboard page could not be added", exc_info=True)


def _shorten_stream_intervals(scheduler) -> None:
    """Send scheduler→worker and scheduler→client messages without batching delays.

    A BFS level is a short chain of dependent tasks (steps → barrier → summary), and each
    hop waits for that delay (5 ms to workers, 2 ms to clients): measured 22 ms per level
    with it, 6.5 ms without the worker delay (T = 1, embedded cluster, 2-core dev machine). Applied on every taskbfs batch so that
    workers that joined later are covered; a handful of attribute writes.
    """
    streams = [*scheduler.stream_comms.values(), *scheduler.client_comms.values()]
    for stream in streams:
        if getattr(stream, "interval", None) != config.SCHEDULER_STREAM_INTERVAL:
            stream.interval = config.SCHEDULER_STREAM_INTERVAL


class LatencyPlugin(WorkerPlugin):
    """Worker plugin: report finished tasks to the scheduler without the 2 ms batching delay."""

    name = "taskbfs-latency"

    def setup(self, worker) -> None:
        stream = getattr(worker, "batched_stream", None)
        if stream is not None and hasattr(stream, "interval"):
            stream.interval = config.WORKER_STREAM_INTERVAL


def _size_of(sizes: list, mark: dict):
    """A deferred task's size: its entry (by task id) in the sizes its label named."""
    task = mark.get("task")
    return int(sizes[task]) if task is not None and 0 <= task < len(sizes) else None


def _bound(mapping: OrderedDict, limit: int) -> None:
    """Drop the oldest entries beyond ``limit``."""
    while len(mapping) > limit:
        mapping.popitem(last=False)


def _resource_totals(scheduler) -> dict:
    totals: dict[str, float] = {}
    for ws in scheduler.workers.values():
        for name, amount in (ws.resources or {}).items():
            totals[name] = totals.get(name, 0) + amount
    return totals


# ----------------------------------------------------------------- client half
def placement_annotations(program: str, marks: dict, policy: Policy) -> dict:
    """Annotations for ``dask.annotate`` that send one batch's placement marks.

    Parameters
    ----------
    program : str
        Program id (groups decisions).
    marks : dict
        Task key → ``{"size", "impls", "task", "tags"}``.
    policy : Policy
        The policy for the whole batch.
    """
    for mark in marks.values():
        mark["program"] = program
    return {TASK_ANNOTATION: marks.get, POLICY_ANNOTATION: policy_to_dict(policy)}


def ensure_plugin(client) -> None:
    """Register :class:`PlacementPlugin` on the client's scheduler unless it is there."""
    present = client.run_on_scheduler(_has_plugin)
    if not present:
        client.register_plugin(PlacementPlugin(), name=PLUGIN_NAME)
        client.register_plugin(LatencyPlugin(), name=LatencyPlugin.name)


def _has_plugin(dask_scheduler=None) -> bool:
    return PLUGIN_NAME in dask_scheduler.plugins


def cluster_resources(client) -> dict:
    """Resources advertised by the cluster's workers (``{"CPU": n, "GPU": m, "workers": k}``)."""
    return client.sync(client.scheduler.taskbfs_resources)


def fetch_placements(client, program: str) -> list[dict]:
    """The plugin's decisions for one program."""
    return client.sync(client.scheduler.taskbfs_placements, program=program)
