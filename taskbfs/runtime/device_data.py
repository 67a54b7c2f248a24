"""The device-data service of a GPU worker: the OmpSs device cache, independent of BFS.

Returns
    :class:`DeviceData` — data copied to a device, by datum name, under a byte budget:
    :meth:`~DeviceData.fetch` gives a datum's device copy (uploading it on a miss),
    :meth:`~DeviceData.scratch` a named working buffer, :meth:`~DeviceData.stats` the
    counters (hits, misses, bytes up and down, evictions). :func:`device_data` → this
    worker's service (made on first use, kept in its :func:`~taskbfs.runtime.worker_cache`).
Approach
    As the OmpSs runtime does for ``target device(cuda)`` tasks (Munguía, Bader & Ayguadé,
    HiPC 2012, Sec. VI.A), a datum a GPU task reads is copied to the device once and
    kept there for later tasks; when the copies would exceed the budget the least
    recently used datum not pinned by a running task (:meth:`~DeviceData.pinned`) is
    dropped first. Scratch buffers count in the budget too but are never evicted (a
    running kernel may hold them); they grow on demand and never shrink.
Encoding
    The service stores opaque device buffers made through an :class:`Allocator`
    (``upload(host array) -> device array``, ``empty(size, dtype)``, ``free(device
    array)``, ``free_memory()``): the runtime imports neither numba nor any kernel;
    ``taskbfs.kernels.gpu.NumbaAllocator`` is the allocator of the GPU tier. Datum names
    are any hashable value.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import OrderedDict
from typing import Protocol

import numpy as np

from taskbfs import config

#: Name of the service in a worker's :func:`~taskbfs.runtime.worker.worker_cache`.
SERVICE_NAME = "taskbfs.device_data"
#: Budget used when the allocator cannot say how much memory is free (numba's simulator).
UNKNOWN_MEMORY_BUDGET = 1 << 30



class Allocator(Protocol):
    """How the service gets and gives back device memory (implemented by kernels/)."""

    def upload(self, host: np.ndarray):
        """A new device array holding a copy of ``host``."""

    def empty(self, size: int, dtype):
        """A new device array of ``size`` entries (contents undefined)."""

    def write(self, device, start: int, host: np.ndarray) -> None:
        """Copy ``host`` into ``device[start:start + host.size]``."""

    def free(self, device) -> None:
        """Give ``device``'s memory back now (or as soon as the device allows)."""

    def free_memory(self) -> float:
        """Bytes free on the device now (``math.inf`` when it cannot say)."""


class DeviceData:
    """Named data resident on one device, least recently used evicted under a byte budget.

    Parameters
    ----------
    allocator : Allocator
    budget : int, optional
        Device bytes the data and the scratch buffers may take together. Default
        ``taskbfs.gpu.device-memory-fraction`` of the memory free at first use.
        The budget is a target: a datum larger than everything evictable is still
        uploaded (the device itself then says whether it fits).

    Attributes
    ----------
    hits, misses, evictions : int
        Look-ups served from device memory, uploads, and data dropped for room.
    bytes_up, bytes_down : int
        Bytes copied to the device (uploads, :meth:`count_up`) and back (:meth:`count_down`).
    lock : threading.RLock
        Held by a task while it uses device buffers of the service.
    """

    def __init__(self, allocator: Allocator, budget: int | None = None):
        self.allocator = allocator
        self.lock = threading.RLock()
        self._budget = budget
        self._data: OrderedDict = OrderedDict()  # name -> (device array, nbytes)
        self._scratch: dict = {}  # name -> device array
        self._pins: dict = {}  # name -> how many running tasks pin it
        self._data_bytes = 0
        self.hits = self.misses = self.evictions = 0
        self.bytes_up = self.bytes_down = 0

    # ------------------------------------------------------------------ sizes
    @property
    def budget(self) -> int:
        """Device bytes the service may use (fixed at first use)."""
        if self._budget is None:
            self._budget = default_budget(self.allocator)
        return self._budget

    @property
    def used_bytes(self) -> int:
        """Device bytes held: data plus scratch buffers."""
        return self._data_bytes + sum(int(b.nbytes) for b in self._scratch.values())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, name) -> bool:
        return name in self._data

    def names(self) -> list:
        """Names of the resident data, least recently used first."""
        return list(self._data)

    def stats(self) -> dict:
        """The counters and sizes (for traces, tests and benchmarks)."""
        return {"data": len(self._data), "hits": self.hits, "misses": self.misses,
                "evictions": self.evictions, "bytes_up": self.bytes_up,
                "bytes_down": self.bytes_down, "used_bytes": self.used_bytes,
                "budget": self.budget}

    # ------------------------------------------------------------------ data
    def get(self, name):
        """The device copy of ``name`` (a hit, made most recently used), or None."""
        with self.lock:
            entry = self._data.get(name)
            if entry is None:
                return None
            self._data.move_to_end(name)
            self.hits += 1
            return entry[0]

    def put(self, name, host):
        """Upload ``host`` as the device copy of ``name`` (replacing any); a miss.
        ``host``: an array, or a list of arrays of one dtype, uploaded one after another
        into one device array (joined there, not on the host)."""
        pieces = [np.ascontiguousarray(p) for p in host] if isinstance(host, list) \
            else [np.ascontiguousarray(host)]
        nbytes = sum(int(p.nbytes) for p in pieces)
        with self.lock:
            self.discard(name)
            self._make_room(nbytes)
            if len(pieces) == 1:
                device = self.allocator.upload(pieces[0])
            else:
                device = self.allocator.empty(sum(p.size for p in pieces), pieces[0].dtype)
                at = 0
                for piece in pieces:
                    if piece.size:
                        self.allocator.write(device, at, piece)
                    at += piece.size
            self._data[name] = (device, nbytes)
            self._data_bytes += nbytes
            self.misses += 1
            self.bytes_up += nbytes
            return device

    def fetch(self, name, host) -> tuple[object, int]:
        """The device copy of ``name``, uploaded from ``host`` on a miss.

        Parameters
        ----------
        name : hashable
        host : ndarray or callable
            The datum, or a function returning it (called on a miss only).

        Returns
        -------
        (device array, bytes uploaded now): 0 bytes on a hit.
        """
        with self.lock:
            device = self.get(name)
            if device is not None:
                return device, 0
            host = host() if callable(host) else host
            device = self.put(name, host)
            return device, int(self._data[name][1])

    def discard(self, name) -> bool:
        """Drop ``name``'s device copy (pinned or not); whether there was one."""
        with self.lock:
            entry = self._data.pop(name, None)
            if entry is None:
                return False
            self._data_bytes -= entry[1]
            self.allocator.free(entry[0])
            return True

    @contextlib.contextmanager
    def pinned(self, names):
        """Keep ``names`` resident (never evicted) while the ``with`` block runs (a task
        that reads them)."""
        names = list(names)
        with self.lock:
            for name in names:
                self._pins[name] = self._pins.get(name, 0) + 1
        try:
            yield self
        finally:
            with self.lock:
                for name in names:
                    left = self._pins.pop(name) - 1
                    if left:
                        self._pins[name] = left

    def _make_room(self, nbytes: int) -> None:
        """Evict least recently used unpinned data until ``nbytes`` more fit the budget."""
        budget = self.budget
        for name in list(self._data):
            if self.used_bytes + nbytes <= budget:
                return
            if name not in self._pins:
                self.discard(name)
                self.evictions += 1

    # ------------------------------------------------------------------ scratch
    def scratch(self, name, size: int, dtype):
        """A working buffer of at least ``size`` entries of ``dtype`` (grows, never shrinks;
        counted in the budget, never evicted)."""
        size, dtype = max(int(size), 1), np.dtype(dtype)
        with self.lock:
            current = self._scratch.get(name)
            if current is None or current.size < size or current.dtype != dtype:
                if current is not None:
                    self.allocator.free(self._scratch.pop(name))
                self._make_room(size * dtype.itemsize)
                current = self._scratch[name] = self.allocator.empty(size, dtype)
            return current

    # ------------------------------------------------------------------ traffic
    def count_up(self, nbytes: int) -> None:
        """Count ``nbytes`` a task copied to the device outside :meth:`put`."""
        self.bytes_up += int(nbytes)

    def count_down(self, nbytes: int) -> None:
        """Count ``nbytes`` a task copied back from the device."""
        self.bytes_down += int(nbytes)

    def release(self) -> None:
        """Drop every datum and scratch buffer (their device memory is given back); the
        worker's state calls it when the runtime forgets the worker."""
        with self.lock:
            for name in list(self._data):
                self.discard(name)
            for buffer in self._scratch.values():
                self.allocator.free(buffer)
            self._scratch.clear()


def default_budget(allocator: Allocator) -> int:
    """``taskbfs.gpu.device-memory-fraction`` of the memory ``allocator`` says is free now
    (:data:`UNKNOWN_MEMORY_BUDGET` when it cannot say)."""
    free = allocator.free_memory()
    if not math.isfinite(free):
        return UNKNOWN_MEMORY_BUDGET
    return int(config.get("gpu.device-memory-fraction") * free)


def device_data(allocator_factory, worker=None) -> DeviceData:
    """This worker's :class:`DeviceData`, made with ``allocator_factory()`` on first use.

    Parameters
    ----------
    allocator_factory : callable
        Returns the :class:`Allocator` of this worker's device (called once).
    worker : distributed.Worker, optional
        Default: the worker running this thread (outside a worker: one per thread).
    """
    from taskbfs.runtime.worker import worker_singleton

    return worker_singleton(SERVICE_NAME, lambda: DeviceData(allocator_factory()), worker)


__all__ = ["SERVICE_NAME", "Allocator", "DeviceData", "default_budget", "device_data"]
