"""Device placement in the scheduler: the scheduler half and the client half together.

Scheduler half
    :class:`PlacementPlugin`, a Dask ``SchedulerPlugin``. In ``update_graph`` — before the
    new tasks transition, so before any is assigned to a worker — it reads each task's
    ``taskbfs`` annotation (program, size, implementations, task id) and the batch's
    ``taskbfs_policy`` annotation (a built-in :class:`Policy` as plain data, or a reference
    to the user policy its program registered), asks the policy's ``decide``, and sets the task's
    ``resource_restrictions`` to ``{"GPU": 1}`` or ``{"CPU": 1}``; a task is also pinned to
    workers that hold its largest input (:mod:`~taskbfs.runtime.pins`). The worker then
    runs the matching implementation (see :mod:`taskbfs.runtime.worker`). A task submitted with
    ``follow`` (keys of tasks whose outputs it reads, e.g. a BFS level's barrier) goes to
    the GPU worker when all of those were placed there for good, so that their outputs stay
    where they are; otherwise the policy decides. Every decision is logged (bounded) and
    handed to the plugin's named listeners (a program's consumers, e.g. the BFS's live
    dashboard page, hook in there; the runtime itself installs none).
Client half
    :func:`placement_annotations` builds those annotations; the small functions below
    talk to the plugin through scheduler handlers and ``run_on_scheduler``. Registering
    the plugin for a runtime, and removing it when the last one goes, is
    :mod:`taskbfs.runtime.attach`; the device rule it applies is
    :func:`~taskbfs.runtime.policy.decide_device`.

A cluster whose workers declare no ``CPU`` resource (a plain Dask cluster) gets no CPU
restriction: any worker runs CPU tasks there (the pin to the workers holding the largest
input holds there too).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import OrderedDict, deque

import dask
from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.protocol.pickle import loads

from taskbfs.errors import InvalidParameterError
from taskbfs.runtime.pins import pin_to_data, repin_after_loss
from taskbfs.runtime.policy import (
    Policy,
    decide_device,
    decision_row,
    policy_from_dict,
    policy_to_dict,
)
from taskbfs.runtime.resident import RESIDENT_KEY
from taskbfs.runtime.task import CPU_RESOURCE, CUDA, GPU_RESOURCE, SMP, TASK_ANNOTATION
from taskbfs.runtime.worker import COLLECT_OP, SIZES_KEY, program_of_topic

logger = logging.getLogger(__name__)

PLUGIN_NAME = "taskbfs-placement"
#: The annotation that carries a batch's policy (beside each task's ``TASK_ANNOTATION``).
POLICY_ANNOTATION = "taskbfs_policy"
#: Size labels kept per program (a BFS keeps one per level; only the latest few matter).
MAX_SIZE_LABELS = 16
#: User policies kept (one per open program; the oldest dropped first beyond this).
MAX_POLICIES = 1024
#: Scheduler handlers the plugin adds (removed again with it).
HANDLERS = ("taskbfs_placements", "taskbfs_resources", "taskbfs_trace", "taskbfs_finished")
#: The event topic on which the plugin announces the cluster's resource totals whenever a
#: worker joins or leaves (a runtime keeps the last: no round trip per search).
RESOURCES_TOPIC = "taskbfs-resources"


class PlacementPlugin(SchedulerPlugin):
    """Scheduler plugin that places every taskbfs task on a CPU or GPU worker.

    Parameters
    ----------
    max_programs : int
        How many programs' decision logs to keep (oldest dropped first).
    max_decisions : int
        Most decisions kept, over all the programs whose trace was not collected yet
        (the oldest programs' dropped first): a program's decisions are released when
        its trace is collected (:meth:`trace`: ``Program.finished``, the end of a search).
    stream_interval : float
        Batching interval, in seconds, it sets on the scheduler's streams to workers and
        clients (0: a BFS level waits on a chain of dependent tasks, so every batching
        delay is paid per level).

    Attributes
    ----------
    decisions : OrderedDict[str, deque[dict]]
        Per program id: ``{"key", "task", "size", "device", "time", "policy", "lam"}`` and
        the task's tags, per placed task (``policy_error`` too where a user policy failed).
    listeners : dict[str, callable]
        By name (:meth:`add_listener`). Each is called as ``fn(program, decision)`` for
        each decision, in the scheduler's thread (the board of the BFS's live dashboard page,
        :mod:`taskbfs.live_runs`, is one). A listener with a ``message`` method also gets
        ``fn.message(program, message)`` for each dict a program's task publishes
        (:func:`~taskbfs.runtime.publish`): work a task runs inside itself
        (:func:`~taskbfs.runtime.include`) is placed by no one, and a program can say what
        it did that way. A listener that raises is dropped.
    policies : OrderedDict[str, object]
        User policies by program id (:func:`register_policy`).
    users : set of str
        The runtimes that use this plugin (:func:`attach`); when the last one leaves
        (:func:`detach`), a plugin the runtimes registered removes itself.
    """

    name = PLUGIN_NAME

    def __init__(self, max_programs: int = 64, max_decisions: int = 100_000,
                 stream_interval: float = 0.0):
        self.max_programs = max_programs
        self.stream_interval = float(stream_interval)
        self.max_decisions = max_decisions
        self.decisions: OrderedDict[str, deque] = OrderedDict()
        self._decided = 0  # decisions kept, over all programs
        self.listeners: dict[str, object] = {}
        self.policies: OrderedDict[str, object] = OrderedDict()
        self.users: set[str] = set()
        self.registered: set[str] = set()  # what attach() registered: "scheduler", "worker"
        self.scheduler = None
        self._sizes: OrderedDict[str, OrderedDict] = OrderedDict()  # program -> label -> sizes
        self._deferred: OrderedDict[str, dict] = OrderedDict()  # program -> label -> tasks
        self._intervals = weakref.WeakKeyDictionary()  # stream -> its interval before ours
        self._swept = None  # the program whose batch last swept closed programs' topics

    async def start(self, scheduler) -> None:
        self.setup(scheduler)

    def setup(self, scheduler) -> None:
        """Serve the plugin's handlers on ``scheduler`` (what ``start`` does)."""
        self.scheduler = scheduler
        scheduler.handlers["taskbfs_placements"] = self.placements
        scheduler.handlers["taskbfs_resources"] = self.resources
        scheduler.handlers["taskbfs_trace"] = self.trace
        scheduler.handlers["taskbfs_finished"] = self.finished

    def teardown(self, scheduler) -> None:
        """Undo what the plugin changed on ``scheduler``: the message batching intervals of
        its streams, its handlers; forget listeners and policies."""
        for stream, interval in list(self._intervals.items()):
            stream.interval = interval
        self._intervals.clear()
        for name in HANDLERS:
            if getattr(scheduler.handlers.get(name), "__self__", None) is self:
                del scheduler.handlers[name]
        self.listeners.clear()
        self.policies.clear()

    def add_listener(self, name: str, listener) -> None:
        """Call ``listener`` with every decision (see ``listeners``); replaces one of that name."""
        self.listeners[name] = listener

    # ------------------------------------------------------------- scheduler half
    def update_graph(self, scheduler, *, annotations=None, **kwargs) -> None:
        marks = (annotations or {}).get(TASK_ANNOTATION)
        if not marks:
            return
        self.shorten_stream_intervals(scheduler)
        self._drop_closed_topics(scheduler, next(iter(marks.values()), None))
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
                policy = policies[id(policy_data)] = self._policy(policy_data)
            if mark.get("worker") is not None:  # pinned where its data is kept
                ts.worker_restrictions = {mark["worker"]}
                ts.loose_restrictions = False
                ts.resource_restrictions = None
                self._record(mark.get("program", ""), ts.key, mark, SMP, time.time(), policy)
                continue
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
            self._restrict(ts, decide_device(policy, mark, None, totals), totals)
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
        if RESIDENT_KEY in msg:  # a resident call's task (its program keeps the decision)
            if self.scheduler is not None:  # no batch comes: sweep and shorten here
                self.shorten_stream_intervals(self.scheduler)
                self._drop_closed_topics(self.scheduler, {"program": program})
            self._tell_decision(program, msg[RESIDENT_KEY])
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

    def _drop_closed_topics(self, scheduler, mark) -> None:
        """Forget the message topics of closed programs (their client unsubscribed), with
        the messages the scheduler kept there: one per search otherwise stays for the
        scheduler's life. Swept when a batch of another program arrives."""
        program = mark.get("program") if isinstance(mark, dict) else None
        if program is None or program == self._swept:
            return
        self._swept = program
        topics = getattr(getattr(scheduler, "_broker", None), "_topics", None)
        if not isinstance(topics, dict):  # another distributed: nothing we know to drop
            return
        for name in [name for name, topic in topics.items()
                     if program_of_topic(name) is not None and not topic.subscribers]:
            del topics[name]
        _drop_forgotten_groups(scheduler)

    def _place(self, ts, mark: dict, policy, size, totals: dict) -> None:
        """Decide one task's device from its size, restrict it there and log it."""
        device = decide_device(policy, mark, size, totals)
        self._restrict(ts, device, totals)
        self._record(mark.get("program", ""), ts.key, dict(mark, size=size), device, time.time(),
                     policy)

    def _place_follower(self, ts, mark: dict, policy, totals: dict) -> None:
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

    def _policy(self, data: dict | None):
        """The policy a batch's annotation names: a built-in one, or a registered user policy."""
        if not data or "registered" not in data:
            return policy_from_dict(data)
        policy = self.policies.get(data["registered"])
        if policy is None:
            logger.warning("taskbfs: no policy registered for program %s; the default placement "
                           "policy places its tasks", data["registered"])
            return Policy()
        return policy

    @staticmethod
    def _restrict(ts, device: str, totals: dict) -> None:
        """Restrict ``ts`` to ``device``: the GPU workers, or the CPU workers that hold
        its largest input (:func:`pin_to_data`)."""
        if device == CUDA:
            ts.resource_restrictions = {GPU_RESOURCE: 1}
            ts.worker_restrictions = None  # a provisional CPU placement's pin
            pin_to_data(ts)  # a GPU worker that holds it (its device cache has it too)
            return
        if totals.get(CPU_RESOURCE, 0) > 0:
            ts.resource_restrictions = {CPU_RESOURCE: 1}
        elif ts.resource_restrictions == {GPU_RESOURCE: 1}:  # a provisional GPU placement
            ts.resource_restrictions = None  # a plain Dask cluster: any worker runs CPU tasks
        pin_to_data(ts)

    def _record(self, program: str, key, mark: dict, device: str, now: float, policy) -> None:
        log = self.decisions.get(program)
        if log is None:
            log = self.decisions[program] = deque(maxlen=self.max_decisions)
            while len(self.decisions) > self.max_programs:
                self._release(next(iter(self.decisions)))
        decision = decision_row(key, mark, device, now, policy)
        self._decided += len(log) < self.max_decisions  # a full log drops its oldest
        log.append(decision)
        while self._decided > self.max_decisions and len(self.decisions) > 1:
            self._release(next(iter(self.decisions)))
        self._tell_decision(program, decision)

    def _tell_decision(self, program: str, decision: dict) -> None:
        for name, listener in list(self.listeners.items()):
            self._tell(name, listener, program, decision)

    def _tell(self, name: str, hook, *args) -> None:
        """``hook(*args)``, a method of the listener ``name``; a listener that raises is dropped."""
        try:
            hook(*args)
        except Exception:  # a broken listener must never break scheduling
            logger.warning("taskbfs: placement listener %r dropped", name, exc_info=True)
            self.listeners.pop(name, None)

    def _release(self, program: str) -> list:
        """Drop ``program``'s decisions; returns them."""
        log = self.decisions.pop(program, ())
        self._decided -= len(log)
        return list(log)

    def _tell_listeners(self, program: str, message: dict) -> None:
        for name, listener in list(self.listeners.items()):
            hook = getattr(listener, "message", None)
            if hook is not None:
                self._tell(name, hook, program, message)

    def shorten_stream_intervals(self, scheduler) -> None:
        """Send scheduler→worker and scheduler→client messages without batching delays.

        A BFS level is a short chain of dependent tasks (steps → barrier → summary), and each
        hop waits for that delay, which then sets a small level's time. Applied when a runtime attaches and on every taskbfs batch or resident
        call, so that workers and clients that joined later are covered; a handful of
        attribute writes. Each stream's own interval is
        kept, and :meth:`teardown` puts it back.
        """
        for stream in (*scheduler.stream_comms.values(), *scheduler.client_comms.values()):
            interval = getattr(stream, "interval", None)
            if interval is not None and interval != self.stream_interval:
                self._intervals.setdefault(stream, interval)
                stream.interval = self.stream_interval

    # ------------------------------------------------------------- handlers
    def placements(self, program: str) -> list[dict]:
        """Decision log of one program."""
        return _as_rows(self.decisions.get(program, ()))

    async def trace(self, program: str) -> dict:
        """One program's trace in one round trip from the client: the workers' records
        of its tasks (removed there; a worker that does not answer gives none) and this
        plugin's decisions for it (released here)."""
        responses = await self.scheduler.broadcast(
            msg={"op": COLLECT_OP, "program": program}, on_error="return_pickle")
        # each worker's list as it came (serialized): the client's comm unpacks it
        per_worker = [response["result"] for response in responses.values()
                      if isinstance(response, dict) and response.get("status") == "OK"]
        return {"records": per_worker, "placements": _as_rows(self._release(program))}

    def finished(self, program: str, payload: bytes) -> None:
        """Hand what a client collected of its finished ``program`` (``payload``, pickled)
        to the listeners that take it (a ``finished(program, payload)`` method): the
        handler ``taskbfs_finished``, one message, where ``client.run_on_scheduler``
        would leave a log record on the scheduler per search."""
        takers = [(name, listener) for name, listener in self.listeners.items()
                  if getattr(listener, "finished", None) is not None]
        if not takers:
            return
        payload = loads(payload)
        for name, listener in takers:
            self._tell(name, listener.finished, program, payload)

    def add_worker(self, scheduler=None, worker=None) -> None:
        self._announce_resources()

    def remove_worker(self, scheduler=None, worker=None, **kwargs) -> None:
        if self.scheduler is not None and worker is not None:
            repin_after_loss(self.scheduler, worker)
        self._announce_resources()

    def _announce_resources(self) -> None:
        """Tell the runtimes listening on :data:`RESOURCES_TOPIC` the new totals."""
        if self.scheduler is not None:
            self.scheduler.log_event(RESOURCES_TOPIC, self.resources())

    def resources(self) -> dict:
        """Total resources the workers advertise, plus the number of workers."""
        totals = _resource_totals(self.scheduler)
        totals["workers"] = len(self.scheduler.workers)
        return totals


def _as_rows(decisions) -> list[dict]:
    """Placement decisions as a client reads them (keys as strings)."""
    return [dict(d, key=str(d["key"])) for d in decisions]


def _drop_forgotten_groups(scheduler) -> None:
    """Let the taskbfs span forget the task groups the scheduler forgot (a span keeps
    every group it ever had, for its statistics)."""
    span = getattr(scheduler.extensions.get("spans"), "spans", {}).get(SPAN_ID)
    if span is not None:
        span.groups = {tg for tg in span.groups if scheduler.task_groups.get(tg.name) is tg}


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
#: The ``distributed.span`` of taskbfs's tasks, one for the scheduler's life. Without it
#: each search lands in a new "default" span (one per computation that starts on an idle
#: cluster), which the scheduler keeps forever with every task group of the search (a
#: group per task key), and the workers keep metrics keyed by its id: linear growth.
SPAN_ID = "taskbfs"


def placement_annotations(program: str, marks: dict, policy) -> dict:
    """Annotations for ``dask.annotate`` that send one batch's placement marks.

    Parameters
    ----------
    program : str
        Program id (groups decisions).
    marks : dict
        Task key → ``{"size", "impls", "task", "tags"}``.
    policy : Policy or a user policy
        The policy for the whole batch (a user policy must be registered:
        :func:`register_policy`).
    """
    for mark in marks.values():
        mark["program"] = program
    annotations = {TASK_ANNOTATION: marks.get, POLICY_ANNOTATION: policy_to_dict(policy, program)}
    if "span" not in dask.get_annotations():  # a caller's own span is kept
        annotations["span"] = {"name": (SPAN_ID,), "ids": (SPAN_ID,)}
    return annotations


def add_listener(client, name: str, setup, timeout: float | None = None) -> bool:
    """Add a placement listener named ``name`` to the plugin on ``client``'s scheduler,
    unless one of that name is there: ``setup(scheduler)`` runs there and returns it
    (within ``timeout`` seconds, else ``TimeoutError``).

    ``setup`` must be picklable (a function in a module the scheduler can import). Returns
    whether the listener is in place; a ``setup`` that raises is logged on the scheduler
    and gives False (a consumer's page must not stop a program).
    """
    return client.run_on_scheduler(_add_listener, name, setup, callback_timeout=timeout)


def _add_listener(name: str, setup, dask_scheduler=None) -> bool:
    plugin = dask_scheduler.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return False
    if name not in plugin.listeners:
        try:
            plugin.add_listener(name, setup(dask_scheduler))
        except Exception:
            logger.warning("taskbfs: placement listener %r could not be added", name, exc_info=True)
            return False
    return True


def register_policy(client, program: str, policy) -> None:
    """Send a user policy to the plugin, for the tasks of ``program`` (once per program).

    Raises
    ------
    InvalidParameterError
        The policy cannot be pickled to the scheduler.
    """
    from distributed.protocol.pickle import dumps

    try:
        dumps(policy)
    except Exception as exc:
        raise InvalidParameterError(
            f"a placement policy must be picklable (it runs in the scheduler): {policy!r}: "
            f"{type(exc).__name__}: {exc}") from None
    client.run_on_scheduler(_register_policy, program, policy)


def forget_policy(client, program: str) -> None:
    """Drop ``program``'s user policy from the plugin."""
    client.run_on_scheduler(_register_policy, program, None)


def _register_policy(program: str, policy, dask_scheduler=None) -> None:
    plugin = dask_scheduler.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return
    if policy is None:
        plugin.policies.pop(program, None)
        return
    plugin.policies[program] = policy
    _bound(plugin.policies, MAX_POLICIES)


def workers_of(client, timeout: float | None = None) -> dict:
    """``{address: worker info}`` of every worker, asked of the scheduler now (within
    ``timeout`` seconds, else ``TimeoutError``).
    (``client.scheduler_info(n_workers=-1)["workers"]`` may return the client's cached
    copy that its periodic refresh has just replaced with one listing no workers.)"""
    return client.sync(client.scheduler.identity, n_workers=-1,
                       callback_timeout=timeout)["workers"]


def stranded(client, futures, timeout: float | None = None) -> list[str]:
    """The workers, gone from the cluster, that ``futures`` wait for: a future (or a task
    it waits for) restricted to workers that all left, without ``allow_other_workers``,
    which Dask keeps in ``no-worker`` forever (a task pinned to a worker's address: a
    lost owner's). Sorted addresses; empty when every one can still run. Asked of the
    scheduler within ``timeout`` seconds, else ``TimeoutError``."""
    return client.run_on_scheduler(_stranded, [f.key for f in futures],
                                   callback_timeout=timeout)


def _stranded(keys: list, dask_scheduler=None) -> list[str]:
    scheduler = dask_scheduler
    gone, seen, stack = set(), set(), list(keys)
    while stack:
        ts = scheduler.tasks.get(stack.pop())
        if ts is None or ts.key in seen or ts.state not in ("waiting", "no-worker"):
            continue
        seen.add(ts.key)
        pins = ts.worker_restrictions
        if pins and not ts.loose_restrictions and not any(w in scheduler.workers for w in pins):
            gone.update(pins)
        stack.extend(dts.key for dts in ts.dependencies)
    return sorted(gone)


def workers_with(workers: dict, resource: str) -> list[str]:
    """The addresses among ``workers`` (as :func:`workers_of` gives them) that advertise
    ``resource``, sorted."""
    return sorted(a for a, info in workers.items() if info.get("resources", {}).get(resource, 0) > 0)


def cluster_resources(client, timeout: float | None = None) -> dict:
    """Resources advertised by the cluster's workers (``{"CPU": n, "GPU": m, "workers": k}``;
    within ``timeout`` seconds, else ``TimeoutError``)."""
    return client.sync(client.scheduler.taskbfs_resources, callback_timeout=timeout)


def fetch_trace(client, program: str, timeout: float | None = None,
                decided=(), kept=()) -> tuple[list, list]:
    """``(records, placements)`` of one program (see :meth:`PlacementPlugin.trace`;
    within ``timeout`` seconds); ``decided`` and ``kept`` as for :func:`fetch_trace_later`."""
    trace = client.sync(client.scheduler.taskbfs_trace, program=program,
                        callback_timeout=timeout)
    records, placements = _flat_trace(trace)
    return [*kept, *records], [*decided, *placements]


def fetch_trace_later(client, program: str, decided=(), kept=()):
    """:func:`fetch_trace` started on ``client``'s event loop, not waited for: a
    :class:`concurrent.futures.Future` of ``(records, placements)``; ``decided``: the
    decisions the program made itself (its resident tasks'), put first; ``kept``: the
    records it holds already (that came with its resident calls), put first."""
    import asyncio

    async def fetch():
        records, placements = _flat_trace(await client.scheduler.taskbfs_trace(program=program))
        return [*kept, *records], [*decided, *placements]

    return asyncio.run_coroutine_threadsafe(fetch(), client.loop.asyncio_loop)


def _flat_trace(trace: dict) -> tuple[list, list]:
    return [r for records in trace["records"] for r in records], trace["placements"]


def fetch_placements(client, program: str, timeout: float | None = None) -> list[dict]:
    """The plugin's decisions for one program (within ``timeout`` seconds)."""
    return client.sync(client.scheduler.taskbfs_placements, program=program,
                       callback_timeout=timeout)
