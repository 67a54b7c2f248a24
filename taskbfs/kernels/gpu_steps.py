"""One task's top-down and bottom-up steps on the GPU: the CPU steps' twins over device arrays.

Returns
    :func:`gpu_top_down_step` and :func:`gpu_bottom_up_step` take the CPU steps'
    arguments as device arrays and return the same ``(n_found, edges_examined)``
    (:mod:`taskbfs.kernels.cpu`); launch sizes from a :class:`~taskbfs.kernels.gpu.LaunchConfig`.
"""

from __future__ import annotations

import numpy as np

from taskbfs.kernels.gpu import (
    LaunchConfig,
    as_device,
    device_exclusive_scan,
    kernels_for,
    launch_config,
    require_gpu,
)


def _zeroed_counters(config: LaunchConfig, workspace):
    """The step's int64 counters, zeroed on the device (no host→device copy)."""
    from taskbfs.kernels._gpu_kernels import NUM_COUNTERS

    counters = workspace("counters", NUM_COUNTERS, np.int64)
    kernels_for(config).fill[1, config.block_size](counters, 0)
    return counters


def _fresh_buffer(name, size, dtype):
    """Default workspace: a new device array per request."""
    from numba import cuda

    return cuda.device_array(max(int(size), 1), dtype=dtype)


def _read_counters(counters):
    from taskbfs.kernels._gpu_kernels import EDGES, FOUND

    values = counters.copy_to_host()
    return int(values[FOUND]), int(values[EDGES])


def _copy_back(device_out, host_out, n_found: int) -> None:
    if host_out is not None and n_found:
        host_out[:n_found] = device_out[:n_found].copy_to_host()


# ----------------------------------------------------------------------------- step functions
def gpu_top_down_step(indptr, indices, lo, frontier, visited_bits, out_vertices, out_parents,
                      *, mask_bits=None, dedupe: bool = True, config: LaunchConfig | None = None,
                      workspace=None, total_edges: int | None = None, clear_mask: bool = True):
    """GPU twin of :func:`taskbfs.kernels.cpu.top_down_step`.

    Parameters
    ----------
    indptr, indices, lo, frontier, visited_bits, out_vertices, out_parents
        As for the CPU kernel; device arrays (host arrays are copied, and host outputs
        receive the results). Outputs hold at least ``frontier_edge_count`` entries
        (with ``dedupe``, ``min(that, num_vertices)`` is enough).
    mask_bits : device array of uint64, optional
        The vertex mask, ``len(visited_bits)`` words: vertices set in it are not reported
        (as if visited); the ones this call reports are set. Default: a fresh zeroed one
        per call (O(n); the BFS's device cache keeps one instead).
    dedupe : bool, default True
        Report each newly reached vertex once (any of its frontier in-neighbours as
        parent). False: every (unvisited neighbour, frontier vertex) pair, as the CPU does.
    config : LaunchConfig, optional
        Default :func:`launch_config`.
    workspace : callable, optional
        ``workspace(name, size, dtype)`` → a device buffer of at least ``size`` entries
        (e.g. :meth:`~taskbfs.runtime.device_data.DeviceData.scratch`); default: fresh
        allocations.
    total_edges : int, optional
        ``frontier_edge_count`` when the caller knows it (the host wrapper does, from its
        copy of ``indptr``); otherwise it is read back from the device (8 bytes, one sync).
    clear_mask : bool, default True
        Clear the bits this call set before returning (a zeroed mask stays zeroed). False
        keeps them, so that later steps of the same level sharing the mask do not report
        those vertices again (the BFS device cache does that per level).

    Returns
    -------
    n_found : int
        Pairs written.
    edges_examined : int
        Adjacency entries read: the sum of the frontier's degrees, as on the CPU.
    """
    cuda = require_gpu()
    config = config or launch_config()
    k = kernels_for(config)
    num_frontier = len(frontier)
    if num_frontier == 0:
        return 0, 0
    d_indptr, _ = as_device(cuda, indptr, np.int64)
    d_indices, _ = as_device(cuda, indices)
    d_frontier, _ = as_device(cuda, frontier, np.int64)
    d_visited, _ = as_device(cuda, visited_bits, np.uint64)
    d_out_v, host_v = as_device(cuda, out_vertices, np.int64)
    d_out_u, host_u = as_device(cuda, out_parents, np.int64)
    if mask_bits is None:
        mask_bits = cuda.to_device(np.zeros(d_visited.size if dedupe else 1, dtype=np.uint64))
    workspace = workspace or _fresh_buffer
    counters = _zeroed_counters(config, workspace)
    offsets = workspace("offsets", num_frontier + 1, np.int64)
    k.frontier_degrees[config.blocks_for(num_frontier + 1), config.block_size](
        d_indptr, lo, d_frontier, num_frontier, offsets)
    device_exclusive_scan(offsets, num_frontier + 1, config)
    if total_edges is None:
        total_edges = int(offsets[num_frontier : num_frontier + 1].copy_to_host()[0])
    num_tiles = -(-int(total_edges) // k.tile)
    if num_tiles:
        tile_first = workspace("tile_first", num_tiles + 1, np.int64)
        k.tile_sources[config.blocks_for(num_tiles + 1), config.block_size](
            offsets, num_frontier, num_tiles, tile_first)
        k.top_down_expand[min(num_tiles, config.grid_size), config.block_size](
            d_indptr, d_indices, lo, d_frontier, offsets, num_frontier, tile_first, num_tiles,
            d_visited, mask_bits, bool(dedupe), d_out_v, d_out_u, counters)
    if dedupe and clear_mask:
        k.clear_mask[config.blocks_for(total_edges), config.block_size](mask_bits, d_out_v, counters)
    n_found, edges = _read_counters(counters)
    _copy_back(d_out_v, out_vertices if host_v else None, n_found)
    _copy_back(d_out_u, out_parents if host_u else None, n_found)
    return n_found, edges


def gpu_bottom_up_step(indptr, indices, lo, hi, visited_bits, frontier_bits, out_vertices,
                       out_parents, *, config: LaunchConfig | None = None, workspace=None):
    """GPU twin of :func:`taskbfs.kernels.cpu.bottom_up_step`.

    Same results as the CPU kernel: the same ``(vertex, parent)`` pairs (the parent is the
    *first* frontier in-neighbour in adjacency order) and the same ``edges_examined``
    (entries read up to and including the parent, or the whole list); only the order of
    the pairs differs.

    Parameters
    ----------
    indptr, indices, lo, hi, visited_bits, frontier_bits, out_vertices, out_parents
        As for the CPU kernel; device or host arrays (see :func:`gpu_top_down_step`).
        ``indices`` lists in-neighbours. Outputs hold at least ``hi - lo`` entries.
    config : LaunchConfig, optional
    workspace : callable, optional
        As for :func:`gpu_top_down_step` (buffers: counters and the stage-2 queue).

    Returns
    -------
    n_found, edges_examined : int
    """
    cuda = require_gpu()
    config = config or launch_config()
    k = kernels_for(config)
    num_own = int(hi) - int(lo)
    if num_own <= 0:
        return 0, 0
    d_indptr, _ = as_device(cuda, indptr, np.int64)
    d_indices, _ = as_device(cuda, indices)
    d_visited, _ = as_device(cuda, visited_bits, np.uint64)
    d_frontier, _ = as_device(cuda, frontier_bits, np.uint64)
    d_out_v, host_v = as_device(cuda, out_vertices, np.int64)
    d_out_u, host_u = as_device(cuda, out_parents, np.int64)
    workspace = workspace or _fresh_buffer
    deferred = workspace("deferred", num_own, np.int64)
    counters = _zeroed_counters(config, workspace)
    limit = config.bu_thread_edges
    k.bottom_up_threads[config.blocks_for(num_own), config.block_size](
        d_indptr, d_indices, lo, hi, d_visited, d_frontier, limit, d_out_v, d_out_u,
        deferred, counters)
    k.bottom_up_blocks[config.grid_size, config.block_size](
        d_indptr, d_indices, lo, d_frontier, limit, deferred, d_out_v, d_out_u, counters)
    n_found, edges = _read_counters(counters)
    _copy_back(d_out_v, out_vertices if host_v else None, n_found)
    _copy_back(d_out_u, out_parents if host_u else None, n_found)
    return n_found, edges
