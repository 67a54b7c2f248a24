"""The OmpSs device cache of a GPU worker: the BFS's slices, scratch and results on the device.

Returns
    :func:`device_cache` → this worker's :class:`DeviceCache` (its ``stats()``: the
    service's counters). :func:`upload_slices` runs on a GPU worker when a graph is placed.
Approach
    As OmpSs does with its device cache (Munguía, Bader & Ayguadé, HiPC 2012, Sec. VI.A:
    "graph information duplication in the GPU"), a GPU worker keeps a task's CSR slice in
    device memory for later levels and later BFS calls on the same graph: the slices live
    in the worker's device-data service (:mod:`taskbfs.runtime.device_data`, LRU under
    its byte budget) as two data each, named
    ``((graph token + orientation, task, lo, hi), "indptr" | "indices")``, copied there when
    the graph is placed (:func:`upload_slices`) or else by the first step that needs them.
    A step run alone is one level of a :class:`~taskbfs.kernels.gpu_levels.DeviceLevels`
    over its slice (:meth:`DeviceCache.step_levels`), whose state has buffers of its own; a
    search run as one task has one over the whole graph (:meth:`DeviceCache.device_levels`).
    A GPU worker runs one task at a time (one thread, as dask-cuda does), and a lock makes
    that explicit.
Encoding
    Frontier and bitmaps as in :mod:`taskbfs.search.state`; results in
    :func:`~taskbfs.kernels.assembly.result_dtype`.
"""

from __future__ import annotations

import numpy as np
from distributed import wait as distributed_wait

from taskbfs.kernels.assembly import result_dtype
from taskbfs.placed.placement import PlacedGraph
from taskbfs.search.state import Frontier

#: Name of the device cache in a worker's :func:`~taskbfs.runtime.worker.worker_cache`.
CACHE_NAME = "taskbfs.device_cache"


class DeviceCache:
    """The BFS's use of a GPU worker's device-data service: task slices, shared scratch,
    and what one search leaves on the device between its levels.

    Parameters
    ----------
    budget : int, optional
        For a cache of its own (tests, benchmarks): the byte budget of a new
        :class:`~taskbfs.runtime.device_data.DeviceData`. Ignored when ``data`` is given.
    data : DeviceData, optional
        The service to keep slices and scratch in (:func:`device_cache` passes the
        worker's).

    Attributes
    ----------
    data : DeviceData
        The service: its ``stats()`` count slice uploads (two data per slice, offsets and
        neighbours), hits, evictions and the bytes moved.
    results : int
        Searches whose result was kept on this device (the GPU levels of
        :mod:`taskbfs.search.device_levels`).
    """

    def __init__(self, budget: int | None = None, data=None):
        from taskbfs.kernels.gpu import NumbaAllocator
        from taskbfs.runtime.device_data import DeviceData

        self.data = data if data is not None else DeviceData(NumbaAllocator(), budget)
        self.lock = self.data.lock
        self._slices: dict = {}  # slice key -> DeviceSlice over the service's arrays
        self._levels = None  # ((graph, in-graph), DeviceLevels): see device_levels
        self._step_levels = None  # the DeviceLevels of steps run alone: see step_levels
        self._config = None
        self._stopwatch = None
        self.results = 0

    # ------------------------------------------------------------------ bookkeeping
    @property
    def budget(self) -> int:
        """Device bytes the service may use."""
        return self.data.budget

    @property
    def used_bytes(self) -> int:
        """Device bytes held: slices plus scratch buffers."""
        return self.data.used_bytes

    def keys(self) -> list:
        """Keys of the slices resident, least recently used first."""
        return [name[0] for name in self.data.names() if name[1] == "indices"]

    def stats(self) -> dict:
        """The service's counters, the slices resident and the results kept."""
        return {**self.data.stats(), "slices": len(self.keys()), "results": self.results}

    def clear(self) -> None:
        """Drop every slice and buffer (device memory is released) and the search state."""
        with self.lock:
            self.data.release()
            self._slices.clear()
            self._levels = self._step_levels = None

    def launch_config(self):
        from taskbfs.kernels.gpu import launch_config

        if self._config is None:
            _quiet_occupancy_warnings()
            self._config = launch_config()
        return self._config

    def stopwatch(self):
        """The one :class:`~taskbfs.kernels.gpu.Stopwatch` that times this worker's steps
        (they run one at a time)."""
        from numba import cuda

        from taskbfs.kernels.gpu import Stopwatch

        if self._stopwatch is None:
            self._stopwatch = Stopwatch(cuda, self.launch_config().simulated)
        return self._stopwatch

    def buffer(self, name: str, size: int, dtype):
        """A shared device scratch buffer of at least ``size`` entries (grows, never shrinks)."""
        return self.data.scratch(name, size, dtype)

    # ------------------------------------------------------------------ slices
    @staticmethod
    def slice_names(part) -> list:
        """The service's names of ``part``'s device copy: its offsets and its neighbours."""
        key = (part.token, int(part.task), int(part.lo), int(part.hi))
        return [(key, "indptr"), (key, "indices")]

    def partition(self, part, num_vertices: int):
        """The device copy of ``part`` (a :class:`~taskbfs.search.steps.GraphSlice`).

        ``num_vertices`` bounds the graph's vertex ids (bitmap lengths).
        Returns ``(DeviceSlice, uploaded_bytes)``; ``uploaded_bytes`` is 0 on a hit.
        """
        from taskbfs.kernels.gpu import DeviceSlice, check_slice

        names = self.slice_names(part)
        with self.lock, self.data.pinned(names):
            indptr_host = np.ascontiguousarray(part.indptr, dtype=np.int64)
            check_slice(indptr_host, int(part.lo), int(part.hi), int(num_vertices))
            indptr, up = self.data.fetch(names[0], indptr_host)
            indices, more = self.data.fetch(names[1], lambda: np.ascontiguousarray(part.indices))
            key = names[0][0]
            known = self._slices.get(key)
            if known is None or known.indptr is not indptr or known.indices is not indices \
                    or known.num_vertices != int(num_vertices):
                known = self._slices[key] = DeviceSlice(int(part.lo), int(part.hi),
                                                        int(num_vertices), indptr, indices,
                                                        indptr_host)
            return known, up + more

    # ------------------------------------------------------------------ levels on the device
    def whole(self, parts, num_vertices: int):
        """The device copy of the adjacency of the vertices of the slices ``parts`` (one
        orientation's, ranges in order: every vertex, or an owner's ranges, the vertices
        between them with no arcs): ``(DeviceSlice, uploaded bytes)``. One slice is its own
        copy; several are joined on the device, piece by piece, never on the host."""
        if len(parts) == 1:
            return self.partition(parts[0], num_vertices)
        first, lo, hi = parts[0], int(parts[0].lo), int(parts[-1].hi)
        key = (first.token, -1, lo, hi, tuple(int(p.task) for p in parts))
        names = [(key, "indptr"), (key, "indices")]
        joined = []  # the host's offsets, made once when needed

        def offsets():
            if not joined:
                joined.append(_joined_indptr(parts))
            return joined[0]

        with self.lock, self.data.pinned(names):
            known = self._slices.get(key)
            indptr, up = self.data.fetch(names[0], offsets)
            indices, more = self.data.fetch(names[1], lambda: [p.indices for p in parts])
            if known is None or known.indptr is not indptr or known.indices is not indices \
                    or known.num_vertices != int(num_vertices):
                from taskbfs.kernels.gpu import DeviceSlice

                known = self._slices[key] = DeviceSlice(lo, hi, int(num_vertices), indptr,
                                                        indices, offsets())
            return known, up + more

    def device_levels(self, slices, num_vertices: int):
        """The :class:`~taskbfs.kernels.gpu_levels.DeviceLevels` over the vertices of
        ``slices`` (per task its slice, then its transposed one when it has one; adjacent
        ranges in order: the whole graph, or an owner's ranges), made once
        per device copy and kept for the next searches: ``(levels, uploaded bytes)``, the
        bytes of the graph copied to the device now (0 when it is here)."""
        from taskbfs.kernels.bitmap import words_for
        from taskbfs.kernels.gpu_levels import DeviceLevels

        bits = 64 * words_for(num_vertices)
        parts = [s[0] for s in slices]
        in_parts = [s[-1] for s in slices]
        with self.lock:
            dev, moved = self.whole(parts, bits)
            dev_in = dev
            if in_parts[0] is not parts[0]:
                dev_in, more = self.whole(in_parts, bits)
                moved += more
            if self._levels is None or self._levels[0] != (dev, dev_in):
                levels = DeviceLevels(dev, dev_in, num_vertices, self.launch_config(), self.buffer)
                self._levels = ((dev, dev_in), levels)
            return self._levels[1], moved

    def step_levels(self, part, num_vertices: int):
        """The :class:`~taskbfs.kernels.gpu_levels.DeviceLevels` that runs a step alone over
        the device slice ``part`` (:func:`~taskbfs.search.gpu_step.run_step_on_gpu`): one
        per worker and graph size, its state in buffers of its own (a search's device
        levels keep theirs between levels)."""
        from taskbfs.kernels.gpu_levels import DeviceLevels

        def workspace(name, size, dtype):
            return self.buffer(f"step_{name}", size, dtype)

        if self._step_levels is None or self._step_levels.n != int(num_vertices):
            self._step_levels = DeviceLevels(part, part, num_vertices, self.launch_config(),
                                             workspace)
        self._step_levels.read_range(part, part)
        return self._step_levels

def _quiet_occupancy_warnings() -> None:
    """Turn off numba-cuda's "grid size N will likely result in GPU under-utilization" warning.

    Small tasks launch small grids on purpose (a task near λ has a few thousand edges), and
    the warning is formatted and printed on every such launch, several per step: host
    time on the critical path of every small GPU task.
    """
    import importlib

    for name in ("numba.cuda.core.config", "numba.core.config"):
        try:
            importlib.import_module(name).CUDA_LOW_OCCUPANCY_WARNINGS = 0
        except Exception:  # noqa: BLE001 - the module differs across numba-cuda versions
            pass


def device_cache(worker=None) -> DeviceCache:
    """The :class:`DeviceCache` of this worker (created on first use), over the worker's
    device-data service (:func:`~taskbfs.runtime.device_data.device_data`)."""
    from taskbfs.kernels.gpu import NumbaAllocator
    from taskbfs.runtime.device_data import device_data
    from taskbfs.runtime.worker import worker_singleton

    return worker_singleton(CACHE_NAME,
                            lambda: DeviceCache(data=device_data(NumbaAllocator, worker)), worker)


def upload_to_gpus(runtime, placed: PlacedGraph, num_vertices: int, form: str = "slices",
                   timeout: float | None = None) -> None:
    """Copy ``placed``'s slices (transposed ones too) into GPU workers' device memory, once
    per placement and orientation (see :func:`upload_slices`):
    a slice a GPU worker holds into that worker's device (its steps run there, beside the
    range's owner state), a slice no GPU worker holds (placed from the client onto CPU
    workers) into every GPU worker's; with ``form`` "graph", a GPU worker that holds every
    range copies the whole graph at once instead."""
    futures = placed.slice_futures()
    keys = frozenset((f.key, form) for f in futures)
    if keys <= placed.uploaded:
        return
    gpus = set(runtime.gpu_workers())
    who = {}
    if len(gpus) > 1:  # where each slice is once it exists (one still being cut is held
        # nowhere yet, and would be copied to every GPU worker)
        with runtime.client.as_current():  # ``wait`` uses the default client; ours may not be it
            distributed_wait(futures, timeout=timeout)
        who = runtime.client.who_has(futures)
    held = {f.key: gpus.intersection(who.get(f.key, ())) for f in futures}

    def slices_for(address: str) -> list:
        return [f for f in futures if not held[f.key] or address in held[f.key]]

    runtime.on_gpu_workers(upload_slices, int(num_vertices), form == "graph",
                           timeout=timeout, args_of=slices_for)
    placed.uploaded = keys


def upload_slices(num_vertices: int, whole: bool, *parts) -> dict:
    """Copy a placed graph's slices into this GPU worker's device memory (run there when
    the graph is placed, :func:`upload_to_gpus`): what the first search would otherwise
    pay. With ``whole`` and every range here, the whole graph at once with the device
    levels' buffers (its searches run here as one task); else slice by slice, those beyond
    the budget left for the steps to upload. Returns the cache's
    :meth:`~DeviceCache.stats`, or None on a worker that advertises a GPU without a usable
    one (its steps would say so, if it runs any)."""
    from taskbfs.kernels.bitmap import words_for
    from taskbfs.kernels.gpu import gpu_available

    if not gpu_available():
        return None
    cache = device_cache()
    bits = 64 * words_for(num_vertices)
    with cache.lock:
        every = _every_range(parts, int(num_vertices)) if whole else None
        if every is not None:  # its searches run here as one task: the whole graph at once
            cache.device_levels(every, int(num_vertices))
        else:
            room = cache.budget - cache.used_bytes
            for part in parts:
                room -= part.indptr.nbytes + part.indices.nbytes
                if room < 0:
                    break
                cache.partition(part, bits)
    _pin_result_buffers(_copied_ranges(parts, int(num_vertices)), int(num_vertices))
    return cache.stats()


def _every_range(parts, num_vertices: int):
    """Per task its slices, when ``parts`` (both orientations of some slices) hold every
    vertex's range; else None."""
    by_token: dict = {}
    for part in parts:
        by_token.setdefault(part.token, []).append(part)
    orientations = [sorted(group, key=lambda p: p.lo) for group in by_token.values()]
    out = [g for g in orientations if g[0].out_indptr is None] or orientations[:1]
    if not out or sum(p.hi - p.lo for p in out[0]) < num_vertices:
        return None
    transposed = [g for g in orientations if g is not out[0]]
    pairs = zip(out[0], transposed[0], strict=True) if transposed else ((p,) for p in out[0])
    return [tuple(pair) for pair in pairs]


def _joined_indptr(parts) -> np.ndarray:
    """The offsets of the slices ``parts`` (ranges in order) joined over ``[first lo, last
    hi)``, a vertex between two of them with no arcs."""
    counts = []
    for before, part in zip([None, *parts[:-1]], parts, strict=True):
        if before is not None and part.lo > before.hi:
            counts.append(np.zeros(int(part.lo - before.hi), dtype=np.int64))
        counts.append(np.diff(np.asarray(part.indptr, dtype=np.int64)))
    indptr = np.zeros(sum(c.size for c in counts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=indptr[1:])
    return indptr


#: Results whose host buffers are pinned ahead, when a graph is placed: the one a caller
#: still holds while the next search runs, and that next one.
RESULTS_PINNED_AHEAD = 2


def _copied_ranges(parts, num_vertices: int) -> list:
    """The vertex ranges whose results a GPU worker holding the slices ``parts`` copies to
    the host at a search's end: every vertex at once where it holds them all (a one-task
    search's result), else each range of its own (an owner's ranges, copied one by one)."""
    ranges = sorted({(part.lo, part.hi) for part in parts})
    if sum(hi - lo for lo, hi in ranges) >= num_vertices:
        return [(0, num_vertices)]
    return ranges


def _pin_result_buffers(ranges: list, num_vertices: int) -> None:
    """Have the pinned pool hold the buffers of :data:`RESULTS_PINNED_AHEAD` results of the
    vertex ``ranges`` (``(lo, hi)`` pairs, :func:`_copied_ranges`: each range's distances
    and parents apart) that it does not hold yet, pinned now
    (pinning while a search runs holds up its CUDA calls), so that the first searches copy
    their results into pinned memory rather than pin it then
    (:func:`~taskbfs.kernels.pinned.copy_out`)."""
    from taskbfs.kernels.pinned import pinned_pool

    arrays = [hi - lo for lo, hi in ranges for _ in range(2 * RESULTS_PINNED_AHEAD)]
    pinned_pool().hold_free(arrays, result_dtype(num_vertices))


def result_to_host(frontier: Frontier, logs, levels, sources, arrays,
                   cache: DeviceCache | None = None):
    """The search's ``(distances, parents)`` on the host, over its vertices, in the dtype of
    the device's arrays (:func:`~taskbfs.kernels.assembly.result_dtype`): the result its
    GPU levels wrote on the device (``arrays``, on the device or copied to the host
    already), copied back once (into pinned buffers when the pool has room), with the
    pairs of ``logs`` (its CPU steps', which ran at ``levels``) written over it on the host
    (:mod:`taskbfs.search.device_levels` marks the vertices they visited -2 there).
    """
    from taskbfs.kernels.merge import record_pairs, record_pairs_at

    cache = cache if cache is not None else device_cache()
    n = int(frontier.bounds[-1])
    with cache.lock:
        distances, parents = (array if isinstance(array, np.ndarray) else _into_host(array, n)
                              for array in arrays)  # host arrays: copied already
        cache.data.count_down(distances.nbytes + parents.nbytes)
    for d, level in zip(logs, levels, strict=True):
        if d.depths is not None:  # a block of compiled CPU levels
            record_pairs_at(d.vertices, d.parents, d.depths, 0, n, parents, distances)
        elif d.vertices.size:
            record_pairs(d.vertices, d.parents, 0, d.vertices.size, 0, n, level + 1, parents,
                         distances)
    distances[sources] = 0
    parents[sources] = sources
    return distances, parents


def result_on_device(frontier: Frontier, logs, levels, sources, arrays,
                     cache: DeviceCache | None = None):
    """:func:`result_to_host`'s result left on this GPU as CuPy arrays (``bfs(...,
    device_result=True)``): the device's result copied on the device (its arrays are the
    cache's, reused by the next search), the host steps' pairs (``logs``) sent up and
    written over it. :class:`~taskbfs.errors.DeviceUnavailableError` without CuPy."""
    from taskbfs.kernels.gpu import require_cupy

    cp = require_cupy("device_result=True")
    cache = cache if cache is not None else device_cache()
    n = int(frontier.bounds[-1])
    with cache.lock:
        distances, parents = (cp.asarray(array)[:n].copy() for array in arrays)
    for d, level in zip(logs, levels, strict=True):
        if d.vertices.size:  # duplicates are all at that distance: any parent is valid
            vertices = cp.asarray(d.vertices)
            distances[vertices] = cp.asarray(d.depths) if d.depths is not None else level + 1
            parents[vertices] = cp.asarray(d.parents)
    on_gpu = cp.asarray(sources)
    distances[on_gpu] = 0
    parents[on_gpu] = on_gpu
    return distances, parents


def _into_host(device_array, n: int) -> np.ndarray:
    """``device_array[:n]`` copied into a new host array of its dtype (see
    :func:`~taskbfs.kernels.pinned.copy_out`)."""
    from taskbfs.kernels.pinned import copy_out
    from taskbfs.runtime import thread_pool

    return copy_out(device_array, n, device_array.dtype, thread_pool())


__all__ = ["CACHE_NAME", "DeviceCache", "device_cache", "result_on_device", "result_to_host",
           "upload_slices", "upload_to_gpus"]
