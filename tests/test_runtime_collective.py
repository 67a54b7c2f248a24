"""Collectives between tasks running at once on several worker processes
(``taskbfs.runtime.collective``), in a program that is not a BFS.

What it proves
--------------
* On CPU worker processes (127.0.0.1) the communicator trades over Dask's comms: three
  tasks, one per worker, each get every rank's array, rank by rank, from ``allgather``,
  and the element-wise sum, maximum and bitwise or of every rank's array in place from
  ``reduce_into``, over many calls in a row. Asked again
  for the same workers, the runtime gives the same communicator; after a worker's restart,
  another.
* On two GPU workers with NCCL (a host with two GPUs; ``dask`` CLI processes, each pinned
  to its GPU): the communicator is NCCL, made once per runtime and set of workers
  (asked again, the same), the same calls give the same answers on device arrays, a
  different set of workers tears the old one down and makes another, and
  ``close_communicators`` (which closing the runtime calls) tears down the last.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from taskbfs.runtime import communicator
from taskbfs.runtime.collective import close_communicators
from taskbfs.runtime.plugin import workers_of

from programs import (  # isort: skip
    WORKER_PYTHONPATH,
    collective_calls,
    process_runtime,
    runtime_without_warm_up,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import harness  # noqa: E402  (benchmarks/harness.py)

PEERS = 3
CALLS = 20


def _check(got: list, ranks: int, calls: int) -> None:
    for call, (gathered, summed, words, most, total) in enumerate(got):
        np.testing.assert_array_equal(gathered, [[r, call, 7] for r in range(ranks)])
        weight = sum(r + 1 for r in range(ranks))
        np.testing.assert_array_equal(summed, np.arange(4) * weight + ranks * call)
        expected_words = np.zeros(3, dtype=np.uint64)
        expected_words[call % 3] = (1 << ranks) - 1
        np.testing.assert_array_equal(words, expected_words)
        np.testing.assert_array_equal(most, [ranks - 1, 0, call])
        np.testing.assert_array_equal(total, [ranks * call + weight - ranks] * 2)
    assert len(got) == calls


def _run_ranks(client, handle, on_gpu: bool, calls: int = CALLS) -> list:
    channel = f"collective-test-{uuid.uuid4().hex}"
    futures = [client.submit(collective_calls, handle, me, channel, calls, on_gpu,
                             workers=[address], allow_other_workers=False, pure=False)
               for me, address in enumerate(handle.workers)]
    return client.gather(futures)


def test_cpu_workers_trade_over_dask_comms():
    with process_runtime(PEERS) as rt:
        client = rt.client
        workers = sorted(workers_of(client))
        handle = communicator(rt, workers)
        assert handle.nccl is None and "Dask comms" in repr(handle)
        assert communicator(rt, workers) is handle
        for got in _run_ranks(client, handle, on_gpu=False):
            _check(got, PEERS, CALLS)
        # a worker restarted: another worker process, another communicator
        client.restart_workers(workers[:1])
        client.wait_for_workers(PEERS, timeout=60)
        workers = sorted(workers_of(client))
        again = communicator(rt, workers)
        assert again is not handle
        for got in _run_ranks(client, again, on_gpu=False, calls=3):
            _check(got, PEERS, 3)


def _nccl_gpus() -> int:
    try:
        import cupy
        from cupy.cuda import nccl

        return cupy.cuda.runtime.getDeviceCount() if nccl.available else 0
    except Exception:  # noqa: BLE001 - no CuPy, no NCCL, or no device
        return 0


def _joined(client) -> dict:
    from taskbfs.runtime import collective

    return client.run(lambda dask_worker: sorted(
        name for name, address in collective._joined if address == dask_worker.address))


@pytest.mark.skipif(_nccl_gpus() < 2, reason="needs two GPUs and CuPy with NCCL")
def test_gpu_workers_trade_over_nccl_set_up_through_dask(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", WORKER_PYTHONPATH)  # the workers import programs.py
    with harness.cluster(2, 2) as client, runtime_without_warm_up(client) as rt:
        gpus = rt.gpu_workers()
        handle = communicator(rt, gpus)
        assert handle.nccl is not None and communicator(rt, gpus) is handle
        for got in _run_ranks(client, handle, on_gpu=True):
            _check(got, 2, CALLS)
        assert {w: v for w, v in _joined(client).items() if w in gpus} == {
            w: [handle.nccl] for w in gpus}
        # another set of workers (here the same two, other ranks): the old one torn down
        swapped = communicator(rt, gpus[::-1])
        assert swapped.nccl != handle.nccl
        assert all(v == [swapped.nccl] for w, v in _joined(client).items() if w in gpus)
        for got in _run_ranks(client, swapped, on_gpu=True):
            _check(got, 2, CALLS)
        close_communicators(rt)
        assert all(v == [] for v in _joined(client).values())
