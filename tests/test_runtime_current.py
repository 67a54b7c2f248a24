"""The user's Dask client (issue 44, items 8-10): ``client.dashboard_link`` names where the
embedded dashboard listens; a ``tb.Runtime`` in a ``with`` block is the current client, so
dask collections of a result compute on it; ``tb.bfs`` without ``runtime`` uses the
current ``distributed.Client`` rather than starting the embedded cluster."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster
from reference import scipy_distances

import taskbfs as tb
from taskbfs.placed.graph import DistributedGraph


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        yield cluster


def test_client_dashboard_link_is_where_the_dashboard_listens():
    with tb.Runtime(threads=1, gpus=0) as rt:
        assert rt.client.dashboard_link == rt.dashboard_link
        assert rt.client.dashboard_link.startswith("http://127.0.0.1:")


def test_a_runtime_is_the_current_client_in_its_block(cluster):
    graph = tb.kronecker(6, seed=1)
    with tb.Runtime(cluster.scheduler_address) as rt:
        assert Client.current() is rt.client
        src, dst = (np.asarray(a) for a in (graph.to_scipy().tocoo().row, graph.to_scipy().tocoo().col))
        dg = DistributedGraph.from_dask(da.from_array(src, chunks=500), da.from_array(dst, chunks=500),
                                        runtime=rt, ranges=2)
        r = tb.bfs(dg, 0, tasks=2)  # the runtime of the block, not a second one
        d, _ = r.to_dask()
        np.testing.assert_array_equal(d.compute(), scipy_distances(graph, 0))
        from taskbfs.runtime.choice import _wrapped_clients

        plain = tb.bfs(graph, 0, tasks=2)  # this block's runtime, not a second one on its client
        np.testing.assert_array_equal(plain.distances, scipy_distances(graph, 0))
        assert rt.client not in _wrapped_clients


def test_bfs_uses_the_current_client(cluster):
    graph = tb.kronecker(6, seed=1)
    with Client(cluster) as client:
        r = tb.bfs(graph, 0, tasks=2)
        workers = set(client.scheduler_info()["workers"])
        assert set(r.trace["worker"]) <= workers
        np.testing.assert_array_equal(r.distances, scipy_distances(graph, 0))
