"""The GPU implementation of one BFS step task, its slice kept in the worker's device cache.

Returns
    :func:`run_step_on_gpu` ``(part, frontier)`` → :class:`~taskbfs.search.state.Discoveries`,
    like the CPU step, with ``h2d_bytes``, ``d2h_bytes`` (bytes this task moved between host
    and device) and ``kernel_seconds`` (device time of its kernels, CUDA events) filled in.
Approach
    A step is a level of the device levels (:class:`~taskbfs.kernels.gpu_levels.DeviceLevels`,
    the kernels a search run as one task on the GPU runs its levels with) over the task's
    slice alone: the visited bitmap and the task's frontier (top-down: its vertices;
    bottom-up: the bitmap) enter a fresh state, one level runs, and the vertices it found
    come back with their parents. The slice stays in the device cache
    (:class:`~taskbfs.search.device_cache.DeviceCache`) across levels and searches.
"""

from __future__ import annotations

import numpy as np

from taskbfs.search.device_cache import DeviceCache, device_cache
from taskbfs.search.state import BOTTOM_UP, Discoveries, Frontier

#: Bytes read back besides the pairs: the level's counts row and the pairs' count.
_READ_BACK_BYTES = 5 * 8


def run_step_on_gpu(part, frontier: Frontier, cache: DeviceCache | None = None) -> Discoveries:
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

    Returns
    -------
    Discoveries
        The ``(vertex, parent)`` pairs found (each vertex once, in no set order),
        ``edges_examined`` exactly as the CPU step counts it, and the task's
        ``h2d_bytes``, ``d2h_bytes``, ``kernel_seconds``.

    Raises
    ------
    DeviceUnavailableError
        No CUDA device here (and no simulator).
    """
    from taskbfs.kernels.gpu import require_gpu

    require_gpu()
    cache = cache if cache is not None else device_cache()
    dtype = part.indices.dtype
    level = frontier.level
    with cache.lock, cache.data.pinned(cache.slice_names(part)):
        # Bitmaps cover every vertex id: 64 per word of the visited bitmap.
        dev, h2d = cache.partition(part, 64 * int(frontier.visited_bits.size))
        levels = cache.step_levels(dev, int(frontier.task_bounds()[-1]))
        levels.start_search()  # its state is this step's alone
        if frontier.direction == BOTTOM_UP:
            entered = levels.enter(level, False, frontier.visited_bits, frontier.bits)
            counts = levels.bottom_up(level)
        else:
            mine = frontier.of_task(part.task)
            local = mine - dev.lo
            edges = int((dev.indptr_host[local + 1] - dev.indptr_host[local]).sum())
            if edges == 0:  # nothing to read
                empty = np.empty(0, dtype=dtype)
                return Discoveries(part.task, empty, empty.copy(), 0, h2d_bytes=h2d)
            entered = levels.enter(level, True, frontier.visited_bits, mine)
            counts = levels.top_down(level, mine.size, edges)
        vertices, parents = levels.found(level)
        d2h = _READ_BACK_BYTES + vertices.nbytes + parents.nbytes
        cache.data.count_up(entered)  # the slice's upload is counted by the service
        cache.data.count_down(d2h)
    return Discoveries(part.task, vertices.astype(dtype, copy=False),
                       parents.astype(dtype, copy=False),
                       counts.examined, h2d_bytes=h2d + entered, d2h_bytes=d2h,
                       kernel_seconds=counts.seconds)
