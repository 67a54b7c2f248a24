"""Page-locked host buffers that a GPU worker copies search results into, reused across searches.

Returns
    :class:`PinnedPool` ``.take(n, dtype)`` → a numpy array of ``n`` items in page-locked
    (pinned) host memory, or None when the pool's byte budget is spent (the caller then
    copies into ordinary memory). :func:`pinned_pool` → this process's pool.
Approach
    A GPU search copies its result back into arrays that live as long as the caller keeps
    them. Copied into fresh pageable arrays, that is slow (the kernel
    maps and zeroes every new page as the copy first touches it); into pinned memory that is
    already mapped it is many times faster. Pinning is slow itself, so buffers are kept and
    reused: each taken array carries a ``weakref.finalize`` that hands its buffer back to
    the pool when the array, and every array derived from it, is garbage (the search's
    futures released). Buffers come in power-of-two sizes, so a buffer serves any later
    request of its size class.
Encoding
    Buffers are uint8 numba ``pinned_array`` s, lent as arrays of the requested dtype
    made with ``np.frombuffer``, whose views all keep the lent array alive; the pool
    holds at most :data:`_POOL_BYTES` in all.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: The smallest buffer (bytes): smaller outputs share this size class.
MIN_BUFFER_BYTES = 1 << 16
#: Bytes a process's pool may pin in all: room for two results of a scale-26 search (the
#: caller's last one and the next); 0 turns the pool off.
_POOL_BYTES = 1 << 32


class PinnedPool:
    """Pinned host buffers by power-of-two size class, lent out as arrays and taken back
    when those arrays are garbage.

    Parameters
    ----------
    budget : int, optional
        Bytes of pinned memory the pool may hold in all (lent and free). Default
        :data:`_POOL_BYTES` at each request.

    Attributes
    ----------
    allocated_bytes : int
        Pinned bytes held (lent or free).
    reused, allocated, refused : int
        Requests served by a free buffer, by a new one, and refused (budget spent).
    """

    def __init__(self, budget: int | None = None):
        self._budget = budget
        self._free: dict[int, list] = {}
        # A finalizer may run inside ``take`` (the garbage collector runs between any two
        # bytecodes): the lock must be re-entrant.
        self._lock = threading.RLock()
        self.allocated_bytes = 0
        self.reused = self.allocated = self.refused = 0
        self._growing: dict[int, int] = {}  # size class -> buffers pinned in the background

    @property
    def budget(self) -> int:
        return int(_POOL_BYTES if self._budget is None else self._budget)

    @property
    def free_bytes(self) -> int:
        """Pinned bytes held and not lent out."""
        with self._lock:
            return sum(size * len(bufs) for size, bufs in self._free.items())

    def take(self, n: int, dtype, allocate: bool = True) -> np.ndarray | None:
        """An array of ``n`` items of ``dtype`` in pinned memory (contents undefined), or
        None when the budget does not allow one (or, with ``allocate`` False, when no free
        buffer of its size is at hand)."""
        dtype = np.dtype(dtype)
        size = _class_of(n, dtype)
        buffer = self._reuse(size)
        if buffer is None and allocate:
            buffer = self._allocate(size)
        if buffer is None:
            return None
        return self._lend(buffer, size, n, dtype)

    def free_count(self, n: int, dtype) -> int:
        """Free buffers (held, not lent) that would serve ``n`` items of ``dtype``, and
        those being pinned."""
        return self._free_or_growing(_class_of(n, dtype))

    def _free_or_growing(self, size: int) -> int:
        with self._lock:
            return len(self._free.get(size, ())) + self._growing.get(size, 0)

    def hold_free(self, sizes, dtype) -> None:
        """Pin buffers now, on this thread, until one free buffer is held for each array of
        ``sizes`` (item counts of ``dtype``) at once: arrays of one size class count
        together against that class's free buffers."""
        needed = Counter(_class_of(n, dtype) for n in sizes)
        for size, count in needed.items():
            for _ in range(count - self._free_or_growing(size)):
                self._grow(self._growing_class(size))

    def grow_later(self, n: int, dtype) -> None:
        """Pin a free buffer for ``n`` items of ``dtype`` on a background thread (pinning
        is slower than the copy it speeds up): one per request that found none."""
        _grower().submit(self._grow, self._growing_class(_class_of(n, dtype)))

    def _growing_class(self, size: int) -> int:
        """``size`` (a size class), counted as growing."""
        with self._lock:
            self._growing[size] = self._growing.get(size, 0) + 1
        return size

    def _grow(self, size: int) -> None:
        try:
            buffer = self._allocate(size)
            if buffer is not None:
                self._give_back(size, buffer)
        finally:
            with self._lock:
                self._growing[size] -= 1

    def _lend(self, buffer, size: int, n: int, dtype: np.dtype) -> np.ndarray:
        # Through a memoryview, so that numpy makes ``array`` the base of every view taken
        # of it (a view of ``buffer`` itself would skip it): the buffer comes back only
        # when no array that reads it is left.
        array = np.frombuffer(memoryview(buffer[: int(n) * dtype.itemsize]), dtype=dtype)
        weakref.finalize(array, self._give_back, size, buffer)
        return array

    def clear(self) -> None:
        """Drop the free buffers (lent ones come back, and stay, when their arrays die)."""
        with self._lock:
            for size, buffers in self._free.items():
                self.allocated_bytes -= size * len(buffers)
            self._free.clear()

    def _reuse(self, size: int):
        with self._lock:
            buffers = self._free.get(size)
            if buffers:
                self.reused += 1
                return buffers.pop()
        return None

    def _allocate(self, size: int):
        with self._lock:
            over = self.allocated_bytes + size - self.budget
            if 0 < over <= self.free_bytes:  # the lock is re-entrant
                self._drop_free(over)
            if self.allocated_bytes + size > self.budget:
                self.refused += 1
                return None
            self.allocated_bytes += size
            self.allocated += 1
        from numba import cuda

        return cuda.pinned_array(size, dtype=np.uint8)

    def _drop_free(self, nbytes: int) -> None:
        """Release free buffers, largest first, until ``nbytes`` are freed: free buffers of
        one size class must not keep the others out (a scale-22 search's results would
        otherwise fill the budget that the scale-24 ones need)."""
        for size in sorted(self._free, reverse=True):
            buffers = self._free[size]
            while buffers and nbytes > 0:
                buffers.pop()
                self.allocated_bytes -= size
                nbytes -= size

    def _give_back(self, size: int, buffer) -> None:
        with self._lock:
            self._free.setdefault(size, []).append(buffer)


def _class_of(n: int, dtype) -> int:
    """The size class of an array of ``n`` items of ``dtype``."""
    return _size_class(max(int(n), 1) * np.dtype(dtype).itemsize)


def _size_class(nbytes: int) -> int:
    """The power of two at or above ``nbytes`` (at least :data:`MIN_BUFFER_BYTES`)."""
    return max(MIN_BUFFER_BYTES, 1 << (int(nbytes) - 1).bit_length())


_pool: PinnedPool | None = None
_pool_lock = threading.Lock()
_grow_thread: ThreadPoolExecutor | None = None


def _grower() -> ThreadPoolExecutor:
    """The one thread that pins buffers off the searches' path."""
    global _grow_thread
    with _pool_lock:
        if _grow_thread is None:
            _grow_thread = ThreadPoolExecutor(1, thread_name_prefix="taskbfs-pin")
        return _grow_thread


def pinned_pool() -> PinnedPool:
    """This process's pool (one per process: GPU workers of one process share it)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = PinnedPool()
        return _pool


#: Bytes of the pinned chunk that :func:`copy_out` stages a copy through.
STAGE_BYTES = 1 << 23
_stage = None
_stage_lock = threading.Lock()


def copy_out(device_array, n: int, dtype, executor=None) -> np.ndarray:
    """The first ``n`` items of a device array in a new host array that may live long (a
    search's result): a free pinned buffer of the pool when it has one, else ordinary
    memory, filled through a pinned chunk at a time, each chunk copied into place on
    threads, while the pool pins a buffer of that size for the next result in the
    background (pinning one here costs more than the staged copy).

    A direct copy into new ordinary memory is slow (the driver's bounce buffer and the first
    touch of every page, on one thread); staged, the pages are
    first touched by several threads at once (the threads of ``executor``, a
    ``concurrent.futures`` executor; without one, in this thread).
    """
    pool = pinned_pool()
    out = pool.take(n, dtype, allocate=False)
    if out is not None:
        device_array[:n].copy_to_host(out)
        return out
    out = np.empty(int(n), dtype=dtype)
    with _stage_lock:
        stage = _staging_chunk()
        items = stage.size // out.itemsize
        chunk = stage.view(out.dtype)[:items]
        for start in range(0, int(n), items):
            stop = min(int(n), start + items)
            staged = chunk[: stop - start]
            device_array[start:stop].copy_to_host(staged)
            _copy_on_threads(out[start:stop], staged, executor)
    pool.grow_later(n, dtype)  # after the copy, which pinning would hold up
    return out


def _copy_on_threads(dest: np.ndarray, src: np.ndarray, executor) -> None:
    """``dest[:] = src`` in one piece per core on ``executor``'s threads (numpy's copy
    releases the GIL), so that ``dest``'s new pages are first touched in parallel."""
    threads = os.cpu_count() or 1
    if executor is None or threads <= 1:
        np.copyto(dest, src)
        return
    cuts = np.linspace(0, dest.size, threads + 1).astype(np.int64)

    def piece(lo, hi):
        np.copyto(dest[lo:hi], src[lo:hi])

    list(executor.map(piece, cuts[:-1], cuts[1:]))


def _staging_chunk() -> np.ndarray:
    """The process's pinned staging chunk (uint8, :data:`STAGE_BYTES`), made on first use."""
    global _stage
    if _stage is None:
        from numba import cuda

        _stage = cuda.pinned_array(STAGE_BYTES, dtype=np.uint8)
    return _stage


def copy_to_host(device_array, n: int, dtype) -> np.ndarray:
    """The first ``n`` items of a device array on the host, in a pinned buffer of the pool
    when it has room, else in a new ordinary array."""
    out = pinned_pool().take(n, dtype)
    if out is None:
        return device_array[:n].copy_to_host()
    device_array[:n].copy_to_host(out)
    return out


__all__ = ["MIN_BUFFER_BYTES", "PinnedPool", "copy_out", "copy_to_host", "pinned_pool"]
