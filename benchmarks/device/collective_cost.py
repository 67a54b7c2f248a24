"""What does one collective between GPU workers cost: NCCL set up through Dask, against the
same call over Dask's comms?

Returns
    A line per (medium, call, bytes): the median µs of one call over ``--calls`` calls in a
    row on each of G GPU workers (``dask`` CLI processes, one GPU each), and GB/s for an
    allgather (bytes every rank receives). The bytes are those a level of a 1D-partitioned
    search trades: a frontier bitmap of a scale-S graph is ``2**S / 8`` bytes (allgather),
    the level's counts a few int64 (allreduce).
Approach
    ``taskbfs.runtime.communicator`` on the GPU workers (NCCL; device arrays, each call
    followed by a stream synchronisation) and a :class:`~taskbfs.runtime.Communicator`
    over Dask's comms on the same workers (host arrays).

    python benchmarks/device/collective_cost.py --gpus 2 --scales 20 24 26 28 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402  (benchmarks/harness.py)

import taskbfs as tb  # noqa: E402
from taskbfs.runtime import Communicator, communicator  # noqa: E402


def timed_calls(handle, me: int, channel: str, what: str, words: int, calls: int) -> list:
    """One rank's task: ``calls`` collectives of ``words`` uint64 (or int64 counts), each
    timed to its end on this rank (seconds)."""
    on_gpu = handle.nccl is not None
    if on_gpu:
        import cupy as xp
    else:
        xp = np
    collective = handle.join(me, channel, timeout=120)
    local = xp.ones(words, dtype=np.uint64 if what == "allgather" else np.int64)
    def call(array):
        if what == "allgather":
            return collective.allgather(array)
        return collective.reduce_into(array, "sum")

    seconds = []
    try:
        for _ in range(calls + 2):  # the first two warm the path
            start = time.perf_counter()
            call(local)
            if on_gpu:
                xp.cuda.get_current_stream().synchronize()
            seconds.append(time.perf_counter() - start)
    finally:
        collective.close()
    return seconds[2:]


def measure(client, handle, what: str, words: int, calls: int) -> float:
    channel = f"collective-cost-{uuid.uuid4().hex}"
    futures = [client.submit(timed_calls, handle, me, channel, what, words, calls,
                             workers=[w], allow_other_workers=False, pure=False)
               for me, w in enumerate(handle.workers)]
    per_rank = client.gather(futures)
    return statistics.median(max(r[i] for r in per_rank) for i in range(calls))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--scales", type=int, nargs="+", default=[20, 24, 26, 28])
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args(argv)
    with harness.cluster(args.gpus, 2) as client, tb.Runtime(client) as rt:
        gpus = rt.gpu_workers()
        media = {"nccl": communicator(rt, gpus), "dask": Communicator(gpus, None)}
        if media["nccl"].nccl is None:
            print("no NCCL between these workers: Dask comms only")
            del media["nccl"]
        for name, handle in media.items():
            for words in (4, 64):
                s = measure(client, handle, "allreduce", words, args.calls)
                print(f"{name:5s} allreduce {8 * words:>12,d} B  {s * 1e6:9.1f} us")
            for scale in args.scales:
                words = max(1, (1 << scale) // 64)
                s = measure(client, handle, "allgather", words, args.calls)
                received = 8 * words * args.gpus
                print(f"{name:5s} allgather {8 * words:>12,d} B  {s * 1e6:9.1f} us  "
                      f"{received / s / 1e9:7.1f} GB/s  (scale {scale} bitmap)")


if __name__ == "__main__":
    main()
