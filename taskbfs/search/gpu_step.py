"""The GPU implementation of one BFS step task, its slice kept in the worker's device cache.

Returns
    :func:`run_step_on_gpu` ``(part, frontier)`` → :class:`~taskbfs.search.state.Discoveries`,
    like the CPU step, with ``h2d_bytes``, ``d2h_bytes`` (bytes this task moved between host
    and device) and ``kernel_seconds`` (device time of its kernels, CUDA events) filled in.
Approach
    Per level only the task's frontier vertices (top-down), the visited bitmap and the
    frontier bitmap (bottom-up) go up, and the discovered ``(vertex, parent)`` pairs plus
    three counters come back; the slice and the level's shared inputs are the device
    cache's (:class:`~taskbfs.search.device_cache.DeviceCache`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from taskbfs.search.device_cache import DeviceCache, device_cache
from taskbfs.search.state import BOTTOM_UP, Discoveries, Frontier, one_range

_COUNTER_BYTES = 3 * 8  # the step's counters, read back once per step


#: Candidates of a several-task top-down GPU step from which they are bucketed by owner
#: on the device: fewer cost less to bucket on the host than the launches (read by the
#: warm-up, which lowers it to load the bucketing kernels).
DEVICE_BUCKET_MIN = 1 << 14


def run_step_on_gpu(part, frontier: Frontier, cache: DeviceCache | None = None,
                    pairs: bool = True) -> Discoveries:
    """One task's BFS step on this worker's GPU, its slice kept in device memory.

    Parameters
    ----------
    part : GraphSlice
        The task's slice (out-neighbours; in-neighbours for a bottom-up level of a
        directed graph).
    frontier : Frontier
        The level's frontier: this task's vertices (top-down) or the bitmap (bottom-up).
    cache : DeviceCache, optional
        Default: this worker's (:func:`device_cache`).
    pairs : bool
        Whether a bottom-up step's pairs come back (in vertex order, as the CPU step's).
        False, for an owner whose result stays on its GPU (``Frontier.result_on_device``):
        its pairs go into that result and, on an undirected graph, only its bitmap words,
        their count and degree sum come back (``Discoveries.words``, ``words_count``,
        ``frontier_edges``; no vertices).

    Returns
    -------
    Discoveries
        The ``(vertex, parent)`` pairs found, ``edges_examined`` exactly as the CPU step
        counts it, and the task's ``h2d_bytes``, ``d2h_bytes``, ``kernel_seconds``.

    Raises
    ------
    DeviceUnavailableError
        No CUDA device here (and no simulator).
    """
    from taskbfs.kernels.gpu import require_gpu

    require_gpu()
    cache = cache if cache is not None else device_cache()
    with cache.lock, cache.data.pinned(cache.slice_names(part)):
        # Bitmaps cover every vertex id: 64 per word of the visited bitmap.
        dev, h2d = cache.partition(part, 64 * int(frontier.visited_bits.size))
        d_visited, d_bits, moved = cache.level_inputs(frontier)
        h2d += moved
        if frontier.direction == BOTTOM_UP:
            found = _bottom_up(part, dev, cache, frontier, d_visited, d_bits, h2d, pairs)
        else:
            found = _top_down(part, dev, cache, frontier, d_visited, h2d)
        cache.data.count_up(found.h2d_bytes - h2d)  # the slice and bitmaps are counted
        cache.data.count_down(found.d2h_bytes)
        return found


#: Top-down frontiers up to this many vertices have their edge count summed on the host
#: (no device round trip); larger ones let the device's degree scan give it (one 8-byte
#: read-back), since gathering millions of degrees on the host costs milliseconds.
HOST_EDGE_COUNT_LIMIT = 1 << 14


def _top_down(part, dev, cache, frontier, d_visited, h2d) -> Discoveries:
    from taskbfs.kernels.gpu_steps import gpu_top_down_step

    mine = frontier.of_task(part.task)
    total = None
    if mine.size <= HOST_EDGE_COUNT_LIMIT:
        local = mine - dev.lo
        total = int((dev.indptr_host[local + 1] - dev.indptr_host[local]).sum()) if mine.size else 0
        if total == 0:
            empty = np.empty(0, dtype=part.indices.dtype)
            return Discoveries(part.task, empty, empty.copy(), 0, h2d_bytes=h2d)
    d_frontier = cache.chained_vertices(frontier, mine.size)
    if d_frontier is None:
        mine = np.ascontiguousarray(mine, dtype=np.int64)
        d_frontier = cache.buffer("frontier", mine.size, np.int64)[: mine.size]
        d_frontier.copy_to_device(mine)
        h2d += mine.nbytes
    # With dedupe each vertex is reported at most once per step: n slots always suffice,
    # so one pair of buffers serves every task and level (no regrowth).
    out_v = cache.buffer("out_vertices", dev.num_vertices, np.int64)
    out_u = cache.buffer("out_parents", dev.num_vertices, np.int64)
    mask = cache.level_mask(frontier, dev.num_vertices)
    config = cache.launch_config()
    bounds = frontier.task_bounds()
    sole = _sole_step(part, dev, bounds)
    offsets = None
    read_back = _COUNTER_BYTES + (8 if total is None else 0)
    with cache.stopwatch() as timer:
        n_found, edges = gpu_top_down_step(
            dev.indptr, dev.indices, dev.lo, d_frontier, d_visited, out_v, out_u,
            mask_bits=mask, dedupe=True, config=config, workspace=cache.buffer,
            total_edges=total, clear_mask=False)
        if sole:  # one owner: one bucket
            offsets = np.array([0, n_found], dtype=np.int64)
        elif _bucket_on_device(bounds, n_found):
            out_v, out_u, offsets = _bucketed(cache, out_v, out_u, n_found, bounds)
            h2d += 2 * bounds.nbytes  # the bounds and the buckets' start offsets
            read_back += bounds.nbytes
        if sole:  # its discoveries are the next frontier: keep it here (its words too)
            words = _owned_bits(cache, dev, out_v, n_found)[0]
            cache.keep_for_next_level(frontier, out_v, n_found, words)
        if frontier.result_on_device:
            cache.record(frontier, out_v, out_u, n_found)
        out_v, out_u = _narrow(cache, out_v, out_u, n_found, part.indices.dtype)
    return _found(part, frontier, out_v, out_u, n_found, int(edges), h2d, read_back,
                  timer.seconds, offsets)


def _sole_step(part, dev, bounds: np.ndarray) -> bool:
    """Whether the step's task owns every vertex (:func:`~taskbfs.search.state.one_range`),
    on its out-adjacency: it is its level's only step, its discoveries (unique and
    unvisited: the vertex mask; bottom-up: its own) are the next frontier as they are,
    and its slice's offsets give every vertex's out-degree. The next level of its search
    then finds its inputs on the device (:meth:`DeviceCache.keep_for_next_level`)."""
    return (part.out_indptr is None and one_range(bounds)
            and (dev.lo, dev.hi) == (int(bounds[0]), int(bounds[1])))


def _bucket_on_device(bounds: np.ndarray, n_found: int) -> bool:
    """Whether a top-down step's candidates are bucketed by owner on the device: several
    owners (at most what the kernel's histogram holds) and enough candidates to pay for
    the launches (fewer are bucketed on the host by ``owner_barrier.split_for_owners``)."""
    from taskbfs.kernels.gpu import BUCKET_MAX_OWNERS

    return 2 <= bounds.size - 1 <= BUCKET_MAX_OWNERS and n_found >= DEVICE_BUCKET_MIN


def _bucketed(cache, out_v, out_u, n: int, bounds: np.ndarray):
    """The step's ``n`` pairs grouped by owning task, on the device
    (:func:`~taskbfs.kernels.gpu.bucket_by_owner`): ``(vertices, parents, host offsets)``."""
    from taskbfs.kernels.gpu import bucket_by_owner

    return bucket_by_owner(out_v, out_u, n, bounds, cache.buffer, cache.launch_config())


def _bottom_up(part, dev, cache, frontier, d_visited, d_bits, h2d,
               pairs: bool = True) -> Discoveries:
    from taskbfs.kernels.gpu import order_by_vertex
    from taskbfs.kernels.gpu_steps import gpu_bottom_up_step

    words = not pairs  # the bits of what it found stand for its pairs

    out_v = cache.buffer("out_vertices", dev.num_vertices, np.int64)
    out_u = cache.buffer("out_parents", dev.num_vertices, np.int64)
    config = cache.launch_config()
    with cache.stopwatch() as timer:
        n_found, edges = gpu_bottom_up_step(
            dev.indptr, dev.indices, dev.lo, dev.hi, d_visited, d_bits, out_v, out_u,
            config=config, workspace=cache.buffer)
        # The slice's own offsets are its out-degrees unless it is a directed graph's
        # transpose: only then do its pairs come back whatever ``pairs`` says.
        sole = _sole_step(part, dev, frontier.task_bounds())
        owned = (_owned_bits(cache, dev, out_v, n_found)
                 if part.out_indptr is None and (words or sole) else None)
        if sole:
            cache.keep_for_next_level(frontier, out_v, n_found, owned[0])
        words_only = not pairs and owned is not None and frontier.result_on_device
        if frontier.result_on_device:
            cache.record(frontier, out_v, out_u, n_found)
        elif not words:  # for an owner barrier on the host: in vertex order, as the CPU's
            order_by_vertex(out_v, out_u, n_found, dev.lo, dev.hi - dev.lo, cache.buffer,
                            config)
        if not words_only:
            out_v, out_u = _narrow(cache, out_v, out_u, n_found, part.indices.dtype)
    if words_only:
        empty = np.empty(0, dtype=part.indices.dtype)
        found = Discoveries(part.task, empty, None, int(edges), h2d_bytes=h2d,
                            d2h_bytes=_COUNTER_BYTES, kernel_seconds=timer.seconds,
                            words_count=int(n_found))
        return _with_owned(found, owned)
    found = _found(part, frontier, out_v, out_u, n_found, int(edges), h2d, _COUNTER_BYTES,
                   timer.seconds)
    return found if owned is None or not words else _with_owned(found, owned)


def _found(part, frontier, out_v, out_u, n: int, edges: int, h2d: int, read_back: int,
           kernel_seconds: float, offsets=None) -> Discoveries:
    """The step's :class:`Discoveries`: its pairs copied back, or only its vertices when
    the pairs went into the search's result on the device."""
    whole = not frontier.result_on_device
    vertices, parents = _download(out_v, out_u, n, part.indices.dtype, parents=whole)
    d2h = read_back + vertices.nbytes + (parents.nbytes if whole else 0)
    return Discoveries(part.task, vertices, parents, edges, h2d_bytes=h2d, d2h_bytes=d2h,
                       kernel_seconds=kernel_seconds, offsets=offsets)


def _with_owned(found: Discoveries, owned) -> Discoveries:
    """``found`` with its bits and degree sum (:func:`_owned_bits`) copied back."""
    from taskbfs.kernels.pinned import copy_to_host

    words = copy_to_host(owned[0], owned[0].size, np.uint64)
    frontier_edges = int(owned[1].copy_to_host()[0])
    return replace(found, words=words, frontier_edges=frontier_edges,
                   d2h_bytes=found.d2h_bytes + words.nbytes + 8)


def _owned_bits(cache, dev, out_v, n: int):
    """The step's discoveries as bits over its words, and their degree sum, on the device
    (device arrays ``(words, edges)``; see :func:`~taskbfs.kernels.gpu.owned_bits`)."""
    from taskbfs.kernels.gpu import owned_bits

    return owned_bits(out_v, n, dev.lo, dev.hi, dev.indptr, cache.buffer, cache.launch_config())


def _narrow(cache, out_v, out_u, n: int, dtype):
    """The device buffers to copy back: int64 as written, or narrowed to int32 on the device
    when the slice's indices are int32 (what the CPU step then returns): half the bytes."""
    if n == 0 or np.dtype(dtype) != np.int32:
        return out_v, out_u
    from taskbfs.kernels.gpu import narrow_pairs

    return narrow_pairs(out_v, out_u, n, cache.buffer, cache.launch_config())


def _download(out_v, out_u, n: int, dtype, parents: bool = True):
    """The first ``n`` pairs on the host (in pinned buffers when the pool has room, see
    :mod:`taskbfs.kernels.pinned`); with ``parents`` False, the vertices and None."""
    from taskbfs.kernels.pinned import copy_to_host

    if n == 0:
        empty = np.empty(0, dtype=np.dtype(dtype))
        return empty, empty.copy() if parents else None
    vertices = copy_to_host(out_v, n, out_v.dtype)
    return vertices, copy_to_host(out_u, n, out_u.dtype) if parents else None
