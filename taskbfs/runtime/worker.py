"""The worker half of a task: choose the implementation, run it, record what happened.

The scheduler plugin has already decided the device by restricting the task to the
``GPU`` or ``CPU`` resource; :func:`execute` reads that restriction back from the
worker's own task state and calls the matching implementation. Records stay on the
worker (no extra messages per task) until the scheduler asks every worker for them at
the end of a program (:func:`collect_records`, the worker handler :data:`COLLECT_OP`). :func:`include` runs a function as an *included* task of
the running one (OmpSs: the tasks a ``final`` task creates run at once in its thread).
:func:`worker_cache` is the per-worker store that the OmpSs device cache
(:mod:`taskbfs.runtime.device_data`) lives in; it is dropped, and the device memory given
back, when the last runtime leaves the cluster (:func:`forget_worker_state`).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from collections import defaultdict

from taskbfs.errors import TaskBFSError, TaskExecutionError
from taskbfs.runtime.task import CUDA, SMP, Task

_records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Per worker, the last programs whose records were collected at their end
#: (:func:`collect_records`, oldest first): a record of one that comes later (a task that
#: ended after its program's trace was read) is dropped, not kept for no one.
_collected: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_COLLECTED_KEPT = 256
_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_make_lock = threading.RLock()  # re-entrant: a make() may ask for another singleton
_included = itertools.count()  # numbers included tasks' keys
_thread_pools: dict = {}  # threads -> ThreadPoolExecutor (thread_pool)
#: The program of the task running in this thread (for :func:`publish`).
_running = threading.local()


def _current_worker():
    try:
        from distributed import get_worker

        return get_worker()
    except ValueError:  # not inside a worker (e.g. a direct call in a test)
        return None


def worker_threads() -> int:
    """How many threads the running task's worker has (the cores outside a worker)."""
    worker = _current_worker()
    if worker is None:
        return os.cpu_count() or 1
    return int(worker.state.nthreads)


def cores_per_thread() -> int:
    """The host's cores over the running task's worker's threads (at least 1): how many
    threads one task may use without crowding its worker's other tasks (all the cores
    outside a worker)."""
    return max(1, (os.cpu_count() or 1) // worker_threads())


def current_device(worker=None) -> str:
    """The device the scheduler chose for the task running in this thread."""
    from distributed.worker import thread_state

    worker = worker or _current_worker()
    key = getattr(thread_state, "key", None)
    if worker is None or key is None:
        return SMP
    ts = worker.state.tasks.get(key)
    restrictions = getattr(ts, "resource_restrictions", None) or {}
    return CUDA if "GPU" in restrictions else SMP


def execute(task: Task, meta: dict, *args, **kwargs):
    """Run ``task`` on this worker with the implementation for its placed device.

    Parameters
    ----------
    task : Task
    meta : dict
        ``{"program", "tags"}``: where the trace record goes and what it carries.
    *args, **kwargs
        Passed to the implementation.
    """
    worker = _current_worker()
    return _run(worker, current_device(worker), task, meta, args, kwargs)


def execute_resident(worker, key: str, device: str, task: Task, meta: dict, args, kwargs):
    """:func:`execute` for a task that no scheduler placed (a resident call, see
    :mod:`taskbfs.runtime.resident`): run in this thread of ``worker`` as the task ``key``
    on ``device``."""
    from distributed.worker import _worker_cvar, thread_state

    previous = getattr(thread_state, "key", None)
    thread_state.key = key  # included tasks name it as their parent
    token = _worker_cvar.set(worker)  # where get_worker() looks, as for a task or an actor
    try:
        return _run(worker, device, task, meta, args, kwargs)
    finally:
        _worker_cvar.reset(token)
        thread_state.key = previous


def _run(worker, device: str, task: Task, meta: dict, args, kwargs):
    """Call ``task``'s implementation for ``device`` and keep its trace record."""
    from distributed.worker import thread_state

    impl = task.implementation(device)
    if impl is None:  # a host task placed on the GPU worker (``submit(..., follow=...)``)
        impl, device = task.smp, SMP
    start = time.time()
    _running.program = meta["program"]
    try:
        result = impl(*args, **kwargs)
    except TaskBFSError:
        raise
    except Exception as exc:
        where = worker.address if worker is not None else "local"
        raise TaskExecutionError(
            f"task {task.name!r} ({getattr(thread_state, 'key', '?')}) failed on {where} "
            f"[{device}]: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        _running.program = None
    _record(worker, meta["program"], str(getattr(thread_state, "key", "")), task.name, device,
            start, time.time(), meta.get("tags", {}))
    return result


def _record(worker, program: str, key: str, name: str, device: str, start: float, stop: float,
            tags: dict) -> None:
    """Keep a trace record on ``worker`` (None: not in a worker, nothing kept)."""
    if worker is None:
        return
    record = {"key": key, "name": name, "device": device, "worker": worker.address,
              "thread": threading.get_ident(), "start": start, "stop": stop, **tags}
    with _lock:
        if program not in _collected.get(worker, ()):
            _records.setdefault(worker, defaultdict(list))[program].append(record)


def include(name: str, func, tags: dict, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now, in this thread, as a task included in the running one.

    OmpSs runs the tasks that a ``final`` task creates at once, in the creating thread,
    with no dependence tracking and no scheduling; this is that, for a task function of a
    program: a task whose inputs are all at hand can do small pieces of work itself
    instead of paying the scheduler for each. The piece gets a trace record like a
    task's (``name``, device ``smp``, this worker and thread, start and stop, ``tags``) with
    ``included`` set to the key of the task that ran it. Outside a running task it is a
    plain call.

    Parameters
    ----------
    name : str
        The name the trace gives it (as a :class:`Task` name would be).
    func : callable
        A host function (included work runs on the host).
    tags : dict
        Copied into the record.

    Returns
    -------
    What ``func`` returns.
    """
    return include_each(name, func, [(tags, args, kwargs)])[0]


def include_each(name: str, func, calls, executor=None, device: str = SMP) -> list:
    """Several included tasks of the running one (see :func:`include`), side by side on
    ``executor``'s threads when one is given (as the running task's worker would run
    them as tasks on its threads), else one after another in this thread.

    Parameters
    ----------
    name : str
        The name the trace gives each.
    func : callable
        A host function, called once per entry of ``calls``; it must release the GIL to
        gain from the threads (numba's ``nogil`` kernels do), and must not
        :func:`publish` (a message belongs to the running task's thread).
    calls : sequence of (tags, args) or (tags, args, kwargs)
        One entry per included task: its trace tags and the arguments of ``func``.
    executor : concurrent.futures.Executor, optional
        Where to run them (not one whose threads are waiting on this call).
    device : {"smp", "cuda"}
        The device their records name: "cuda" for host code that runs GPU kernels, in a
        task placed on a GPU worker.

    Returns
    -------
    list
        What each call returned, in the order of ``calls``.
    """
    from distributed.worker import thread_state

    program = getattr(_running, "program", None)
    parent = str(getattr(thread_state, "key", ""))
    worker = _current_worker() if program is not None else None

    def run(call):
        tags, args, kwargs = (*call, {}) if len(call) == 2 else call
        start = time.time()
        result = func(*args, **kwargs)
        if program is not None:
            _record(worker, program, f"{parent}/{name}-{next(_included)}", name, device, start,
                    time.time(), {**tags, "included": parent})
        return result

    if executor is None or len(calls) < 2:
        return [run(call) for call in calls]
    return list(executor.map(run, calls))


def thread_pool(threads: int | None = None):
    """This process's pool of ``threads`` threads (default: one per core) for work that a
    running task spreads over threads (:func:`include_each`'s ``executor``,
    :func:`on_threads`); made on first use, one per size, kept for the process."""
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or os.cpu_count() or 1
    with _lock:
        if threads not in _thread_pools:
            _thread_pools[threads] = ThreadPoolExecutor(threads,
                                                        thread_name_prefix="taskbfs-level")
        return _thread_pools[threads]


#: Entries of work (arcs, vertices, records) a thread is given at the least: handing a
#: thread its share costs tens of microseconds, which a kernel spends on some ten
#: thousand entries.
ENTRIES_PER_THREAD = 1 << 14


def threads_for(entries: int, most: int) -> int:
    """How many threads work of ``entries`` entries is worth: one per
    :data:`ENTRIES_PER_THREAD`, from 1 to ``most``."""
    return max(1, min(int(most), int(entries) // ENTRIES_PER_THREAD))


def on_threads(work, threads: int, pool_size: int | None = None) -> list[int]:
    """Call ``work(k)`` for k in 0 .. threads-1: 0 in this thread, the others on the
    :func:`thread_pool` of ``pool_size`` threads (default ``threads``); the threads'
    idents by k."""
    idents = [threading.get_ident()] * threads

    def run(k):
        idents[k] = threading.get_ident()
        work(k)

    others = [thread_pool(pool_size or threads).submit(run, k) for k in range(1, threads)]
    run(0)
    for f in others:
        f.result()
    return idents


def record_included(name: str, rows, device: str = SMP) -> None:
    """Trace records of included tasks of the running one that some other code ran and
    timed itself (a compiled executor that runs many pieces on its threads with no Python
    between them): as :func:`include_each` records them, with the given threads and times.

    Parameters
    ----------
    name : str
        The name the trace gives each.
    rows : iterable of (tags, thread, start, stop)
        One per piece: its trace tags, the thread that ran it (``threading.get_ident()``)
        and its start and stop (``time.time()`` seconds).
    device : {"smp", "cuda"}
    """
    from distributed.worker import thread_state

    program = getattr(_running, "program", None)
    worker = _current_worker() if program is not None else None
    if worker is None:
        return
    parent = str(getattr(thread_state, "key", ""))
    address = worker.address
    records = [{"key": f"{parent}/{name}-{next(_included)}", "name": name, "device": device,
                "worker": address, "thread": thread, "start": start, "stop": stop,
                **tags, "included": parent}
               for tags, thread, start, stop in rows]
    with _lock:
        if program not in _collected.get(worker, ()):
            _records.setdefault(worker, defaultdict(list))[program].extend(records)


def execute_after(after: list, task: Task, meta: dict, *args, **kwargs):
    """:func:`execute`, once the tasks in ``after`` have finished (write-after-read order).

    ``after`` is a *positional* argument so that Dask turns the futures / keys in it into
    dependencies (values in a task's keyword dict are passed through literally, unresolved).
    Their results are ignored.
    """
    return execute(task, meta, *args, **kwargs)


#: Prefix of the Dask event topics that carry programs' published messages.
TOPIC_PREFIX = "taskbfs-messages-"
#: Entry of a published dict message that carries sizes for the placement plugin.
SIZES_KEY = "taskbfs_sizes"


def message_topic(program: str) -> str:
    """The Dask event topic that carries a program's published messages."""
    return TOPIC_PREFIX + program


def program_of_topic(topic: str) -> str | None:
    """Inverse of :func:`message_topic` (None for other topics)."""
    return topic[len(TOPIC_PREFIX):] if topic.startswith(TOPIC_PREFIX) else None


def publish(message, sizes: tuple[str, list] | None = None) -> None:
    """Send a small message from the running task straight to its program's client.

    For the few numbers a client needs to decide its next submissions (e.g. a level's
    frontier counts): the message travels worker → scheduler → client as a Dask event,
    with no extra task and no gather round trip. ``message`` must be msgpack-serialisable
    (dicts, lists, str, int, float); Dask adds a ``"worker"`` entry (the sender's address)
    to a dict message. Outside a worker it is dropped.

    Parameters
    ----------
    message : dict or plain value
    sizes : (label, list of int), optional
        Workload sizes, by task id, of tasks already submitted with ``size_from=label``
        (see :meth:`~taskbfs.runtime.Program.submit`): the scheduler plugin reads them on
        the way and places those tasks, which must depend on the publishing task (the
        message reaches the scheduler before the task's completion does). ``message``
        must then be a dict; the sizes travel in it under ``SIZES_KEY``.
    """
    program = getattr(_running, "program", None)
    worker = _current_worker()
    if program is None or worker is None:
        return
    if sizes is not None:
        if not isinstance(message, dict):
            raise TypeError("publish(..., sizes=...) needs a dict message")
        label, values = sizes
        message = {**message, SIZES_KEY: {"label": str(label), "sizes": [int(v) for v in values]}}
    worker.log_event(message_topic(program), message)


#: The worker handler of :func:`collect_records` (added by the runtime's worker plugin).
COLLECT_OP = "taskbfs_collect_records"


def collect_records(program: str, dask_worker=None) -> dict:
    """Remove this worker's records of ``program`` and return them as ``client.run``
    would: ``{"status": "OK", "result": records}`` (serialized), and drop its records that
    come later. The worker handler :data:`COLLECT_OP`: not ``client.run``, which leaves a
    log record on the worker per call (kept up to ``distributed.admin.log-length``,
    10,000: ~1 KiB a search)."""
    from distributed.protocol import to_serialize

    with _lock:
        done = _collected.setdefault(dask_worker, {})  # insertion-ordered: oldest first
        done[program] = None
        if len(done) > _COLLECTED_KEPT:
            del done[next(iter(done))]
    return {"status": "OK", "result": to_serialize(take_records(dask_worker, program))}


def take_records(worker, program: str) -> list[dict]:
    """Remove ``worker``'s records of ``program`` and return them."""
    with _lock:
        return (_records.get(worker) or {}).pop(program, [])


#: The worker handler of :func:`peek_records` (added by the runtime's worker plugin).
RECORDS_OP = "taskbfs_peek_records"


def peek_records(program: str, starts: dict, limit: int, dask_worker=None):
    """This worker's records of ``program`` from number ``starts[address]`` on (0 if
    absent), the latest ``limit`` of them, left in place: ``{"total": records so far,
    "records": copies}`` (serialized). The worker handler :data:`RECORDS_OP`, for a
    watcher following a running program."""
    from distributed.protocol import to_serialize

    with _lock:
        kept = (_records.get(dask_worker) or {}).get(program, ())
        first = max(int(starts.get(dask_worker.address, 0)), len(kept) - max(int(limit), 0))
        return {"total": len(kept), "records": to_serialize([dict(r) for r in kept[first:]])}


def worker_cache(worker=None) -> dict:
    """A dict private to this worker (device caches): it lives as long as the worker, or
    until the last runtime on its cluster closes (:func:`forget_worker_state`)."""
    worker = worker or _current_worker()
    if worker is None:
        return _caches.setdefault(threading.current_thread(), {})
    with _lock:
        return _caches.setdefault(worker, {})


def worker_singleton(name: str, make, worker=None):
    """This worker's one ``name`` in its :func:`worker_cache`, made by ``make()`` at the
    first call (once, whatever the threads asking at the same time)."""
    store = worker_cache(worker)
    value = store.get(name)
    if value is None:
        with _make_lock:
            value = store.get(name)
            if value is None:
                value = store[name] = make()
    return value


def forget_worker_state(worker) -> None:
    """Drop what the runtime keeps for ``worker``: its :func:`worker_cache` and the trace
    records no one collected (the runtime's worker plugin does this when it is removed).
    A cached service with a ``release()`` method (the device-data service) gives back
    what it holds outside this process's memory now."""
    with _lock:
        cache = _caches.pop(worker, None) or {}
        _records.pop(worker, None)
        _collected.pop(worker, None)
    for service in cache.values():
        release = getattr(service, "release", None)
        if callable(release):
            release()
