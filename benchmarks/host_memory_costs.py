"""Host memory costs a GPU search pays: pageable against pinned copies, and first touch.

Returns (prints) median milliseconds and GB/s of: host→device and device→host copies of
2, 32 and 128 MB from pageable numpy arrays and from pinned ones (numba.cuda), allocating
a pinned array, and writing a fresh ``np.empty`` array (the first touch of its pages, as
the result assembly does for parents and distances) on 1 thread and on N threads; plus the
kernel's transparent huge page setting, which decides the cost of first touch.
Approach: each measurement repeated ``--repeat`` times, median; the threads write equal
slices of one array, as the assembly's tasks do.

    python benchmarks/host_memory_costs.py --threads 16
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def report(label: str, ms: float, nbytes: int | None = None) -> None:
    rate = f"{nbytes / ms / 1e6:8.1f} GB/s" if nbytes else ""
    print(f"  {label:<44} {ms:8.3f} ms {rate}")


def transparent_hugepages() -> str:
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return path.read_text().strip() if path.exists() else "unknown"


def first_touch(nbytes: int, threads: int, repeat: int) -> float:
    pool = ThreadPoolExecutor(threads)
    n = nbytes // 8

    def once():
        out = np.empty(n, dtype=np.int64)
        cuts = np.linspace(0, n, threads + 1).astype(int)
        list(pool.map(lambda lo, hi: out[lo:hi].fill(-1), cuts[:-1], cuts[1:]))

    try:
        return median_ms(once, repeat)
    finally:
        pool.shutdown()


def copies(repeat: int) -> None:
    for mb in (2, 32, 128):
        copies_of(mb << 20, repeat)


def copies_of(nbytes: int, repeat: int) -> None:
    from numba import cuda

    mb = nbytes >> 20
    host = np.ones(nbytes // 8, dtype=np.int64)
    pinned = cuda.pinned_array(host.size, dtype=np.int64)
    pinned[:] = 1
    dev = cuda.to_device(host)
    report(f"H2D {mb} MB pageable", median_ms(lambda: dev.copy_to_device(host), repeat), nbytes)
    report(f"H2D {mb} MB pinned", median_ms(lambda: dev.copy_to_device(pinned), repeat), nbytes)
    report(f"D2H {mb} MB pageable (new array)", median_ms(dev.copy_to_host, repeat), nbytes)
    report(f"D2H {mb} MB pageable (into one)", median_ms(lambda: dev.copy_to_host(host), repeat),
           nbytes)
    report(f"D2H {mb} MB pinned", median_ms(lambda: dev.copy_to_host(pinned), repeat), nbytes)
    report(f"D2H {mb} MB pinned + np.copy", median_ms(
        lambda: dev.copy_to_host(pinned).copy(), repeat), nbytes)
    report(f"pinned_array({mb} MB)", median_ms(
        lambda: cuda.pinned_array(host.size, dtype=np.int64), repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-gpu", action="store_true")
    args = parser.parse_args()
    print(f"transparent huge pages: {transparent_hugepages()}")
    for mb in (8, 128):
        for threads in (1, args.threads):
            report(f"first touch of np.empty({mb} MB), {threads} threads",
                   first_touch(mb << 20, threads, args.repeat), mb << 20)
    if not args.no_gpu:
        copies(args.repeat)


if __name__ == "__main__":
    main()
