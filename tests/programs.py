"""Task programs the runtime tests run, beside the BFS: the tiled Cholesky of
``examples/cholesky.py`` and a wavefront.

``PROBE``, ``CPU_ONLY``, ``GPU_ONLY``
    Tasks that return ``(device, value)``: where the runtime ran them.
``HOST_CHOLESKY``
    The Cholesky example's tasks with their host code in the ``cuda`` slot too: for
    clusters whose ``GPU`` worker is fake (no CUDA there), where a test checks placement,
    not GPU code. ``tests/test_example_cholesky.py`` runs the real numba.cuda tasks.
:func:`summed_area_table`
    A wavefront (the dependency shape of Smith–Waterman or a Gauss–Seidel sweep): tile
    ``(i, j)`` is ``inout`` on itself and ``in`` on its north, west and north-west
    neighbours, so the anti-diagonals run in parallel. The borders are zero tiles named
    ``"S[-1,j]"`` / ``"S[i,-1]"``, which keeps every tile task the same shape. It returns
    ``np.cumsum(np.cumsum(a, 0), 1)``. Its task has the same numpy code as ``smp`` and as
    ``cuda`` (a fake GPU worker runs it).

Workers import these by name: ``examples/`` and ``tests/`` must be on their path (pytest
puts ``tests/`` on ``sys.path``, and this module ``examples/``; worker processes spawned
by a ``LocalCluster`` inherit ``sys.path``; ``dask worker`` processes need
``PYTHONPATH``, see :data:`WORKER_PYTHONPATH`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import numpy as np

from taskbfs.runtime import CUDA, SMP, Task

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import cholesky as cholesky_example  # noqa: E402  (examples/cholesky.py)

cholesky = cholesky_example.cholesky
num_tiles = cholesky_example.num_tiles
random_spd = cholesky_example.random_spd

#: ``PYTHONPATH`` for ``dask worker`` / ``dask scheduler`` processes that run these programs.
WORKER_PYTHONPATH = os.pathsep.join(
    filter(None, [str(EXAMPLES), str(REPO / "tests"), str(REPO), os.environ.get("PYTHONPATH")]))



def runtime_without_warm_up(cluster):
    """``tb.Runtime(cluster)`` that does not run its worker warm-ups on its workers (which
    load every kernel in each new worker process; a test's searches load what they use):
    for clusters of worker processes whose tests are about something else.
    tests/test_runtime_warmup.py tests the warm-up."""
    from unittest import mock

    import taskbfs as tb
    from taskbfs.runtime import attach

    with mock.patch.object(attach, "WORKER_WARM_UP", ()):
        return tb.Runtime(cluster)


@contextlib.contextmanager
def process_runtime(workers: int):
    """:func:`runtime_without_warm_up` on a ``LocalCluster`` of ``workers`` one-thread
    worker processes on 127.0.0.1 (tasks that must run at once, each on its own worker)."""
    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      silence_logs=logging.WARNING) as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        yield rt


HOST_CHOLESKY = {name: Task(task.name, smp=task.smp, cuda=task.smp)
                 for name, task in cholesky_example.TASKS.items()}


def _sat_tile(north, west, north_west, tile):
    # north's last row / west's last column already hold the sums of everything above /
    # left of this tile; their overlap (north-west's corner) is counted twice.
    local = np.cumsum(np.cumsum(tile, axis=0), axis=1)
    return local + north[-1, :][None, :] + west[:, -1][:, None] - north_west[-1, -1]


SAT_TILE = Task("sat_tile", smp=_sat_tile, cuda=_sat_tile)


def summed_area_table(program, a, tile: int, batch: bool = True) -> np.ndarray:
    """Wavefront over tiles: the 2-D inclusive prefix sum of ``a`` (tiles ``"S[i,j]"``).

    Both dimensions of ``a`` must be multiples of ``tile``; ``batch`` sends all tasks in
    one message (:meth:`Program.batch`) or one by one.
    """
    a = np.asarray(a)
    mt, nt = num_tiles(a, tile, square=False)
    b = tile
    name = "S[{},{}]".format
    zero = np.zeros((b, b), dtype=a.dtype)
    for i in range(-1, mt):
        program.put(name(i, -1), zero)
    for j in range(nt):
        program.put(name(-1, j), zero)
    for i in range(mt):
        for j in range(nt):
            program.put(name(i, j), a[i * b:(i + 1) * b, j * b:(j + 1) * b].copy())

    with program.batch() if batch else contextlib.nullcontext():
        for i in range(mt):
            for j in range(nt):
                program.submit(SAT_TILE, ins=[name(i - 1, j), name(i, j - 1), name(i - 1, j - 1)],
                               inouts=[name(i, j)], size=b * b, tags={"i": i, "j": j})

    tiles = program.gather([name(i, j) for i in range(mt) for j in range(nt)])
    return np.block([tiles[i * nt:(i + 1) * nt] for i in range(mt)])


def _on_cpu(v):
    return (SMP, v)


def _on_gpu(v):
    return (CUDA, v)


#: Tasks that say where they ran: ``(device, value)``.
PROBE = Task("probe", smp=_on_cpu, cuda=_on_gpu)
CPU_ONLY = Task("cpu_only", smp=_on_cpu)
GPU_ONLY = Task("gpu_only", cuda=_on_gpu)


def _exchange_rounds(*, peers, me, channel, rounds, timeout=None):
    """Peer ``me`` of ``peers`` sends peer p the array ``[100 r + 10 me + p] * (p + 1)`` in
    each round r (waiting ``timeout`` seconds at most for a round, default the exchange's);
    returns per round what every peer sent it (each message's first item, and its length)."""
    from taskbfs.runtime import Exchange

    exchange = Exchange(channel, peers, me, timeout=timeout)
    try:
        seen = []
        for r in range(rounds):
            got = exchange.all_to_all(("round", r), [np.full(p + 1, 100 * r + 10 * me + p)
                                                     for p in range(len(peers))])
            seen.append([(int(g[0]), g.size) for g in got])
        return seen
    finally:
        exchange.close()


#: One peer of an exchange between tasks running at once (``kwargs``: peers, me,
#: channel, rounds, optionally timeout).
EXCHANGE_ROUNDS = Task("exchange_rounds", smp=_exchange_rounds)


def slow_path_pair(n: int, seconds: float):
    """The arcs ``(src, dst)`` of a path on ``n`` vertices, after ``seconds`` of sleep: an
    edge chunk whose recomputation (after its worker left) takes a while."""
    import time

    time.sleep(seconds)
    return np.arange(n - 1), np.arange(1, n)


def collective_calls(handle, me: int, channel: str, calls: int, on_gpu: bool) -> list:
    """One rank's task of a :class:`~taskbfs.runtime.Communicator` (``handle``):
    ``calls`` allgathers and in-place reductions (sum, or, max) of arrays that name the
    rank and the call; what it got, as numpy arrays
    (``tests/test_runtime_collective.py``)."""
    xp = np
    if on_gpu:
        import cupy as xp
    got = []
    collective = handle.join(me, channel, timeout=60)
    try:
        assert collective.on_gpu == on_gpu
        for call in range(calls):
            gathered = collective.allgather(xp.array([me, call, 7], dtype=np.int64))
            summed = xp.arange(4, dtype=np.int64) * (me + 1) + call
            collective.reduce_into(summed, "sum")
            # in place: one bit per rank in word `call % 3`, a maximum, a sum
            words = xp.zeros(3, dtype=np.uint64)
            words[call % 3] = np.uint64(1 << me)
            collective.reduce_into(words, "or")
            most = xp.array([me, -me, call], dtype=np.int32)
            collective.reduce_into(most, "max")
            total = xp.full(2, me + call, dtype=np.int64)
            collective.reduce_into(total, "sum")
            if on_gpu:
                gathered, summed = xp.asnumpy(gathered), xp.asnumpy(summed)
                words, most, total = xp.asnumpy(words), xp.asnumpy(most), xp.asnumpy(total)
            got.append((gathered, summed, words, most, total))
    finally:
        collective.close()
    return got
