"""Worker processes whose memory_limit is below the graph's size (issue 20 item 4).

What it proves
--------------
On a LocalCluster of four worker processes on 127.0.0.1, each with Dask's
``memory_limit`` at 0.8 of the graph's CSR size and Dask keeping the data it holds in
memory under 0.6 of that (``distributed.worker.memory.target``; the rest spilled to
disk), a Kronecker graph built on the workers and searched there:

* gives exactly scipy's distances and the single-process search's, parents that pass the
  Graph500 rules (checked range by range on the workers), with no worker lost;
* never needed one worker to hold the graph: a scheduler plugin reads, at every task
  transition, the bytes of data each worker holds (in memory or spilled) and the bytes
  each task reads; no task of the build or the search read half the CSR, and during the
  search each worker held at most its slices plus a bound for the search's own state,
  less than the CSR. (During the build a worker's data, in memory or spilled, reaches
  1.5-2x the whole CSR here (W = 4, ~7x the CSR in all): the int64 edge chunks and
  their split keys wait to be cut; Dask keeps
  the part in memory under the target by spilling it.)

What it does not prove: a Python worker process alone is ~300 MB, so the process-memory
actions (spill on RSS, pause, the nanny's terminate) are off here: a graph above such a
limit is scale 23 (``benchmarks/memory_limited.py``, in git history before issue 45, ran it
with every action on).
"""

from __future__ import annotations

from unittest import mock

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
from reference import scipy_distances

import taskbfs as tb
from taskbfs.placed import build as bfs_distributed
from taskbfs.placed.build import _FAN_IN, HISTOGRAM_BINS
from taskbfs.runtime.plugin import workers_of

from programs import runtime_without_warm_up  # isort: skip  (tests/programs.py)

WORKERS = 4
SCALE = 16
RANGES = 8


class HeldBytes(SchedulerPlugin):
    """The most bytes each worker ever held, and the most each task prefix read, since the
    last :meth:`reset` (runs in the scheduler; cheap: one sum per transition)."""

    name = "taskbfs-test-held-bytes"

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.held: dict = {}
        self.read: dict = {}

    def start(self, scheduler) -> None:
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        ts = self.scheduler.tasks.get(key)
        if ts is None:
            return
        if finish == "processing":
            prefix = ts.prefix.name
            inputs = sum(d.nbytes for d in ts.dependencies if d.nbytes > 0)
            self.read[prefix] = max(self.read.get(prefix, 0), inputs)
        elif finish == "memory":
            for ws in ts.who_has or ():
                self.held[ws.address] = max(self.held.get(ws.address, 0), ws.nbytes)


def _plugin_state(client, reset: bool = False) -> tuple[dict, dict]:
    def read(dask_scheduler):
        plugin = dask_scheduler.plugins[HeldBytes.name]
        out = dict(plugin.held), dict(plugin.read)
        if reset:
            plugin.reset()
        return out

    return client.run_on_scheduler(read)


def _csr_bytes(g) -> int:
    return g.indptr.nbytes + g.indices.nbytes


#: Edges per generated chunk of the build on the workers: small against a worker's share
#: (the default, 2^20 edges, is this graph's whole edge list: its one generating task
#: would hold 4x the CSR). The graph does not depend on it.
CHUNK_EDGES = 1 << 14


@pytest.fixture(scope="module")
def limited():
    csr = tb.kronecker(SCALE, 16, seed=4)  # built here to know its size and check the search
    limit = int(0.8 * _csr_bytes(csr))
    memory = {"distributed.worker.memory.target": 0.6, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False,
              "distributed.worker.memory.terminate": False,
              # a connection whose peer reads nothing for 30 s is closed (TCP_USER_TIMEOUT):
              # on a 2-core machine at load 40 the build's transfers met that once
              "distributed.comm.timeouts.tcp": "300s"}
    with dask.config.set(memory), mock.patch.object(bfs_distributed, "_CHUNK_EDGES", CHUNK_EDGES), \
            LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                         host="127.0.0.1", dashboard_address="127.0.0.1:0",
                         memory_limit=limit) as cluster, \
            Client(cluster, set_as_default=False) as client, \
            runtime_without_warm_up(client) as rt:
        client.register_plugin(HeldBytes())
        yield rt, csr, limit


def test_graph_above_each_workers_limit_built_and_searched(limited, runtime, monkeypatch):
    rt, g, limit = limited
    # tb.bfs refuses workers whose limit is below their process's memory (a real limit
    # would kill them); here the limit bounds only the data Dask keeps in memory
    monkeypatch.setattr(rt, "free_memory_later", lambda: lambda timeout=None: None)
    client = rt.client
    csr = _csr_bytes(g)
    assert limit < csr
    assert {w["memory_limit"] for w in workers_of(client).values()} \
        == {limit}
    pids = sorted(client.run(lambda: __import__("os").getpid()).values())
    _plugin_state(client, reset=True)
    dg = tb.kronecker(SCALE, 16, seed=4, runtime=rt, ranges=RANGES)
    held, read = _plugin_state(client, reset=True)
    # the build's edge chunks, their splits and groups (int64 pairs and keys: ~2x the CSR
    # per worker here, in memory or spilled) are held until cut; no task reads much of them
    assert len(held) == WORKERS
    # the arc histograms' sum reads 16 of them (8 bytes a bin, at most 2^16 bins): a size of
    # its own, not a share of the graph (8 MB here, where n = 2^16; the same at scale 30)
    histograms = _FAN_IN * 8 * min(g.num_vertices, HISTOGRAM_BINS)
    assert read.pop("summed") <= histograms + 4096, read
    assert max(read.values()) < csr / 2, read

    source = int(np.argmax(g.degrees()))
    expected = scipy_distances(g, source)
    here = tb.bfs(g, source, tasks=RANGES, runtime=runtime)
    r = tb.bfs(dg, source, tasks=RANGES, runtime=rt, dispatch="tasks")
    held, read = _plugin_state(client)
    np.testing.assert_array_equal(r.distances, expected)
    np.testing.assert_array_equal(r.distances, here.distances)
    tb.validate(dg, source, r.parents, levels=r.distances)
    # each worker: its slices, plus the search's state of its ranges (17 bytes a vertex,
    # DESIGN's count) and the level's pieces and frontiers (at most 16 bytes an arc of a
    # level's candidates: bounded here by the whole graph's arcs over W)
    slices = client.who_has(dg.slices)
    nbytes = dict(zip(dg.slices, client.run_on_scheduler(
        lambda dask_scheduler, keys: [dask_scheduler.tasks[k].nbytes for k in keys],
        keys=[s.key for s in dg.slices]), strict=True))
    share = {w: sum(nbytes[s] for s in dg.slices if w in slices[s.key]) for w in held}
    state = 17 * g.num_vertices + 8 * g.num_vertices  # + the degrees gathered on one worker
    pieces = 16 * g.indices.size / WORKERS
    for worker, most in held.items():
        assert most <= share[worker] + state + pieces, (worker, most, share[worker])
        assert most < csr
    assert max(read.values()) < csr / 2, read
    assert sorted(client.run(lambda: __import__("os").getpid()).values()) == pids  # none lost
