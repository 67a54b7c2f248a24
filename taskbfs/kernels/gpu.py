"""The GPU host tier: launch configuration, the device's availability, device memory and
the array operations around the kernels (numba.cuda).

Returns
    :func:`launch_config` (block and grid sizes for this device, or the simulator's),
    :func:`require_gpu` / :func:`require_cupy` (a clear error without them),
    :class:`NumbaAllocator` (the allocator of the runtime's device-data service,
    :mod:`taskbfs.runtime.device_data`), :class:`DeviceSlice` (a task's slice held there),
    :class:`Stopwatch` (device time of a run of kernels) and :func:`fill`.
Approach
    The kernels are in ``_gpu_kernels.py`` (edge-balanced tiles: an exclusive scan of the
    frontier's degrees, one binary search per tile, so a Kronecker hub of 10^6 neighbours
    is spread over the whole GPU) and ``_gpu_levels.py`` (a level's steps and barrier);
    :mod:`taskbfs.kernels.gpu_levels` runs them. What is kept on a device, and for how
    long, is the runtime's (its device-data service) and the BFS's
    (``search/device_cache.py``).
Encoding
    A task owns ``[lo, hi)``; ``indptr`` is local (int64, ``hi - lo + 1`` entries from 0),
    ``indices`` global (int32 or int64); bitmaps are ``uint64`` over all vertices.
    numba.cuda is imported lazily: importing this module never needs CUDA. Every kernel
    also runs under ``NUMBA_ENABLE_CUDASIM=1`` (no warp intrinsics), which is how the tests
    exercise it without a GPU; on a real GPU with CuPy, CuPy launches them
    (:mod:`taskbfs.kernels._gpu_launch`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from taskbfs.errors import DeviceUnavailableError, InvalidParameterError

# ----------------------------------------------------------------------------- launch config
#: Threads per block when none is asked for: 8 warps, a common sweet spot for
#: memory-bound kernels (enough warps per block to hide latency, 8 blocks per SM on Hopper).
DEFAULT_BLOCK_SIZE = 256
#: Under the simulator every thread is a Python thread: keep blocks small.
SIMULATOR_BLOCK_SIZE = 32
#: Edges each thread examines per top-down tile; amortises the tile's scan and atomic.
DEFAULT_ITEMS_PER_THREAD = 4
#: In-neighbours a bottom-up thread reads before handing its vertex to a whole block; one
#: warp's worth keeps a low-degree vertex on one thread and sends hubs to a block.
DEFAULT_BU_THREAD_EDGES = 32
#: What the simulator reports for properties it does not model (its device has none):
#: two "multiprocessors" so that grid-stride loops run more than one block.
SIMULATOR_PROPERTIES = {"sm_count": 2, "warp_size": 32, "max_threads_per_block": 1024,
                        "max_threads_per_sm": 32}


def simulator_enabled() -> bool:
    """True when numba runs CUDA code in its simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    try:
        from numba import config
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    return bool(getattr(config, "ENABLE_CUDASIM", False))


def require_cupy(what: str):
    """The cupy module for ``what`` (a feature that hands out CuPy arrays: a result left
    on the GPU), else :class:`~taskbfs.errors.DeviceUnavailableError` saying why (CuPy
    not installed, or the CUDA simulator on: it has no CuPy)."""
    from taskbfs.kernels._gpu_launch import require_cupy as required

    return required(what)


def gpu_available() -> bool:
    """True when a CUDA device is usable, or numba's CUDA simulator is on.

    Never raises: a missing driver, toolkit or ``numba.cuda`` gives False.
    The simulator is switched on by ``NUMBA_ENABLE_CUDASIM=1`` in the environment *before*
    numba is first imported.
    """
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - any failure to reach CUDA means "no GPU"
        return False


def require_gpu():
    """Import numba.cuda, with this process's device current in the calling thread, or
    raise :class:`DeviceUnavailableError`."""
    if not gpu_available():
        raise DeviceUnavailableError(
            "no usable CUDA device (and NUMBA_ENABLE_CUDASIM is not set): "
            "the GPU kernels cannot run here"
        )
    from numba import cuda

    # numba's own calls make it current; the device levels' driver calls do not
    cuda.current_context()
    return cuda


@dataclass(frozen=True)
class LaunchConfig:
    """How the GPU kernels are launched, read off the device once.

    Attributes
    ----------
    block_size : int
        Threads per block (a power of two, at most ``max_threads_per_block``).
    grid_size : int
        Blocks of a persistent, grid-stride launch: enough to fill every multiprocessor.
    warp_size, sm_count, max_threads_per_block, max_threads_per_sm : int
        Device properties the other numbers come from.
    items_per_thread : int
        Top-down edges per thread per tile (a tile is ``block_size * items_per_thread``).
    bu_thread_edges : int
        Bottom-up in-neighbours a thread reads before a block takes over the vertex.
    simulated : bool
        True under ``NUMBA_ENABLE_CUDASIM=1``.
    """

    block_size: int
    grid_size: int
    warp_size: int
    sm_count: int
    max_threads_per_block: int
    max_threads_per_sm: int
    items_per_thread: int = DEFAULT_ITEMS_PER_THREAD
    bu_thread_edges: int = DEFAULT_BU_THREAD_EDGES
    simulated: bool = False

    def blocks_for(self, num_items: int) -> int:
        """Blocks for ``num_items`` one-per-thread items, capped at ``grid_size`` (≥ 1)."""
        needed = -(-int(num_items) // self.block_size)
        return max(1, min(needed, self.grid_size))


def launch_config(device=None, block_size: int | None = None,
                  items_per_thread: int = DEFAULT_ITEMS_PER_THREAD,
                  bu_thread_edges: int = DEFAULT_BU_THREAD_EDGES) -> LaunchConfig:
    """The launch configuration for ``device`` (default: numba's current device).

    Parameters
    ----------
    device : numba.cuda device, optional
    block_size : int, optional
        Override (tests use 32, 64, 128); default :data:`DEFAULT_BLOCK_SIZE`, or
        :data:`SIMULATOR_BLOCK_SIZE` under the simulator.
    items_per_thread, bu_thread_edges : int
        See :class:`LaunchConfig`.

    Raises
    ------
    DeviceUnavailableError
        No CUDA device and no simulator.
    InvalidParameterError
        A block size that is not a power of two, or exceeds the device's limit.
    """
    cuda = require_gpu()
    simulated = simulator_enabled()
    if simulated:
        props = dict(SIMULATOR_PROPERTIES)
    else:
        dev = device if device is not None else cuda.get_current_device()
        props = {
            "sm_count": int(dev.MULTIPROCESSOR_COUNT),
            "warp_size": int(dev.WARP_SIZE),
            "max_threads_per_block": int(dev.MAX_THREADS_PER_BLOCK),
            "max_threads_per_sm": int(dev.MAX_THREADS_PER_MULTIPROCESSOR),
        }
    if block_size is None:
        block_size = SIMULATOR_BLOCK_SIZE if simulated else DEFAULT_BLOCK_SIZE
    block_size = int(block_size)
    if block_size < 1 or block_size & (block_size - 1) or block_size > props["max_threads_per_block"]:
        raise InvalidParameterError(
            f"block_size must be a power of two in 1..{props['max_threads_per_block']}, "
            f"got {block_size}"
        )
    for name, value in (("items_per_thread", items_per_thread), ("bu_thread_edges", bu_thread_edges)):
        if int(value) < 1:
            raise InvalidParameterError(f"{name} must be >= 1, got {value}")
    blocks_per_sm = max(1, props["max_threads_per_sm"] // block_size)
    return LaunchConfig(
        block_size=block_size,
        grid_size=props["sm_count"] * blocks_per_sm,
        items_per_thread=int(items_per_thread),
        bu_thread_edges=int(bu_thread_edges),
        simulated=simulated,
        **props,
    )


# ----------------------------------------------------------------------------- device helpers
def kernels_for(config: LaunchConfig):
    from taskbfs.kernels._gpu_kernels import kernels

    if simulator_enabled():
        _make_simulator_shared_arrays_thread_safe()
    return kernels(config.block_size, config.items_per_thread)


_simulator_patched = False


def _make_simulator_shared_arrays_thread_safe() -> None:
    """Work around a race in numba-cuda's simulator (seen with 0.30.4).

    The simulator runs each CUDA thread as a Python thread and looks a block's shared
    arrays up in a dict with an unlocked check-then-insert: two threads can each create
    their own "shared" array, after which one thread's writes are invisible to the other
    (we saw a thread read ``tile_base`` that thread 0 had written, uninitialised, about
    one launch in 600). Real GPUs are unaffected; this only serialises that lookup.
    """
    global _simulator_patched
    if _simulator_patched:
        return
    import sys
    import threading

    from numba.core import types
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    from numba.np import numpy_support

    original = FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:  # the original's own paths: no lookup
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)  # allocations are identified by their source line
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            found = self._allocations.get(key)
            if found is None:
                found = self._allocations[key] = np.empty(shape, dtype)
        return found

    FakeCUDAShared.array = array
    _simulator_patched = True


# ----------------------------------------------------------------------------- device memory
@dataclass(frozen=True, eq=False)
class DeviceSlice:
    """One task's CSR slice in device memory (the device copies the OmpSs cache holds).

    Attributes
    ----------
    lo, hi, num_vertices : int
        The task owns ``[lo, hi)``; bitmaps cover ``num_vertices`` ids.
    indptr, indices : device arrays
        Local offsets (int64, ``hi - lo + 1``) and global neighbour ids.
    indptr_host : ndarray of int64
        The host's offsets, to count a small frontier's edges without a device round trip.
    """

    lo: int
    hi: int
    num_vertices: int
    indptr: object
    indices: object
    indptr_host: np.ndarray

    @property
    def nbytes(self) -> int:
        """Device bytes of the slice."""
        return int(self.indptr.nbytes + self.indices.nbytes)


def check_slice(indptr: np.ndarray, lo: int, hi: int, num_vertices: int) -> None:
    """Raise :class:`InvalidParameterError` unless ``indptr`` fits the range ``[lo, hi)``."""
    if not 0 <= lo <= hi <= num_vertices or indptr.size != hi - lo + 1:
        raise InvalidParameterError(
            f"task range [{lo}, {hi}) with {indptr.size} indptr entries does not fit "
            f"{num_vertices} vertices (indptr needs hi - lo + 1 entries)"
        )


class NumbaAllocator:
    """Device memory through numba.cuda: the allocator of the runtime's device-data service
    (:class:`taskbfs.runtime.device_data.Allocator`).

    numba frees a device array when its last reference goes, in batches; after a
    :meth:`free` the batch is flushed before the next allocation, so that evicted data
    makes room for what replaces it. RMM serves the allocations when
    :func:`~taskbfs.kernels.gpu_memory.use_rmm_if_available` installed it (the runtime's
    warm-up does, before any GPU work of the worker).
    """

    def __init__(self):
        self._cuda = require_gpu()
        self._flush = False

    def upload(self, host: np.ndarray):
        """A device copy of ``host``."""
        self._release()
        return self._cuda.to_device(np.ascontiguousarray(host))

    def empty(self, size: int, dtype):
        """A device array of ``size`` entries (contents undefined)."""
        self._release()
        return self._cuda.device_array(max(int(size), 1), dtype=dtype)

    def write(self, device, start: int, host: np.ndarray) -> None:
        """Copy ``host`` into ``device[start:start + host.size]``."""
        device[start : start + host.size].copy_to_device(np.ascontiguousarray(host))

    def free(self, device) -> None:
        """``device`` is no longer held by the caller: its memory goes before the next
        allocation (or when its other holders drop it)."""
        self._flush = True

    def free_memory(self) -> float:
        """Free device bytes now, as the driver says under numba's allocator or RMM
        (:func:`~taskbfs.kernels.gpu_memory.free_device_memory`); ``inf`` under the simulator."""
        from taskbfs.kernels.gpu_memory import free_device_memory

        try:
            free, _total = free_device_memory()
        except Exception:  # noqa: BLE001 - a device that cannot say (the simulator)
            return math.inf
        return float(free)

    def _release(self) -> None:
        if self._flush:
            self._flush = False
            try:
                self._cuda.current_context().deallocations.clear()
            except Exception:  # noqa: BLE001 - the simulator has no deallocation queue
                pass


class Stopwatch:
    """Kernel time: CUDA events on a device, the host clock under the simulator.

    ``with Stopwatch(cuda, simulated) as watch: ...`` then ``watch.seconds``. One stopwatch
    may time any number of windows, one after another: its two events are made once, by
    CuPy where it is installed (its event calls cost a fraction of numba's), on the
    stream the kernels are launched on.
    """

    def __init__(self, cuda, simulated: bool):
        self._events = None
        self._elapsed_ms = None
        if not simulated:
            from taskbfs.kernels._gpu_launch import cupy_module

            cupy = cupy_module()
            if cupy is not None:
                self._events = (cupy.cuda.Event(), cupy.cuda.Event())
                self._elapsed_ms = cupy.cuda.get_elapsed_time
            else:
                self._events = (cuda.event(), cuda.event())
                self._elapsed_ms = _numba_elapsed_ms
        self.seconds = 0.0

    def __enter__(self):
        if self._events:
            self._events[0].record()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self._events:
            self._events[1].record()
            self._events[1].synchronize()
            self.seconds = self._elapsed_ms(*self._events) / 1000.0
        else:
            self.seconds = time.perf_counter() - self._t0
        return False


def _numba_elapsed_ms(start, stop) -> float:
    return start.elapsed_time(stop)


# ----------------------------------------------------------------------------- array operations
def fill(array, value, config: LaunchConfig) -> None:
    """Set every entry of the device array ``array`` to ``value``."""
    size = int(array.size)
    if size:
        kernels_for(config).fill[config.blocks_for(size), config.block_size](array, value)


__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "require_cupy",
    "DeviceSlice",
    "LaunchConfig",
    "NumbaAllocator",
    "Stopwatch",
    "check_slice",
    "fill",
    "gpu_available",
    "launch_config",
    "simulator_enabled",
]
