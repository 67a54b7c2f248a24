"""Collectives between tasks that run at the same time on several workers: NCCL between GPU
workers, Dask's worker-to-worker comms elsewhere.

Returns
    Client side: :func:`communicator` ``(runtime, workers)`` → :class:`Communicator`, the
    workers' NCCL communicator when every one of them has a GPU and NCCL (made once per
    runtime and set of workers, torn down with the runtime or when the set changes), else one
    over Dask's comms. In the tasks, one per worker, running together:
    :meth:`Communicator.join` → :class:`Collective`, whose :meth:`~Collective.allgather`
    and :meth:`~Collective.reduce_into` every task calls in the same order.
Approach
    As raft-dask and cuGraph set NCCL up through Dask: the unique id is made on the first
    worker (``cupy.cuda.nccl.get_unique_id``), handed by Dask to every worker, and each
    worker joins with its rank at the same time (``NcclCommunicator(size, id, rank)``, in a
    thread of the worker: it waits for the others); the communicator stays in the worker,
    named, until the client tears it down. Without NCCL the same calls go through a
    :class:`~taskbfs.runtime.mailbox.Exchange` (worker to worker, no scheduler), so a
    program using them runs, and is tested, on CPU workers alike.
Encoding
    NCCL: device arrays (anything with ``__cuda_array_interface__``), the call enqueued on
    CuPy's current stream; Dask's comms: numpy arrays. An allgather's arrays have the same
    shape and dtype on every rank; its result stacks them, rank by rank.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import weakref

import numpy as np

from taskbfs.errors import TaskBFSError
from taskbfs.runtime.mailbox import Exchange
from taskbfs.runtime.plugin import workers_of

#: The NCCL communicators of this process's workers, by (name, worker address).
_joined: dict[tuple[str, str], object] = {}
_joined_lock = threading.Lock()
#: The client side: per runtime, its communicators by their workers ((address, Dask id) each).
_made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_names = itertools.count()

#: NCCL's names of the dtypes a collective carries.
_NCCL_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
               "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
               "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}


class Communicator:
    """The client's handle of the collectives between ``workers`` (rank = index):
    ``nccl`` names their NCCL communicator, None when they trade over Dask's comms."""

    def __init__(self, workers: list[str], nccl: str | None):
        self.workers, self.nccl = list(workers), nccl

    def join(self, me: int, channel: str, timeout: float | None = None) -> Collective:
        """In the task of rank ``me`` (running on ``workers[me]``): its :class:`Collective`;
        ``channel`` names the program's exchange (unique per run) for Dask's comms."""
        return Collective(self, me, channel, timeout)

    def __repr__(self) -> str:
        how = f"NCCL {self.nccl}" if self.nccl else "Dask comms"
        return f"<Communicator {len(self.workers)} workers over {how}>"


class Collective:
    """One rank's side of a :class:`Communicator`, in its running task."""

    def __init__(self, communicator: Communicator, me: int, channel: str,
                 timeout: float | None = None):
        self.rank, self.size = int(me), len(communicator.workers)
        self.on_gpu = communicator.nccl is not None
        self._round = 0
        if self.on_gpu:
            from distributed import get_worker

            with _joined_lock:
                self._nccl = _joined.get((communicator.nccl, get_worker().address))
            if self._nccl is None:
                raise TaskBFSError(f"NCCL communicator {communicator.nccl!r} is not on this "
                                   "worker (it left, or the runtime was closed)")
        else:
            self._exchange = Exchange(channel, communicator.workers, me, timeout=timeout)

    def allgather(self, local):
        """Every rank's ``local`` stacked by rank (shape ``(size, *local.shape)``)."""
        if not self.on_gpu:
            return np.stack(self._trade(local))
        import cupy

        local = cupy.ascontiguousarray(cupy.asarray(local))
        out = cupy.empty((self.size, *local.shape), dtype=local.dtype)
        self._nccl.allGather(local.data.ptr, out.data.ptr, local.size, _nccl_type(local.dtype),
                             cupy.cuda.get_current_stream().ptr)
        return out

    def reduce_into(self, array, op: str) -> None:
        """``array`` (this rank's; a device array with NCCL, else numpy) becomes the
        element-wise ``op`` (``"sum"``, ``"max"`` or ``"or"``, bitwise) of every rank's,
        in place. NCCL has no bitwise or: its ``"or"`` is an allgather and ``size - 1``
        ors on the device."""
        if op not in _NUMPY_OPS:
            raise TaskBFSError(f"no collective {op!r}: one of {sorted(_NUMPY_OPS)}")
        if self.size == 1:  # nothing to combine
            return
        if not self.on_gpu:
            array[...] = _NUMPY_OPS[op].reduce(np.stack(self._trade(array)), axis=0)
            return
        import cupy
        from cupy.cuda import nccl

        here = cupy.asarray(array)
        stream = cupy.cuda.get_current_stream().ptr
        if op == "or":
            gathered = self.allgather(here)
            here[...] = gathered[0]
            for other in gathered[1:]:
                cupy.bitwise_or(here, other, out=here)
            return
        nccl_op = nccl.NCCL_SUM if op == "sum" else nccl.NCCL_MAX
        self._nccl.allReduce(here.data.ptr, here.data.ptr, here.size, _nccl_type(here.dtype),
                             nccl_op, stream)

    def close(self) -> None:
        """This rank's part done (the NCCL communicator stays for the next program)."""
        if not self.on_gpu:
            self._exchange.close()

    def _trade(self, local: np.ndarray) -> list:
        self._round += 1
        return self._exchange.all_to_all(("collective", self._round), [local] * self.size)


#: The numpy reductions of :meth:`Collective.reduce_into` over Dask's comms.
_NUMPY_OPS = {"sum": np.add, "max": np.maximum, "or": np.bitwise_or}


def _nccl_type(dtype) -> int:
    from cupy.cuda import nccl

    name = _NCCL_TYPES.get(np.dtype(dtype).name)
    if name is None:
        raise TaskBFSError(f"NCCL carries no {np.dtype(dtype).name} arrays")
    return getattr(nccl, name)


# ====================================================================== the client's side
def communicator(runtime, workers: list[str], timeout: float = 60.0,
                 present: dict | None = None) -> Communicator:
    """The collectives between ``workers`` (their order gives the ranks) on ``runtime``:
    NCCL when every one of them has a GPU of its own and NCCL, else Dask's comms. An NCCL
    communicator is made once per runtime and set of worker processes and reused; another
    set (a worker left, joined, or was restarted at the same address) tears the earlier
    one down first. ``present``: the scheduler's workers (``workers_of``) when the caller
    has just asked for them."""
    workers = list(workers)
    made = _made.setdefault(runtime, {})
    present = workers_of(runtime.client) if present is None else present
    key = tuple((w, present.get(w, {}).get("id")) for w in workers)
    if key in made:
        return made[key]
    devices = list(_nccl_devices(runtime, workers).values())
    # NCCL joins one rank per GPU: workers sharing a GPU trade over Dask's comms
    if len(workers) < 2 or None in devices or len(set(devices)) < len(devices):
        return made.setdefault(key, Communicator(workers, None))
    close_communicators(runtime)
    made = _made.setdefault(runtime, {})
    name = f"taskbfs-nccl-{next(_names)}"
    client = runtime.client
    first = client.run(_unique_id, workers=workers[:1])[workers[0]]
    ranks = {address: rank for rank, address in enumerate(workers)}
    client.run(_join_nccl, name, first, ranks, timeout, workers=workers)
    made[key] = Communicator(workers, name)
    return made[key]


def close_communicators(runtime) -> None:
    """Tear down the NCCL communicators ``runtime`` made (on the workers still there)."""
    for communicator in _made.pop(runtime, {}).values():
        if communicator.nccl is None:
            continue
        try:
            runtime.client.run(_leave_nccl, communicator.nccl, workers=communicator.workers,
                               on_error="ignore")
        except Exception:  # noqa: BLE001 - a closing cluster: its workers drop theirs
            pass


def abort_communicators(runtime, workers: list[str]) -> None:
    """Abort the NCCL communicators ``runtime`` made that join any of ``workers`` (a program
    using them failed, a rank maybe lost): on the workers still there, a rank waiting in a
    collective for a lost one stops waiting (``ncclCommAbort``); the next
    :func:`communicator` call makes a new one."""
    made = _made.get(runtime, {})
    present = set(workers_of(runtime.client))
    for key in [k for k, c in made.items() if c.nccl and set(c.workers) & set(workers)]:
        communicator = made.pop(key)
        alive = [w for w in communicator.workers if w in present]
        with contextlib.suppress(Exception):  # a closing cluster: its workers drop theirs
            runtime.client.run(_abort_nccl, communicator.nccl, workers=alive, on_error="ignore")


def _nccl_devices(runtime, workers: list[str]) -> dict:
    gpus = set(runtime.gpu_workers())
    if not set(workers) <= gpus:
        return {w: None for w in workers}
    return runtime.client.run(_nccl_device, workers=workers)


# ====================================================================== on the workers
def _nccl_device() -> str | None:
    """The PCI bus id of the GPU this worker would join an NCCL communicator with (CuPy
    with NCCL and a GPU), else None."""
    try:
        import cupy
        from cupy.cuda import nccl

        if not nccl.available or cupy.cuda.runtime.getDeviceCount() == 0:
            return None
        return cupy.cuda.Device().pci_bus_id
    except Exception:  # noqa: BLE001 - no CuPy, no NCCL build or no device: not here
        return None


def _unique_id():
    from cupy.cuda import nccl

    return nccl.get_unique_id()


async def _join_nccl(name: str, unique_id, ranks: dict, timeout: float,
                     dask_worker=None) -> None:
    """Join communicator ``name`` as this worker's rank, in a thread (it waits for the
    other ranks, which join at the same time)."""
    from cupy.cuda import nccl

    def join():
        return nccl.NcclCommunicator(len(ranks), unique_id, ranks[dask_worker.address])

    loop = asyncio.get_running_loop()
    made = await asyncio.wait_for(loop.run_in_executor(None, join), timeout)
    with _joined_lock:
        _joined[name, dask_worker.address] = made


def _abort_nccl(name: str, dask_worker=None) -> None:
    with _joined_lock:
        made = _joined.pop((name, dask_worker.address), None)
    if made is not None:
        made.abort()


def _leave_nccl(name: str, dask_worker=None) -> None:
    with _joined_lock:
        made = _joined.pop((name, dask_worker.address), None)
    if made is not None:
        made.destroy()


__all__ = ["Collective", "Communicator", "abort_communicators", "close_communicators",
           "communicator"]
