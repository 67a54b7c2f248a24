"""Resident calls: a task run on the worker that holds its data, with no scheduler round trip.

Returns
    :class:`Residents` (one per :class:`~taskbfs.runtime.Runtime`, its ``residents``):
    :meth:`Residents.call` runs one task of a program on a worker and returns the task's
    value, or raises :class:`NotResident` when it cannot (that worker does not hold every
    input, or cannot be reached from here); the caller then submits the task as usual
    (:meth:`~taskbfs.runtime.Program.call` does both).
Approach
    A task submitted through the scheduler waits before it starts and after it ends: client
    to scheduler, the placement plugin, scheduler to worker, the worker's queue, and back. A task whose
    inputs one worker already holds and whose value goes straight back to the caller (a
    program run as one task, its pieces included in it: OmpSs's ``final``) needs none of
    that. The runtime's worker plugin gives every worker a handler, :func:`run_resident`
    (:data:`RESIDENT_OP`), and the client calls it directly: client to worker and back,
    on the client's pooled connection to that worker. The handler reads the inputs from
    its worker's memory (from any of this process's workers when they share it),
    publishes the placement decision for the scheduler's listeners (the live page), and
    runs the implementation for the device the caller names on one of the worker's own
    threads, recorded as the worker records a task
    (:func:`~taskbfs.runtime.worker.execute_resident`): the trace cannot tell it from a
    dispatched task but for its placement, which the program keeps itself. The answer
    carries the value and the worker's records of the program (the call's own and those
    of the pieces it included), so that a program whose tasks all ran this way has its
    whole trace without asking the workers for it.
Faults
    A worker lost during a call fails it with ``CommClosedError`` (what a lost task's
    caller sees too). One that cannot be reached (gone already, or a client that reaches
    the scheduler only), or that answers without running the handler (a worker closing,
    or one just started whose plugin has not added it yet: distributed answers None),
    gives :class:`NotResident`, and the task goes through the scheduler. A timeout leaves the call running there, as it leaves a started task running;
    its answer, and the records it takes off the worker, then go to no one.
"""

from __future__ import annotations

import asyncio

from taskbfs.errors import TaskBFSError
from taskbfs.runtime.worker import execute_resident, message_topic, take_records

#: The worker handler of :func:`run_resident` (added by the runtime's worker plugin).
RESIDENT_OP = "taskbfs_run_resident"
#: What the handler answers when its worker does not hold an input.
MISSING = "missing"
#: Entry of the message that carries a resident call's placement decision to the scheduler
#: plugin's listeners (on the program's topic).
RESIDENT_KEY = "taskbfs_resident"


class NotResident(TaskBFSError):
    """The task cannot run as a resident call (its worker does not hold every input, or
    cannot be reached): submit it through the scheduler instead."""


async def run_resident(key: str, device: str, task, meta: dict, keys: list, kwargs: dict,
                       decision: dict, dask_worker=None) -> dict:
    """The worker handler :data:`RESIDENT_OP`: run ``task`` on ``device`` as the task
    ``key``, the values of ``keys`` (held here) its positional arguments, on one of the
    worker's threads. Answers ``{"status": "OK", "result": value, "records": records}``
    (this worker's records of the program, taken off it), ``{"status": MISSING}`` when an
    input is not held here, or ``{"status": "error", "exception": exc}`` (serialized)."""
    from distributed.protocol import to_serialize

    worker = dask_worker
    values = _held(worker, keys)
    if values is None:
        return {"status": MISSING}
    worker.log_event(message_topic(meta["program"]), {RESIDENT_KEY: decision})
    try:
        value = await asyncio.get_running_loop().run_in_executor(
            worker.executors["default"], execute_resident, worker, key, device, task, meta,
            values, kwargs)
    except Exception as exc:  # the caller raises it; the worker need not log it
        take_records(worker, meta["program"])  # a failed call has no trace to keep
        return {"status": "error", "exception": to_serialize(exc)}
    return {"status": "OK", "result": to_serialize(value),
            "records": to_serialize(take_records(worker, meta["program"]))}


def _held(worker, keys):
    """The values of ``keys`` in ``worker``'s memory, or in that of another worker of this
    process (workers that share a process share memory); None if one is not there."""
    from distributed import Worker

    values = []
    for key in keys:
        if key in worker.data:
            values.append(worker.data[key])
            continue
        others = [w for w in list(Worker._instances) if key in w.data]
        if not others:
            return None
        values.append(others[0].data[key])
    return values


class Residents:
    """A runtime's resident calls (see the module docstring).

    Parameters
    ----------
    client : distributed.Client
    """

    def __init__(self, client):
        self.client = client

    def call(self, address: str, key: str, device: str, task, meta: dict, futures,
             kwargs: dict, decision: dict, timeout: float | None = None):
        """``(value, records)``: the value of ``task`` run on the worker at ``address``
        (see :func:`run_resident`), its inputs ``futures`` (waited for if still being
        computed), within ``timeout`` seconds, and that worker's execution records of
        the task's program (taken off it).

        Raises
        ------
        NotResident
            The worker does not hold every input, or cannot be reached.
        CommClosedError
            The worker left during the call.
        TimeoutError
        """
        from distributed.client import _wait
        from distributed.comm import CommClosedError
        from distributed.protocol import to_serialize

        if any(f.status != "finished" for f in futures):  # e.g. a first search's bundle
            self.client.sync(_wait, futures, timeout=timeout)
        message = {"key": key, "device": device, "task": to_serialize(task), "meta": meta,
                   "keys": [f.key for f in futures], "kwargs": to_serialize(kwargs),
                   "decision": decision}
        try:
            answer = self.client.sync(self._send, address, message, callback_timeout=timeout)
        except CommClosedError as exc:
            raise CommClosedError(f"worker {address} left during task {key}: {exc}") from exc
        if not isinstance(answer, dict):  # no handler ran: a worker closing, or one just
            # started whose plugin has not added the handler yet (distributed answers None)
            raise NotResident(f"worker {address} has no handler for resident calls now")
        if answer["status"] == "error":
            raise answer["exception"]
        if answer["status"] != "OK":
            raise NotResident(f"worker {address} does not hold every input of task {key}")
        return answer["result"], answer["records"]

    async def _send(self, address: str, message: dict) -> dict:
        from distributed.comm import CommClosedError
        from distributed.core import send_recv

        pool = self.client.rpc
        try:
            comm = await pool.connect(address)
        except OSError as exc:  # not a lost call: none was made
            raise NotResident(f"worker {address} cannot be reached from here: {exc}") from None
        try:
            answer = await send_recv(comm, op=RESIDENT_OP, **message)
        except OSError as exc:  # CommClosedError is one
            comm.abort()
            raise CommClosedError(str(exc)) from exc
        except BaseException:
            comm.abort()
            raise
        pool.reuse(address, comm)
        return answer
