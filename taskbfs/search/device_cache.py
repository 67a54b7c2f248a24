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
    The kernels are launched through :mod:`taskbfs.kernels.gpu`; this module keeps the BFS's
    use of them.
    Per level only the task's frontier vertices (top-down), the visited bitmap and the
    frontier bitmap (bottom-up) go up, and the discovered ``(vertex, parent)`` pairs plus
    three counters come back. The two bitmaps are the same for every task of a level: they
    are uploaded once per level per GPU worker (the first GPU task of the level pays for
    them) and shared. Scratch buffers (outputs, scans, the top-down vertex mask) are one set
    per worker (the service's scratch), grown on demand: a GPU worker runs one task at a time (one thread, as
    dask-cuda does), and a lock makes that explicit.
Encoding
    Frontier and bitmaps as in :mod:`taskbfs.search.state`; outputs int64 pairs. The top-down
    step reports each newly reached vertex once, and the top-down steps of one level on
    this GPU share the vertex mask, so a vertex is reported by one of them only
    (:meth:`DeviceCache.level_mask`); the barrier deduplicates across all steps anyway.
    A step whose task owns every vertex (T = 1) leaves its discoveries on the device as
    the next level's inputs (:meth:`DeviceCache.keep_for_next_level`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
        Searches whose result was kept on this device (:meth:`search_result`, or the
        GPU levels of :mod:`taskbfs.search.device_levels`).
    """

    def __init__(self, budget: int | None = None, data=None):
        from taskbfs.kernels.gpu import NumbaAllocator
        from taskbfs.runtime.device_data import DeviceData

        self.data = data if data is not None else DeviceData(NumbaAllocator(), budget)
        self.lock = self.data.lock
        self._slices: dict = {}  # slice key -> DeviceSlice over the service's arrays
        self._level = None  # (frontier object, device visited bits, device frontier bits)
        self._mask_level = None  # the frontier whose top-down discoveries the mask holds
        self._mask = None  # the mask buffer last zeroed whole
        self._chain: _Chain | None = None  # what the last sole step left for its next level
        self._result = None  # (search, distances, parents): see search_result
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
            self._level = self._mask_level = self._mask = None
            self._chain = self._result = self._levels = self._step_levels = None

    def launch_config(self):
        from taskbfs.kernels.gpu import launch_config

        if self._config is None:
            _quiet_occupancy_warnings()
            self._config = launch_config()
        return self._config

    def stopwatch(self):
        """The one :class:`~taskbfs.kernels.gpu.Stopwatch` that times this worker's steps
        (they run one at a time: they share the output buffers too)."""
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

    def level_mask(self, frontier: Frontier, num_vertices: int):
        """The top-down vertex mask of ``frontier``'s level: zeroed when a level starts, then
        it keeps every vertex this GPU's top-down steps of the level reported, so that each
        is reported by one of them only (the barrier still keeps the first occurrence over
        all steps, CPU ones included; any reported parent is valid)."""
        from taskbfs.kernels.bitmap import words_for
        from taskbfs.kernels.gpu import fill

        mask = self.buffer("mask", words_for(num_vertices), np.uint64)
        if self._mask_level is not frontier or self._mask is not mask:
            fill(mask[: int(frontier.visited_bits.size)], 0, self.launch_config())
            self._mask_level, self._mask = frontier, mask
        return mask

    # ------------------------------------------------------------------ per level
    def level_inputs(self, frontier: Frontier):
        """Device copies of the level's visited (and frontier) bitmaps, uploaded once per level,
        or none at all when the previous level's sole step left them here
        (:meth:`keep_for_next_level`).

        Returns ``(visited, frontier_bits_or_None, uploaded_bytes)``.
        """
        from numba import cuda

        from taskbfs.kernels.gpu import upload_into

        level = self._level
        if level is not None and level[0] is frontier:
            return level[1], level[2], 0
        chain = self._chained(frontier)
        if chain is not None:
            d_bits = chain.words if frontier.bits is not None else None
            self._level = (frontier, chain.visited, d_bits)
            return chain.visited, d_bits, 0
        self._chain = None  # the uploads below overwrite what it points to
        visited = np.ascontiguousarray(frontier.visited_bits, dtype=np.uint64)
        d_visited = upload_into(self.buffer, "visited", visited)
        moved = visited.nbytes
        d_bits = None
        if frontier.bits is not None:
            bits = np.ascontiguousarray(frontier.bits, dtype=np.uint64)
            d_bits = upload_into(self.buffer, "frontier_bits", bits)
            moved += bits.nbytes
        cuda.synchronize()  # the host arrays may change after this level's barrier
        self.data.count_up(moved)
        self._level = (frontier, d_visited, d_bits)
        return d_visited, d_bits, moved

    # ------------------------------------------------------------------ chained levels
    def keep_for_next_level(self, frontier: Frontier, vertices, n: int, words) -> None:
        """Leave the next level's inputs on the device after a step that owns every vertex.

        Such a step is its level's only one, and its ``n`` discoveries (``vertices``, int64
        device array) with their bitmap ``words`` (every word) are the next frontier as the
        barrier will make it (it accepts every one of them): the
        next level's step of this search on this GPU then uploads neither the visited
        bitmap (ORed with ``words`` here), nor the frontier bits, nor the frontier vertices.
        Any upload for another level drops this.
        """
        from taskbfs.kernels.gpu import or_into

        progress = frontier.progress
        if progress is None or not progress.search:
            self._chain = None
            return
        visited = self._level[1]
        size = int(words.size)
        or_into(visited, words, self.launch_config())
        kept_words = self.buffer("chain_words", size, np.uint64)[:size]
        kept_words.copy_to_device(words)
        kept = self.buffer("chain_vertices", n, np.int64)[:n]
        if n:
            kept.copy_to_device(vertices[:n])
        self._chain = _Chain(progress.search, frontier.level + 1, visited, kept_words, kept)

    def chained_vertices(self, frontier: Frontier, count: int):
        """The device copy of ``frontier``'s ``count`` vertices that the previous level's
        step left here, or None (see :meth:`keep_for_next_level`)."""
        chain = self._chained(frontier)
        if chain is None or chain.vertices.size != count:
            return None
        return chain.vertices

    def _chained(self, frontier: Frontier):
        chain, progress = self._chain, frontier.progress
        if chain is None or progress is None or chain.search != progress.search:
            return None
        return chain if chain.level == frontier.level else None

    # ------------------------------------------------------------------ levels on the device
    def whole(self, parts, num_vertices: int):
        """The device copy of every vertex's adjacency, from the T slices ``parts`` (one
        orientation's, ranges in order, together every vertex): ``(DeviceSlice, uploaded
        bytes)``. One slice is its own copy; several are joined on the device, piece by
        piece, never on the host."""
        if len(parts) == 1:
            return self.partition(parts[0], num_vertices)
        first, hi = parts[0], int(parts[-1].hi)
        key = (first.token, -1, 0, hi)
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

                known = self._slices[key] = DeviceSlice(0, hi, int(num_vertices), indptr,
                                                        indices, offsets())
            return known, up + more

    def device_levels(self, slices, num_vertices: int):
        """The :class:`~taskbfs.kernels.gpu_levels.DeviceLevels` over the whole graph, from
        ``slices`` (per task its slice, then its transposed one when it has one), made once
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

    # ------------------------------------------------------------------ the search's result
    def search_result(self, frontier: Frontier):
        """The distances and parents of ``frontier``'s search on this device (device arrays
        of :func:`~taskbfs.kernels.assembly.result_dtype` over every vertex id the bitmaps
        cover), -1 everywhere at the first call of
        a search: its GPU steps write their pairs there (``Frontier.result_on_device``).
        One search at a time: a new search takes the arrays over."""
        return self.result_arrays(frontier.progress.search, 64 * int(frontier.visited_bits.size),
                                  result_dtype(int(frontier.bounds[-1])))

    def result_arrays(self, search: str, n: int, dtype):
        """:meth:`search_result` by the search's name, its ``n`` entries and their dtype."""
        from taskbfs.kernels.gpu import fill

        if self._result is None or self._result[0] != search:
            arrays = []
            for name in ("result_distances", "result_parents"):
                array = self.buffer(name, n, dtype)[:n]
                fill(array, -1, self.launch_config())
                arrays.append(array)
            self._result = (search, *arrays)
            self.results += 1
        return self._result[1], self._result[2]

    def record_host_pairs(self, search: str, n: int, dtype, vertices: np.ndarray,
                          parents: np.ndarray, distance: int) -> None:
        """Write host pairs (accepted by an owner's barrier on the host) into the result of
        the search ``search`` on the device (:meth:`result_arrays`), at ``distance``."""
        from taskbfs.kernels.gpu import record_found, upload_into

        distances, parents_out = self.result_arrays(search, n, dtype)
        count = int(vertices.size)
        if count:
            d_v = upload_into(self.buffer, "host_pair_vertices",
                              np.ascontiguousarray(vertices, dtype=np.int64))
            d_u = upload_into(self.buffer, "host_pair_parents",
                              np.ascontiguousarray(parents, dtype=np.int64))
            record_found(d_v, d_u, count, distance, distances, parents_out,
                         self.launch_config())

    def result_range(self, search: str, n: int, dtype, lo: int, hi: int):
        """``(distances, parents)`` of the vertices ``[lo, hi)`` of the search's result on
        the device (:meth:`result_arrays`), copied into new host arrays."""
        arrays = self.result_arrays(search, n, dtype)
        copies = tuple(_into_host(array[lo:hi], hi - lo) for array in arrays)
        self.data.count_down(sum(c.nbytes for c in copies))
        return copies

    def record(self, frontier: Frontier, out_v, out_u, n: int) -> None:
        """Write a step's ``n`` pairs (int64 device arrays) into the search's result, at the
        distance of the level after ``frontier``'s."""
        from taskbfs.kernels.gpu import record_found

        distances, parents = self.search_result(frontier)
        record_found(out_v, out_u, n, frontier.level + 1, distances, parents,
                     self.launch_config())


@dataclass
class _Chain:
    """Device arrays a sole step left for the next level of its search (device views)."""

    search: str
    level: int
    visited: object  # the visited bitmap, this level's discoveries included
    words: object  # the next frontier as a bitmap
    vertices: object  # the next frontier's vertices (int64)


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
    the graph is placed, :func:`upload_to_gpus`), with the step's
    output buffers: what the first search would otherwise pay. With ``whole`` and every
    range here, the whole graph at once with the device levels' buffers (its searches run
    here as one task); else slice by slice, those beyond the budget left for the steps to
    upload. Returns the cache's :meth:`~DeviceCache.stats`, or None on a worker that
    advertises a GPU without a usable one (its steps would say so, if it runs any)."""
    from taskbfs.kernels.bitmap import words_for
    from taskbfs.kernels.gpu import gpu_available

    if not gpu_available():
        return None
    cache = device_cache()
    bits = 64 * words_for(num_vertices)
    with cache.lock:
        for name in ("out_vertices", "out_parents"):
            cache.buffer(name, bits, np.int64)
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
    """The global offsets of the slices ``parts`` (ranges in order) joined."""
    counts = [np.diff(np.asarray(p.indptr, dtype=np.int64)) for p in parts]
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


def result_to_host(frontier: Frontier, logs, levels, sources, cache: DeviceCache | None = None,
                   arrays=None):
    """The search's ``(distances, parents)`` on the host, over its vertices, in the dtype of
    the device's arrays (:func:`~taskbfs.kernels.assembly.result_dtype`): the result its GPU
    steps wrote on the device (``arrays``: the GPU levels' of one task, on the device or
    copied to the host already; else :meth:`DeviceCache.search_result`,
    ``Frontier.result_on_device``), copied back once (into pinned buffers when the pool
    has room), with the pairs of ``logs`` (its CPU
    steps', which ran at ``levels``) written over it on the host.

    Those steps' vertices cannot be in the device's result: with one task, a level has one
    step (:mod:`taskbfs.search.device_levels` marks the vertices they visited -2 there); with
    several, every step ran on this GPU, so there are no such logs.
    """
    from taskbfs.kernels.merge import record_pairs, record_pairs_at

    cache = cache if cache is not None else device_cache()
    n = int(frontier.bounds[-1])
    with cache.lock:
        on_device = arrays if arrays is not None else cache.search_result(frontier)
        distances, parents = (array if isinstance(array, np.ndarray) else _into_host(array, n)
                              for array in on_device)  # host arrays: copied already
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


def result_on_device(frontier: Frontier, logs, levels, sources, cache: DeviceCache | None = None,
                     arrays=None):
    """:func:`result_to_host`'s result left on this GPU as CuPy arrays (``bfs(...,
    device_result=True)``): the device's result copied on the device (its arrays are the
    cache's, reused by the next search), the host steps' pairs (``logs``) sent up and
    written over it. :class:`~taskbfs.errors.DeviceUnavailableError` without CuPy."""
    from taskbfs.kernels.gpu import require_cupy

    cp = require_cupy("device_result=True")
    cache = cache if cache is not None else device_cache()
    n = int(frontier.bounds[-1])
    with cache.lock:
        on_device = arrays if arrays is not None else cache.search_result(frontier)
        distances, parents = (cp.asarray(array)[:n].copy() for array in on_device)
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
