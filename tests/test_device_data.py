"""The runtime's device-data service (``taskbfs.runtime.device_data``), with no GPU.

The service keeps opaque device buffers through an allocator; here the allocator is a
host stand-in that copies into numpy arrays and keeps a ledger of what is live, so that
every upload, eviction and free can be checked against what the service says. The GPU
allocator (``kernels.gpu.NumbaAllocator``) serves the BFS device cache in
``tests/test_bfs_gpu.py`` (under the CUDA simulator), where the upload of a graph's
slices at placement is checked through the same counters.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from distributed import Client, LocalCluster

from taskbfs.runtime.device_data import (
    SERVICE_NAME,
    UNKNOWN_MEMORY_BUDGET,
    DeviceData,
    default_budget,
    device_data,
)


class HostAllocator:
    """A stand-in device: "device arrays" are numpy copies; ``live`` holds the ones not freed."""

    def __init__(self, free=math.inf):
        self.live: dict[int, np.ndarray] = {}
        self.uploads = 0
        self._free = free

    def upload(self, host):
        self.uploads += 1
        device = np.array(host, copy=True)
        self.live[id(device)] = device
        return device

    def empty(self, size, dtype):
        device = np.empty(size, dtype=dtype)
        self.live[id(device)] = device
        return device

    def write(self, device, start, host):
        device[start : start + host.size] = host

    def free(self, device):
        del self.live[id(device)]

    def free_memory(self):
        return self._free

    def live_bytes(self) -> int:
        return sum(a.nbytes for a in self.live.values())


def _datum(nbytes: int, value: int = 0) -> np.ndarray:
    return np.full(nbytes // 8, value, dtype=np.int64)


def test_fetch_uploads_once_then_hits():
    alloc = HostAllocator()
    data = DeviceData(alloc, budget=1 << 20)
    host = _datum(800, 7)
    first, up = data.fetch("a", host)
    again, up_again = data.fetch("a", lambda: pytest.fail("a hit must not build the datum"))
    assert up == 800 and up_again == 0 and again is first
    np.testing.assert_array_equal(first, host)
    assert data.stats() == {"data": 1, "hits": 1, "misses": 1, "evictions": 0,
                            "bytes_up": 800, "bytes_down": 0, "used_bytes": 800,
                            "budget": 1 << 20}
    assert data.get("b") is None and data.hits == 1  # an absent name is no hit


def test_least_recently_used_goes_first_and_memory_is_given_back():
    alloc = HostAllocator()
    data = DeviceData(alloc, budget=3000)
    for name in "abc":
        data.fetch(name, _datum(1000))
    data.get("a")  # now b is the least recently used
    data.fetch("d", _datum(1000))
    assert data.names() == ["c", "a", "d"] and "b" not in data
    assert data.evictions == 1 and data.used_bytes == 3000 == alloc.live_bytes()
    data.fetch("e", _datum(2000))  # two must go: c, then a
    assert data.names() == ["d", "e"] and data.evictions == 3
    assert data.used_bytes == alloc.live_bytes() <= data.budget


def test_pinned_data_is_not_evicted_while_a_task_runs():
    alloc = HostAllocator()
    data = DeviceData(alloc, budget=2000)
    data.fetch("a", _datum(1000))
    data.fetch("b", _datum(1000))
    with data.pinned(["a", "b"]), data.pinned(["a"]):
        data.fetch("c", _datum(1000))  # nothing evictable: over budget, both kept
        assert data.names() == ["a", "b", "c"] and data.evictions == 0
    data.fetch("d", _datum(1000))  # pins gone: the two least recently used go
    assert data.names() == ["c", "d"] and data.evictions == 2
    with data.pinned(["c"]):
        data.fetch("e", _datum(1000))
    assert "c" in data and "d" not in data


def test_scratch_grows_counts_in_the_budget_and_evicts_data():
    alloc = HostAllocator()
    data = DeviceData(alloc, budget=4000)
    data.fetch("a", _datum(2000))
    small = data.scratch("out", 10, np.int64)
    assert data.scratch("out", 5, np.int64) is small  # big enough: the same buffer
    big = data.scratch("out", 300, np.int64)  # 2400 bytes: "a" must go
    assert big is not small and big.size == 300 and "a" not in data
    assert data.used_bytes == 2400 == alloc.live_bytes()
    assert data.scratch("out", 300, np.int32) is not big  # another dtype: a new buffer
    data.release()
    assert alloc.live == {} and data.used_bytes == 0 and len(data) == 0


def test_put_replaces_and_discard_frees():
    alloc = HostAllocator()
    data = DeviceData(alloc, budget=1 << 20)
    data.put("a", _datum(80, 1))
    data.put("a", _datum(160, 2))
    assert data.misses == 2 and data.used_bytes == 160 == alloc.live_bytes()
    assert data.get("a")[0] == 2
    assert data.discard("a") and not data.discard("a") and alloc.live == {}


def test_traffic_counters():
    data = DeviceData(HostAllocator(), budget=1 << 20)
    data.fetch("a", _datum(80))
    data.count_up(16)
    data.count_down(24)
    data.count_down(8)
    assert data.bytes_up == 96 and data.bytes_down == 32


def test_budget_given_or_a_share_of_free_memory(setting):
    assert DeviceData(HostAllocator(free=1000), budget=12345).budget == 12345
    assert DeviceData(HostAllocator(free=1000)).budget == default_budget(HostAllocator(free=1000))
    setting("gpu.device-memory-fraction", 0.25)
    assert default_budget(HostAllocator(free=1000)) == 250
    assert DeviceData(HostAllocator(free=1000)).budget == 250
    assert default_budget(HostAllocator()) == UNKNOWN_MEMORY_BUDGET  # cannot say: 1 GiB


def _service_stats(dask_worker):
    def factory():
        return HostAllocator()

    service = device_data(factory, dask_worker)
    assert device_data(lambda: pytest.fail("made twice"), dask_worker) is service
    service.fetch("x", np.arange(4))
    return service.stats()["misses"], id(service)


def test_one_service_per_worker_dropped_with_the_worker_state():
    from taskbfs.runtime.worker import forget_worker_state, worker_cache

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        stats = client.run(_service_stats)
        assert [misses for misses, _ in stats.values()] == [1, 1]
        assert len({ident for _, ident in stats.values()}) == 2  # one service per worker
        worker = next(iter(cluster.workers.values()))
        service = worker_cache(worker)[SERVICE_NAME]
        allocator = service.allocator
        forget_worker_state(worker)  # what the runtime's worker plugin does when removed
        assert allocator.live == {} and SERVICE_NAME not in worker_cache(worker)


def test_a_datum_uploaded_in_pieces_is_joined_on_the_device():
    """A list of arrays becomes one device datum, the pieces one after another (a graph's
    slices joined into the whole graph's copy), counted once as a miss of its bytes."""
    allocator = HostAllocator()
    service = DeviceData(allocator, budget=1 << 20)
    pieces = [np.arange(5, dtype=np.int32), np.zeros(0, dtype=np.int32), np.arange(7, 10, dtype=np.int32)]
    device, uploaded = service.fetch("joined", lambda: pieces)
    np.testing.assert_array_equal(device, np.concatenate(pieces))
    assert uploaded == sum(p.nbytes for p in pieces) and service.misses == 1
    assert service.fetch("joined", lambda: pieces) == (device, 0)  # a hit
