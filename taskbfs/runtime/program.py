"""The data directory: OmpSs data dependencies expressed as Dask futures.

Each logical datum (a name such as ``"frontier/7"``) has a *current version*, one Dask
future. Submitting a task with directions maps onto Dask as follows:

=====================  ==========================================================
``in``  (read)         the task depends on the current version (read-after-write)
``out`` (write)        a new version is created; the task does not wait for earlier
                       readers or writers: renaming removes WAR and WAW hazards
``inout``              both: depends on the current version, creates the next one
``inout`` + in place   the implementation may mutate the value it receives; the task
                       then also waits for every reader of the current version (the
                       WAR order is kept instead of renamed)
=====================  ==========================================================

Submissions inside ``with program.batch():`` reach the scheduler as one graph (one
message, one plugin call); outside a batch each submission is sent at once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import itertools
import operator
import queue
import time
import uuid
from dataclasses import dataclass, field

import dask
from dask.utils import apply
from distributed import Client, Future, wait

from taskbfs.errors import InvalidParameterError, TaskBFSError
from taskbfs.runtime.plugin import (
    fetch_trace,
    fetch_trace_later,
    forget_policy,
    placement_annotations,
    register_policy,
)
from taskbfs.runtime.policy import Policy, as_policy, decide_device, decision_row
from taskbfs.runtime.resident import NotResident
from taskbfs.runtime.task import SMP, Task
from taskbfs.runtime.worker import execute, execute_after, message_topic

try:  # dask >= 2025: graphs are submitted as expressions
    from dask._expr import LLGExpr as _LLGExpr
except ImportError:  # pragma: no cover - older dask
    _LLGExpr = None
try:
    from distributed.spans import SpanMetadata as _SpanMetadata
except ImportError:  # pragma: no cover - older distributed
    _SpanMetadata = None
#: Whether this distributed's client takes a graph's priorities with it (see Program._submit_graph).
_ORDERED_SUBMIT = _SpanMetadata is not None and {"span_metadata", "internal_priority"} <= set(
    inspect.signature(Client._graph_to_futures).parameters)

#: Seconds between checks for failed tasks while waiting for a published message.
MESSAGE_POLL_SECONDS = 0.05


@dataclass
class _Pending:
    """Submissions not yet sent to the scheduler."""

    graph: dict = field(default_factory=dict)
    marks: dict = field(default_factory=dict)
    keys: list = field(default_factory=list)
    names: set = field(default_factory=set)  # data whose version or readers these touch


class Program:
    """A task program on a :class:`~taskbfs.runtime.Runtime`: the data directory plus submission.

    Parameters
    ----------
    runtime : Runtime
    policy : Policy, str, placement policy or callable, optional
        Placement policy for this program's tasks (default: hybrid with the default λ): a
        :class:`~taskbfs.runtime.Policy` or its kind name, any object with
        ``decide(size, impls, gpu_present, task_id) -> "smp" | "cuda"``, or a function
        ``f(size, task_id) -> device`` (see :mod:`taskbfs.runtime.policy`). A built-in
        policy travels with every batch as plain data; any other is pickled to the
        scheduler plugin once, here, and dropped again by :meth:`close`.
    name : str
        Prefix of the program id and of its task keys.

    Raises
    ------
    DeviceUnavailableError
        The policy is ``"gpu"`` or has ``needs_gpu`` set (or, at :meth:`submit`, a task has
        only a ``cuda`` implementation) and no worker advertises a GPU: such tasks would
        wait forever.
    InvalidParameterError
        ``policy`` is none of the above, or cannot be pickled.

    Examples
    --------
    >>> from taskbfs.runtime import Runtime, Program, Task
    >>> with Runtime() as rt:
    ...     p = Program(rt)
    ...     _ = p.put("x", 2)
    ...     _ = p.submit(Task("double", smp=lambda v: 2 * v), ins=["x"], outs=["y"])
    ...     p.get("y")
    4
    """

    def __init__(self, runtime, policy=None, name: str = "program"):
        self.runtime = runtime
        self.client = runtime.client
        self.policy = as_policy(policy)
        self.id = f"{name}-{uuid.uuid4().hex[:12]}"
        self._current: dict[str, object] = {}  # name -> Future, or key str while pending
        self._readers: dict[str, list] = {}  # name -> refs of tasks reading the current version
        # name -> ref of the task whose value holds the current version among its others
        self._made_by: dict[str, object] = {}
        self._counter = itertools.count()
        self._pending: _Pending | None = None
        self._batch_depth = 0
        self._gpu_checked = False
        self._closed = False
        if getattr(self.policy, "needs_gpu", False):
            self._require_gpu(f"placement policy {getattr(self.policy, 'kind', self.policy)!r}")
        self._registered = not isinstance(self.policy, Policy)
        if self._registered:
            register_policy(self.client, self.id, self.policy)
        self._messages: queue.Queue = queue.Queue()
        self._decided: list[dict] = []  # placements of the tasks run by resident calls
        self._kept: list[dict] = []  # their execution records, which came with their values
        self._records_out = False  # whether the workers may hold records of this program
        self._topic = message_topic(self.id)
        self._subscribed = False
        track = getattr(runtime, "_track", None)
        if track is not None:
            track(self)

    # ------------------------------------------------------------------ data
    def put(self, name: str, value, broadcast: bool = False) -> Future:
        """Make ``value`` the current version of ``name`` (scattered to the workers)."""
        future = self.client.scatter(value, broadcast=broadcast, hash=False)
        return self.put_future(name, future)

    def put_future(self, name: str, future: Future) -> Future:
        """Make an existing future the current version of ``name``."""
        self._current[name] = future
        self._readers[name] = []
        self._made_by.pop(name, None)
        return future

    def has(self, name: str) -> bool:
        """True if ``name`` has a version."""
        return name in self._current

    def call(self, task: Task, ins=(), kwargs: dict | None = None, size: int | None = None,
             task_id: int | None = None, tags: dict | None = None,
             timeout: float | None = None):
        """Run ``task`` now and return its value: on the worker that holds every one of
        ``ins`` and offers the device the policy gives it, by a resident call there
        (:mod:`taskbfs.runtime.resident`: no scheduler round trip), else submitted
        as usual with one output that is gathered. For a task whose value goes to the
        caller only (e.g. a whole program run as one task, its pieces included in it).

        Parameters are those of :meth:`submit`; ``timeout``: seconds to wait for the value
        (``TimeoutError`` after). The task's placement is in :meth:`finished` as a
        dispatched task's is.
        """
        ins = list(ins)
        _check_directions(task, ins, [], [])
        if SMP not in task.impls:
            self._require_gpu(f"task {task.name!r} (it has only a cuda implementation)")
        futures = [self.future(name) for name in ins]
        meta = {"program": self.id, "tags": dict(tags or {})}
        mark = {"size": size, "task": task_id, "impls": list(task.impls), "program": self.id,
                "tags": meta["tags"]}
        device = decide_device(self.policy, mark, size, self.runtime.resources(timeout))
        address = self.runtime.resident_site(futures, device, timeout)
        if address is not None:
            key = f"{task.name}-{self.id}-{next(self._counter)}"
            decision = decision_row(key, mark, device, time.time(), self.policy)
            try:
                value, records = self.runtime.residents.call(
                    address, key, device, task, meta, futures, dict(kwargs or {}), decision,
                    timeout)
            except NotResident:  # an input moved, or the worker is out of reach
                pass
            else:
                self._decided.append(decision)
                self._kept.extend(records)
                return value
        name = f"{task.name}-value-{next(self._counter)}"
        self.submit(task, ins=ins, outs=[name], kwargs=kwargs, size=size, task_id=task_id,
                    tags=tags)
        return self.get(name, timeout)

    def future(self, name: str) -> Future:
        """The current version of ``name`` as a Dask future (flushes pending submissions)."""
        self.flush()
        return self._version(name)

    def producer(self, name: str) -> Future:
        """The future of the task that made the current version of ``name``: that version
        itself, or for a task of several outputs the task whose value they are split from
        (one small task each, a round through the scheduler after it: waiting for the
        task itself skips that round; the outputs are still read as usual)."""
        self.flush()
        made_by = self._made_by.get(name)
        return made_by if isinstance(made_by, Future) else self._version(name)

    def get(self, name: str, timeout: float | None = None):
        """The value of the current version of ``name`` (waits for it; at most
        ``timeout`` seconds, else ``TimeoutError``)."""
        return self._gathered(self.future(name), timeout)

    def gather(self, names, timeout: float | None = None):
        """Values of several data, in one round trip (at most ``timeout`` seconds)."""
        self.flush()
        return self._gathered([self._version(n) for n in names], timeout)

    def _gathered(self, futures, timeout: float | None):
        if timeout is None:
            return self.client.gather(futures)
        # Client.gather has no timeout; its coroutine under the client's bounded sync does
        return self.client.sync(self.client._gather, futures, callback_timeout=timeout)

    def taskwait(self, names=None) -> None:
        """Wait until the current versions of ``names`` (default: all data) are computed.

        Raises the failing task's error, like OmpSs ``taskwait`` would surface it.
        """
        self.flush()
        targets = self._current if names is None else {n: self._version(n) for n in names}
        futures = [f for f in targets.values() if isinstance(f, Future)]
        with self.client.as_current():  # ``wait`` uses the default client; ours may not be it
            wait(futures)
        for f in futures:
            if f.status == "error":
                f.result()  # raises the task's exception

    def forget(self, name: str) -> None:
        """Drop ``name`` from the directory (its versions are released when unused)."""
        self._current.pop(name, None)
        self._readers.pop(name, None)
        self._made_by.pop(name, None)

    # ------------------------------------------------------------------ tasks
    @contextlib.contextmanager
    def batch(self):
        """Collect submissions and send them to the scheduler as one graph on exit."""
        self._batch_depth += 1
        if self._pending is None:
            self._pending = _Pending()
        try:
            yield self
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self.flush()

    def submit(
        self,
        task: Task,
        ins=(),
        outs=(),
        inouts=(),
        kwargs: dict | None = None,
        size: int | None = None,
        task_id: int | None = None,
        tags: dict | None = None,
        in_place: bool = False,
        size_from: str | None = None,
        follow=(),
        worker: str | None = None,
    ) -> str:
        """Create one task instance.

        Parameters
        ----------
        task : Task
        ins, outs, inouts : sequence of str
            Data names by direction. The implementation receives the values of
            ``ins`` then ``inouts`` as positional arguments and returns the values of
            ``outs`` then ``inouts`` (a single value when there is one).
        kwargs : dict, optional
            Extra keyword arguments (plain values, not data).
        size : int, optional
            Workload the placement policy reads (BFS: frontier vertices).
        task_id : int, optional
            Identity within the program (the fixed policy binds ids to the GPU).
        tags : dict, optional
            Copied into the trace record and the placement log.
        in_place : bool
            The implementation mutates its ``inouts`` in place: wait for their readers.
        size_from : str, optional
            The size is not known yet: an earlier task that this one depends on will
            send it with ``publish(..., sizes=(size_from, sizes))``, indexed by
            ``task_id``, and the scheduler plugin places this task when it arrives (before
            the task can start). Lets a program submit work ahead of the results that
            size it.
        follow : sequence of str, optional
            Keys of earlier tasks (returned by :meth:`submit`) whose outputs this task
            reads. When the plugin placed every one of them on the GPU, this task runs on
            the GPU worker too (with its ``cuda`` implementation, or its ``smp`` one on
            that worker's host thread), so that their outputs do not move between
            workers; otherwise the policy decides as usual. For a merge of GPU tasks'
            results (a BFS level's barrier).
        worker : str, optional
            Address of the worker that must run the task (it updates data kept there in
            place, e.g. state a worker owns): the policy is not asked, and the
            implementation is the ``smp`` one.

        Returns
        -------
        str
            The task's key.
        """
        ins, outs, inouts = list(ins), list(outs), list(inouts)
        _check_directions(task, ins, outs, inouts)
        if size_from is not None and task_id is None:
            raise InvalidParameterError(
                f"task {task.name!r}: size_from needs a task_id (the published sizes are "
                f"indexed by task id)")
        if SMP not in task.impls:
            self._require_gpu(f"task {task.name!r} (it has only a cuda implementation)")
        for name in ins + inouts:
            if name not in self._current:
                raise InvalidParameterError(
                    f"task {task.name!r} reads {name!r}, which has no version yet "
                    f"(put it or let an earlier task write it)"
                )
        key = f"{task.name}-{self.id}-{next(self._counter)}"
        meta = {"program": self.id, "tags": dict(tags or {})}
        args = [self._current[n] for n in ins + inouts]
        func, head = execute, [task, meta]
        if in_place:
            after = _unfinished([r for n in inouts for r in self._readers.get(n, [])])
            if after:  # positional: Dask resolves refs in args, not in the kwargs dict
                func, head = execute_after, [after, task, meta]
        self._subscribe()
        self._records_out = True
        pending = self._pending or _Pending()
        pending.graph[key] = (apply, func, [*head, *args], dict(kwargs or {}))
        pending.marks[key] = {"size": size, "impls": list(task.impls), "task": task_id,
                              "tags": meta["tags"]}
        if size_from is not None:
            pending.marks[key]["size_from"] = str(size_from)
        if follow:
            pending.marks[key]["follow"] = [str(k) for k in follow]
        if worker is not None:
            pending.marks[key]["worker"] = str(worker)
        pending.keys.append(key)

        for name in ins:
            self._readers[name].append(key)
        pending.names.update(ins)
        results = outs + inouts
        pending.names.update(results)
        for i, name in enumerate(results):
            version = key
            self._made_by.pop(name, None)
            if len(results) > 1:
                version = f"{key}-out{i}"
                pending.graph[version] = (operator.getitem, key, i)
                pending.keys.append(version)
                self._made_by[name] = key
            self._current[name] = version
            self._readers[name] = []
        if self._pending is None:
            self._send(pending)
        return key

    def _require_gpu(self, why: str) -> None:
        # without a GPU worker the plugin would leave such a task waiting for one forever
        if not self._gpu_checked:
            self.runtime.require_gpu(why)
            self._gpu_checked = True

    def flush(self) -> None:
        """Send pending submissions (no-op when nothing is pending)."""
        pending, self._pending = self._pending, (_Pending() if self._batch_depth else None)
        if pending is not None and pending.keys:
            self._send(pending)

    def _send(self, pending: _Pending) -> None:
        annotations = placement_annotations(self.id, pending.marks, self.policy)
        with dask.annotate(**annotations):
            by_key = self._submit_graph(pending)
        # Only the data this batch touched can hold its keys: no pass over the whole directory.
        for name in pending.names:
            ref = self._current.get(name)
            if isinstance(ref, str) and ref in by_key:
                self._current[name] = by_key[ref]
            made_by = self._made_by.get(name)
            if isinstance(made_by, str) and made_by in by_key:
                self._made_by[name] = by_key[made_by]
            refs = self._readers.get(name)
            if refs:
                self._readers[name] = _unfinished([by_key.get(r, r) if isinstance(r, str) else r
                                                   for r in refs])

    def _submit_graph(self, pending: _Pending) -> dict:
        """Send the batch; ``{key: Future}``.

        The batch's tasks are listed in program order, which is a valid execution order
        (every task comes after the tasks it reads), so that order is handed to the
        scheduler as the graph's priorities: it then skips ``dask.order`` and the thread
        hop that runs it, a cost paid on every dispatched level.
        Where the client's internal entry point differs, ``Client.get`` sends the graph
        and the scheduler orders it as usual.
        """
        graph = self._named_graph(pending)
        if _ORDERED_SUBMIT and _LLGExpr is not None:
            futures = self.client._graph_to_futures(
                graph, set(pending.keys),
                span_metadata=_SpanMetadata(collections=[]),  # the span is shared: list nothing
                internal_priority={key: i for i, key in enumerate(pending.keys)},
                fifo_timeout="60s")
            return {key: futures[key] for key in pending.keys}
        futures = self.client.get(graph, pending.keys, sync=False)
        return dict(zip(pending.keys, futures, strict=True))

    def _named_graph(self, pending: _Pending):
        """The batch as a dask expression named by the program, not by a hash of its content.

        Every key of a batch is already unique, so dask's deterministic tokenising of the
        whole graph (a noticeable share of a dispatched level's busy time) buys nothing. ``_determ_token`` is how dask's expressions accept a name
        given in advance; where that internal is missing, the plain graph is sent and dask
        names it by hashing as usual.
        """
        if _LLGExpr is None:
            return pending.graph
        return _LLGExpr(pending.graph, _determ_token=f"{self.id}-batch-{next(self._counter)}")

    def _version(self, name: str) -> Future:
        try:
            ref = self._current[name]
        except KeyError:
            raise InvalidParameterError(f"no datum named {name!r} in program {self.id}") from None
        if not isinstance(ref, Future):
            raise TaskBFSError(f"datum {name!r} is still pending; call flush() first")
        return ref

    # ------------------------------------------------------------------ trace
    def records(self, timeout: float | None = None) -> list[dict]:
        """The execution records of this program's finished tasks, from every worker
        (within ``timeout`` seconds, else ``TimeoutError``).

        Each record: key, name, device, worker, thread, start, stop and the task's tags.
        Records are removed from the workers once collected.
        """
        return self.finished(timeout)[0]

    def finished(self, timeout: float | None = None) -> tuple[list[dict], list[dict]]:
        """``(records, placements)``: :meth:`records` and the placement decisions of this
        program's tasks (:func:`~taskbfs.runtime.fetch_placements`), in one round trip to
        the scheduler (within ``timeout`` seconds); none when every task ran as a resident
        call (:meth:`call`: their records came with their values)."""
        if not self._records_out:
            return self._taken_back()
        return fetch_trace(self.client, self.id, timeout, self._decided, self._kept)

    def finished_later(self):
        """:meth:`finished` without waiting for it: a :class:`concurrent.futures.Future` of
        ``(records, placements)``, asked for now on the client's event loop (done already
        when every task ran as a resident call). The runtime's ``close()`` waits for
        those still on their way."""
        if not self._records_out:
            done = concurrent.futures.Future()
            done.set_result(self._taken_back())
            return done
        pending = fetch_trace_later(self.client, self.id, list(self._decided),
                                    list(self._kept))
        track = getattr(self.runtime, "_track_pending", None)
        if track is not None:
            track(pending)
        return pending

    def _taken_back(self) -> tuple[list[dict], list[dict]]:
        """The trace of a program whose tasks all ran as resident calls."""
        return list(self._kept), list(self._decided)

    # ------------------------------------------------------------------ messages
    def _subscribe(self) -> None:
        """Listen for this program's messages from now on: before its first submission
        (the subscription reaches the scheduler first, on the same stream), so that no
        message of its tasks is missed. A program whose tasks all ran as resident
        calls never listens: their messages go to the scheduler's listeners only, and
        none can arrive here after :meth:`close`."""
        if not self._subscribed:
            self.client.subscribe_topic(self._topic, self._on_message)
            self._subscribed = True

    def _on_message(self, event) -> None:
        _timestamp, message = event
        self._messages.put(message)

    def next_message(self, watch=(), timeout: float | None = None):
        """The next message a task of this program sent with :func:`~taskbfs.runtime.publish`.

        Parameters
        ----------
        watch : sequence of str
            Data whose producing tasks are expected to publish: if one of them fails,
            its error is raised here instead of waiting forever.
        timeout : float, optional
            Seconds to wait; None waits as long as needed.
        """
        self._subscribe()
        self.flush()
        futures = [self._version(name) for name in watch]
        waited = 0.0
        while True:
            try:
                return self._messages.get(timeout=MESSAGE_POLL_SECONDS)
            except queue.Empty:
                waited += MESSAGE_POLL_SECONDS
            for future in futures:
                if future.status in ("error", "cancelled"):
                    future.result()  # raises the task's error
            if timeout is not None and waited >= timeout:
                raise TimeoutError(f"no message from program {self.id} within {timeout} s")

    def close(self) -> None:
        """Release every version this program holds, stop listening for its messages and
        drop its user policy from the scheduler. Idempotent; :meth:`Runtime.close` closes
        the programs still open."""
        if self._closed:
            return
        self._closed = True
        try:
            self.flush()
        finally:
            self._current.clear()
            self._readers.clear()
            self._messages = queue.Queue()  # unread messages (a one-task search's) go
            try:
                if self._subscribed:
                    self.client.unsubscribe_topic(self._topic)
                # distributed's unsubscribe keeps the handler, and with it this program:
                # one per search for the client's life
                getattr(self.client, "_event_handlers", {}).pop(self._topic, None)
                if self._registered:
                    forget_policy(self.client, self.id)
            except Exception:  # the client may be closing already
                pass


def _unfinished(refs: list) -> list:
    """The readers an in-place write must still wait for: finished ones are dropped, so
    that a datum read at every level (a BFS's degree array) does not collect a list that
    grows with the levels and keeps each reader's result alive."""
    return [r for r in refs if not (isinstance(r, Future) and r.status == "finished")]


def _check_directions(task: Task, ins, outs, inouts) -> None:
    seen: dict[str, str] = {}
    for direction, names in (("in", ins), ("out", outs), ("inout", inouts)):
        for name in names:
            if not isinstance(name, str):
                raise InvalidParameterError(f"task {task.name!r}: data names must be str, got {name!r}")
            if name in seen:
                raise InvalidParameterError(
                    f"task {task.name!r} names {name!r} twice ({seen[name]} and {direction}); "
                    f"use inout for data read and written"
                )
            seen[name] = direction
