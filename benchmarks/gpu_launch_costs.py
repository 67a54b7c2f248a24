"""What the GPU step's host-side operations cost one by one (numba-cuda on this machine).

Returns (prints) the median microseconds of: a kernel launch (1, 3 and 8 array
arguments), a device-array slice, a small device allocation, a small and a 1 MB
host→device copy, a small and a 1 MB device→host copy, a 2 MB bitmap (a scale-24 graph's
visited set) both ways from ordinary and from page-locked memory, a synchronize, and a
CUDA event pair (what ``Stopwatch`` does). The GPU step task's fixed cost is a sum of these.
With ``--runtime``, the same again in this thread while an embedded ``tb.Runtime()`` is
open (its scheduler and workers are threads of this process), and inside a task on its
GPU worker: what the runtime's threads add to each operation.

    python benchmarks/gpu_launch_costs.py --runtime
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda


@cuda.jit
def _touch1(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


@cuda.jit
def _touch3(a, b, c):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += b[i] + c[i]


@cuda.jit
def _touch8(a, b, c, d, e, f, g, h):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i]


def median_us(fn, repeat=300):
    fn()
    cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    cuda.synchronize()
    return float(np.median(times)) * 1e6


def measure() -> dict:
    """``{operation: median µs}`` in the calling thread."""
    small = cuda.device_array(256, dtype=np.int64)
    arrays = [cuda.to_device(np.zeros(256, dtype=np.int64)) for _ in range(8)]
    big = cuda.device_array(1 << 17, dtype=np.int64)  # 1 MB
    host_small = np.zeros(3, dtype=np.int64)
    host_big = np.zeros(1 << 17, dtype=np.int64)
    bitmap = cuda.device_array(1 << 18, dtype=np.uint64)  # 2 MB: 2^24 vertices
    host_bitmap = np.zeros(1 << 18, dtype=np.uint64)
    pinned_bitmap = cuda.pinned_array(1 << 18, dtype=np.uint64)
    three = small[:3]
    rows = {
        "launch, 1 array": lambda: _touch1[1, 256](arrays[0]),
        "launch, 3 arrays": lambda: _touch3[1, 256](*arrays[:3]),
        "launch, 8 arrays": lambda: _touch8[1, 256](*arrays),
        "launch, 1 array + sync": lambda: (_touch1[1, 256](arrays[0]), cuda.synchronize()),
        "slice of a device array": lambda: small[:100],
        "device_array(256)": lambda: cuda.device_array(256, dtype=np.int64),
        "copy_to_device, 24 B": lambda: three.copy_to_device(host_small),
        "copy_to_device, 1 MB": lambda: big.copy_to_device(host_big),
        "copy_to_host, 24 B": lambda: three.copy_to_host(),
        "copy_to_host, 1 MB": lambda: big.copy_to_host(),
        "to device, 2 MB ordinary": lambda: bitmap.copy_to_device(host_bitmap),
        "to device, 2 MB pinned": lambda: bitmap.copy_to_device(pinned_bitmap),
        "to host, 2 MB into ordinary": lambda: bitmap.copy_to_host(host_bitmap),
        "to host, 2 MB into pinned": lambda: bitmap.copy_to_host(pinned_bitmap),
        "np.copyto 2 MB": lambda: np.copyto(host_bitmap, pinned_bitmap),
        "synchronize": cuda.synchronize,
        "event pair + synchronize": _event_pair,
    }
    return {name: median_us(fn) for name, fn in rows.items()}


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", action="store_true",
                        help="also measure beside an open tb.Runtime() and in a task on its GPU worker")
    args = parser.parse_args()
    name = getattr(cuda.get_current_device(), "name", "simulator")
    name = name.decode() if isinstance(name, bytes) else name
    print(f"GPU: {name}; {time.strftime('%Y-%m-%d %H:%M')}")
    columns = {"alone": measure()}
    if args.runtime:
        import taskbfs as tb

        with tb.Runtime() as runtime:
            columns["runtime open"] = measure()
            future = runtime.client.submit(measure, pure=False, resources={"GPU": 1})
            columns["GPU worker task"] = future.result()
    print(f"{'median us':>28s} " + " ".join(f"{c:>16s}" for c in columns))
    for op in columns["alone"]:
        print(f"{op:>28s} " + " ".join(f"{columns[c][op]:16.1f}" for c in columns))


def _event_pair():
    start, stop = cuda.event(), cuda.event()
    start.record()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


if __name__ == "__main__":
    main()
