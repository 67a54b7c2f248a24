"""The pinned host buffer pool (``taskbfs.kernels.pinned``): buffers lent as arrays come back
when no array reading them is left, never sooner; sizes, reuse and the budget.

Runs on numba's simulator or a real GPU (``cuda.pinned_array`` is all it needs); without
either it runs in a subprocess under the simulator, as the other GPU test files do.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from gpu_support import run_module_under_simulator

from taskbfs.kernels.gpu import gpu_available

IN_PROCESS = gpu_available()
needs_gpu = pytest.mark.skipif(
    not IN_PROCESS,
    reason="numba.cuda is not usable in this process; "
    "test_pinned_in_simulator_subprocess runs these under NUMBA_ENABLE_CUDASIM=1",
)


@pytest.mark.gpu
@pytest.mark.skipif(IN_PROCESS, reason="the tests run in this process")
def test_pinned_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=300)


@needs_gpu
def test_a_buffer_comes_back_only_when_every_view_of_it_is_gone():
    from taskbfs.kernels.pinned import MIN_BUFFER_BYTES, PinnedPool

    pool = PinnedPool(budget=1 << 30)
    a = pool.take(1000, np.int32)
    assert a.dtype == np.int32 and a.shape == (1000,) and a.flags.writeable
    a[:] = np.arange(1000)
    part = a[10:20]
    reshaped = part.view(np.uint32).reshape(2, 5)
    del a
    gc.collect()
    assert pool.free_bytes == 0  # views of it are alive
    b = pool.take(1000, np.int32)  # a new buffer: the lent one is still read
    b[:] = -1
    np.testing.assert_array_equal(part, np.arange(10, 20))
    np.testing.assert_array_equal(reshaped.ravel(), np.arange(10, 20))
    del part, reshaped, b
    gc.collect()
    assert pool.free_bytes == 2 * MIN_BUFFER_BYTES
    assert (pool.allocated, pool.reused) == (2, 0)
    c = pool.take(16, np.uint64)  # any request of the size class reuses a free buffer
    assert pool.reused == 1 and pool.allocated_bytes == 2 * MIN_BUFFER_BYTES
    del c


@needs_gpu
def test_size_classes_and_the_budget():
    from taskbfs.kernels.pinned import MIN_BUFFER_BYTES, PinnedPool, _size_class

    assert _size_class(1) == MIN_BUFFER_BYTES
    assert _size_class(MIN_BUFFER_BYTES + 1) == 2 * MIN_BUFFER_BYTES
    assert _size_class(3 << 20) == 4 << 20
    pool = PinnedPool(budget=3 * MIN_BUFFER_BYTES)
    big = pool.take(MIN_BUFFER_BYTES + 8, np.uint8)  # a 2-buffer class
    assert big is not None and pool.allocated_bytes == 2 * MIN_BUFFER_BYTES
    small = pool.take(8, np.int64)
    assert small is not None and pool.allocated_bytes == 3 * MIN_BUFFER_BYTES
    assert pool.take(8, np.int64) is None and pool.refused == 1  # budget spent
    del small
    gc.collect()
    assert pool.take(8, np.int64) is not None  # the freed one serves it
    off = PinnedPool(budget=0)
    assert off.take(1, np.int8) is None


@needs_gpu
def test_free_buffers_of_other_classes_make_room_for_a_new_class():
    from taskbfs.kernels.pinned import MIN_BUFFER_BYTES, PinnedPool

    pool = PinnedPool(budget=4 * MIN_BUFFER_BYTES)
    two, one = pool.take(2 * MIN_BUFFER_BYTES, np.uint8), pool.take(8, np.int64)
    lent = pool.take(8, np.int64)
    del two, one
    gc.collect()
    assert pool.free_bytes == 3 * MIN_BUFFER_BYTES and pool.allocated_bytes == 4 * MIN_BUFFER_BYTES
    # a 2-buffer class again is served by the free one; a 4-buffer class needs the room of
    # every free buffer and of the lent one too: refused, the free ones kept
    again = pool.take(2 * MIN_BUFFER_BYTES, np.uint8)
    assert again is not None and pool.reused == 1
    del again
    gc.collect()
    assert pool.take(4 * MIN_BUFFER_BYTES, np.uint8) is None and pool.refused == 1
    assert pool.free_bytes == 3 * MIN_BUFFER_BYTES
    del lent
    gc.collect()
    big = pool.take(4 * MIN_BUFFER_BYTES, np.uint8)  # the lent one came back: room for it
    assert big is not None and pool.free_bytes == 0
    assert pool.allocated_bytes == 4 * MIN_BUFFER_BYTES


@needs_gpu
def test_copy_to_host_lands_in_the_pool_or_in_ordinary_memory(monkeypatch):
    from numba import cuda

    from taskbfs.kernels import pinned

    monkeypatch.setattr(pinned, "_pool", None)
    data = np.arange(5000, dtype=np.int64)
    device = cuda.to_device(data)
    out = pinned.copy_to_host(device, 300, np.int64)
    np.testing.assert_array_equal(out, data[:300])
    assert pinned.pinned_pool().allocated == 1
    monkeypatch.setattr(pinned, "_POOL_BYTES", 0)  # the pool turned off
    monkeypatch.setattr(pinned, "_pool", None)
    plain = pinned.copy_to_host(device, 300, np.int64)
    np.testing.assert_array_equal(plain, data[:300])
    assert pinned.pinned_pool().refused == 1


@needs_gpu
@pytest.mark.parametrize("n", [1, 999, 1000, 4321])
def test_copy_out_through_the_staging_chunk_when_the_pool_is_spent(monkeypatch, n):
    """A result copied out when the pool has no room goes through the pinned staging chunk,
    a chunk at a time (here 1000 int64 items), each copied into place on threads."""
    from numba import cuda

    from taskbfs.kernels import pinned

    data = np.arange(5000, dtype=np.int64) * 3 - 7
    device = cuda.to_device(data)
    monkeypatch.setattr(pinned, "_pool", None)
    later = []  # the pool's background pinning, held back until both copies are done
    monkeypatch.setattr(pinned, "_grower", lambda: type("Later", (), {
        "submit": staticmethod(lambda fn, *a: later.append((fn, a)))})())
    # no free buffer yet: staged, and one pinned later for each (a result's two arrays)
    first, second = (pinned.copy_out(device, n, np.int64) for _ in range(2))
    np.testing.assert_array_equal(first, data[:n])
    np.testing.assert_array_equal(second, data[:n])
    assert first.flags.owndata and second.flags.owndata and len(later) == 2
    for fn, a in later:
        fn(*a)
    assert pinned.pinned_pool().allocated == 2 and pinned.pinned_pool().free_bytes > 0
    pooled = pinned.copy_out(device, n, np.int64)
    np.testing.assert_array_equal(pooled, data[:n])
    assert pinned.pinned_pool().reused == 1 and not pooled.flags.owndata
    monkeypatch.setattr(pinned, "_POOL_BYTES", 0)  # the pool turned off
    monkeypatch.setattr(pinned, "_pool", None)
    monkeypatch.setattr(pinned, "STAGE_BYTES", 8 * 1000)
    monkeypatch.setattr(pinned, "_stage", None)
    staged = pinned.copy_out(device, n, np.int64)
    np.testing.assert_array_equal(staged, data[:n])
    for fn, a in later[2:]:
        fn(*a)
    assert pinned.pinned_pool().refused == 1 and pinned._stage.size == 8 * 1000
    assert staged.flags.owndata  # ordinary memory, not a view of the chunk




@needs_gpu
def test_placing_pins_the_buffers_of_two_results_ahead(monkeypatch):
    from taskbfs.kernels import pinned
    from taskbfs.search import device_cache

    monkeypatch.setattr(pinned, "_pool", None)
    later = []
    monkeypatch.setattr(pinned, "_grower", lambda: type("Later", (), {
        "submit": staticmethod(lambda fn, *a: later.append((fn, a)))})())
    device_cache._pin_result_buffers([(0, 5000)], 5000)
    pool = pinned.pinned_pool()
    # pinned before placement returns (not while the first search runs), on no other thread
    assert later == []
    assert pool.free_count(5000, np.int32) == 2 * device_cache.RESULTS_PINNED_AHEAD
    device_cache._pin_result_buffers([(0, 5000)], 5000)  # held already: nothing more
    assert pool.free_count(5000, np.int32) == 2 * device_cache.RESULTS_PINNED_AHEAD
    assert pool.take(5000, np.int32, allocate=False) is not None


@needs_gpu
def test_an_owner_pins_its_ranges_results_not_the_whole_graphs(monkeypatch):
    """A worker owning two ranges of a 200,000-vertex graph copies each range's distances
    and parents at a search's end (``copy_out`` of 60,000 and 64,000 items, one size
    class): it pins those, four per range, and no buffer of the whole graph's size."""
    from taskbfs.kernels import pinned
    from taskbfs.search import device_cache

    monkeypatch.setattr(pinned, "_pool", None)
    device_cache._pin_result_buffers([(0, 60_000), (60_000, 124_000)], 200_000)
    pool = pinned.pinned_pool()
    ahead = 2 * 2 * device_cache.RESULTS_PINNED_AHEAD
    assert pool.free_count(60_000, np.int32) == ahead
    assert pool.free_count(200_000, np.int32) == 0
    taken = [pool.take(n, np.int32, allocate=False) for n in [60_000, 64_000] * 4]
    assert all(t is not None for t in taken) and pool.allocated == ahead


def test_a_worker_holding_every_range_copies_the_whole_result():
    """Where one GPU worker holds every range (T tasks of one search on it) its searches'
    results come back whole, not range by range: placement pins for the whole graph."""
    from types import SimpleNamespace as Part

    from taskbfs.search.device_cache import _copied_ranges

    owner = [Part(lo=0, hi=60), Part(lo=0, hi=60), Part(lo=90, hi=120)]  # a transposed twin
    assert _copied_ranges(owner, 200) == [(0, 60), (90, 120)]
    every = [Part(lo=lo, hi=lo + 50) for lo in range(0, 200, 50)]
    assert _copied_ranges(every, 200) == [(0, 200)]
