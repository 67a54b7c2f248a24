"""What a one-task search's entry to the GPU costs, part by part (``DeviceLevels``).

Returns (prints): median microseconds over ``--repeats`` of each way into the device levels
of a Kronecker graph (the reached pairs with ``enter_reached``, the visited bitmap with
``enter``) and of their parts (the copy, each launch), each followed by a synchronize, and
the level-0 top-down level after the entry.
Approach
    The device levels are made as a GPU worker makes them (the device-data service over the
    GPU tier's allocator), without Dask: only the entry is timed.

    python benchmarks/gpu_entry_costs.py --scale 18 --pairs 1 20000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import taskbfs as tb


def _levels(graph):
    from taskbfs.kernels.gpu import DeviceSlice, NumbaAllocator, launch_config
    from taskbfs.kernels.gpu_levels import DeviceLevels
    from taskbfs.runtime.device_data import DeviceData

    data = DeviceData(NumbaAllocator(), budget=1 << 34)
    n = graph.num_vertices
    indptr = data.fetch(("g", "indptr"), graph.indptr)[0]
    whole = DeviceSlice(0, n, n, indptr, data.fetch(("g", "indices"), graph.indices)[0],
                        graph.indptr)
    return DeviceLevels(whole, whole, n, launch_config(), data.scratch)


def _median_us(fn, repeats: int) -> float:
    from numba import cuda

    times = []
    for _ in range(repeats):
        cuda.synchronize()
        start = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def _parts(levels, count: int, rng):
    """``(pairs, ids, {part: call})`` for ``count`` reached pairs (level 0, top-down)."""
    n, cfg, k = levels.n, levels.config, levels.k
    vertices = rng.choice(n, size=count, replace=False).astype(levels.dtype)
    pairs = np.stack([vertices, vertices, np.ones(count, levels.dtype)])
    pairs[2, 0] = 0
    ids = vertices[:1]
    packed = np.concatenate([pairs.ravel(), ids])
    entry = levels.entry
    return pairs, ids, {
        "enter_reached (whole)": lambda: levels.enter_reached(0, True, pairs, ids),
        "copy of the pairs and ids": lambda: entry[: packed.size].copy_to_device(packed),
        "fresh_result launch": lambda: k.fresh_result[cfg.blocks_for(n), cfg.block_size](
            n, levels.parents, levels.distances, levels.rows[0], levels.bits[0], 0),
        "write_reached launch": lambda: k.write_reached[cfg.blocks_for(count), cfg.block_size](
            entry, count, 1, True, levels.parents, levels.distances, levels.queues[0],
            levels.bits[0]),
        "a view of a device array": lambda: entry[:count],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--pairs", type=int, nargs="+", default=[1, 20000])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    graph = tb.kronecker(args.scale, 16, seed=1)
    levels = _levels(graph)
    n = graph.num_vertices
    rng = np.random.default_rng(1)
    print(f"scale {args.scale}: {n:,} vertices; entry capacity {levels.entry_capacity:,} ids")
    for count in args.pairs:
        pairs, ids, parts = _parts(levels, count, rng)
        print(f"\n{count:,} pairs ({(pairs.size + ids.size) * pairs.itemsize:,} bytes):")
        for name, fn in parts.items():
            fn()  # compiled and loaded
            print(f"  {name:32s} {_median_us(fn, args.repeats):9.1f} us")
    visited = np.zeros(levels.words, dtype=np.uint64)
    visited[0] = 1
    source = np.zeros(1, dtype=levels.dtype)
    print(f"\nthe bitmap ({visited.nbytes:,} bytes):")
    fn = lambda: levels.enter(0, True, visited, source)  # noqa: E731
    fn()
    print(f"  {'enter (whole)':32s} {_median_us(fn, args.repeats):9.1f} us")
    levels.enter_reached(0, True, pairs[:, :1], source)
    arcs = int(graph.degrees()[0])
    fn = lambda: levels.top_down(0, 1, arcs)  # noqa: E731
    label = f"top_down from vertex 0 ({arcs:,} arcs)"
    print(f"  {label:32s} {_median_us(fn, args.repeats):9.1f} us")


if __name__ == "__main__":
    main()
