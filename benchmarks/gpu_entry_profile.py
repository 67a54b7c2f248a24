"""What a one-task GPU search pays outside its level kernels, piece by piece, without Dask.

Returns
    Prints the median microseconds of each piece over ``--repeats`` runs on a ring of
    ``2**--log-vertices`` vertices (the costs measured here depend on the vertex count, not
    on the edges): the device levels' entry (``enter_reached``) cut into its host work,
    its copy and its two launches, each followed by a synchronisation; one launch of a
    kernel that does nothing; a one-vertex top-down level; the counts read-back; and on the
    host ``first_frontier``.
Approach
    Builds :class:`~taskbfs.kernels.gpu_levels.DeviceLevels` as ``tests/test_kernels_gpu.py``
    does (a device-data service, the default launch configuration) and times each call
    with ``time.perf_counter`` around it and a ``cuda.synchronize()`` inside the window,
    so that a launch's queued work is counted where it was issued. The generic operations
    (launches by argument count, copies, events) are in ``gpu_launch_costs.py``.

    python benchmarks/gpu_entry_profile.py --log-vertices 24 --repeats 50
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _ring(n: int):
    import taskbfs as tb

    v = np.arange(n, dtype=np.int64)
    indptr = np.arange(n + 1, dtype=np.int64) * 2
    indices = np.empty(2 * n, dtype=np.int64)
    indices[0::2] = (v - 1) % n
    indices[1::2] = (v + 1) % n
    indices.reshape(n, 2).sort(axis=1)
    return tb.Graph.from_csr(indptr, indices)


def _levels(graph):
    from taskbfs.kernels.gpu import DeviceSlice, NumbaAllocator, launch_config
    from taskbfs.kernels.gpu_levels import DeviceLevels
    from taskbfs.runtime.device_data import DeviceData

    data = DeviceData(NumbaAllocator(), budget=4 << 30)
    n = graph.num_vertices
    indptr = data.fetch(("out", "indptr"), graph.indptr)[0]
    indices = data.fetch(("out", "indices"), graph.indices)[0]
    out = DeviceSlice(0, n, n, indptr, indices, graph.indptr)
    return DeviceLevels(out, out, n, launch_config(), data.scratch)


def _timed(fn, repeats: int) -> float:
    from numba import cuda

    fn()
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-vertices", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--profile-launches", type=int, default=0,
                        help="also profile this many launches of one kernel (cProfile)")
    args = parser.parse_args(argv)
    from numba import cuda

    from taskbfs.bfs.state import first_frontier
    from taskbfs.kernels.gpu_levels import ROW, ROWS

    n = 1 << args.log_vertices
    graph = _ring(n)
    levels = _levels(graph)
    cfg, k, r = levels.config, levels.k, args.repeats
    reached = np.array([[5], [5], [0]], dtype=levels.dtype)
    ids = np.array([5], dtype=levels.dtype)
    packed = np.concatenate([reached.ravel(), ids])
    parts = {}
    parts["enter_reached (whole)"] = _timed(lambda: levels.enter_reached(0, True, reached, ids), r)
    parts["  pack the entry (host)"] = _timed(lambda: np.concatenate([reached.ravel(), ids]), r)
    parts["  slice the entry buffer"] = _timed(lambda: levels.entry[: packed.size], r)
    parts["  copy the entry (a view's copy_to_device, pageable)"] = _timed(
        lambda: levels.entry[: packed.size].copy_to_device(packed), r)
    pinned = levels.host_entry[: packed.size]
    pinned[:] = packed
    parts["  copy the entry (_upload, page-locked)"] = _timed(
        lambda: levels._upload(levels.entry, pinned), r)
    row = levels.rows[0]
    parts["  fresh_result launch + run"] = _timed(
        lambda: k.fresh_result[cfg.blocks_for(n), cfg.block_size](
            n, levels.parents, levels.distances, row, levels.bits[0], 0), r)
    parts["  fresh_result, launch only"] = _timed(
        lambda: k.fresh_result[1, cfg.block_size](0, levels.parents, levels.distances, row,
                                                  levels.bits[0], 0), r)
    parts["  write_reached launch + run"] = _timed(
        lambda: k.write_reached[1, cfg.block_size](levels.entry, 1, 1, True, levels.parents,
                                                   levels.distances, levels.queues[0],
                                                   levels.bits[0]), r)
    parts["cuda.synchronize alone"] = _timed(lambda: None, r)
    parts["counts read-back (_counts)"] = _timed(lambda: levels._counts(0, 0.0), r)

    def one_vertex_level():
        levels.enter_reached(0, True, reached, ids)
        levels.top_down(0, 1, 2)
    parts["enter + one-vertex top-down level"] = _timed(one_vertex_level, r)
    from taskbfs.kernels.gpu import Stopwatch

    def stopwatch():
        with Stopwatch(cuda, cfg.simulated):
            pass
    parts["Stopwatch around nothing"] = _timed(stopwatch, r)
    levels.enter_reached(0, True, reached, ids)
    parts["one-vertex top-down level (top_down)"] = _timed(lambda: levels.top_down(0, 1, 2), r)
    parts["bottom-up level over every vertex (bottom_up)"] = _timed(lambda: levels.bottom_up(1), r)
    bounds = np.array([0, n], dtype=np.int64)
    degrees = graph.degrees()
    total = int(degrees.sum())
    parts["first_frontier (host)"] = _timed(
        lambda: first_frontier(degrees, bounds, 5, "auto", total_edges=total), r)
    parts["result copy, 2 new pageable arrays"] = _timed(
        lambda: (levels.parents.copy_to_host(), levels.distances.copy_to_host()), max(3, r // 10))
    print(f"n = 2^{args.log_vertices} = {n:,} vertices, {r} repeats, rows {ROWS}x{ROW}; "
          f"median microseconds:")
    for name, us in parts.items():
        print(f"  {name:<52s} {us:10.1f}")
    if args.profile_launches:
        _profile_launches(levels, args.profile_launches)
        _profile(lambda: [levels.top_down(0, 1, 2) for _ in range(args.profile_launches // 4)],
                 "one-vertex top-down levels")


def _profile_launches(levels, count: int) -> None:
    """The Python functions a numba-cuda launch runs, by own time (``write_reached``: eight
    arguments, five of them device arrays)."""
    from numba import cuda

    k = levels.k

    def launches():
        for _ in range(count):
            k.write_reached[1, 32](levels.entry, 0, 0, True, levels.parents, levels.distances,
                                   levels.queues[0], levels.bits[0])
        cuda.synchronize()

    launches()
    start = time.perf_counter()
    launches()
    print(f"{count} launches: {1e6 * (time.perf_counter() - start) / count:.1f} us each "
          f"(not profiled)")
    _profile(launches, "launches")


def _profile(fn, what: str) -> None:
    import cProfile
    import pstats

    print(f"\n{what}, profiled:")
    profile = cProfile.Profile()
    profile.runcall(fn)
    pstats.Stats(profile).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
