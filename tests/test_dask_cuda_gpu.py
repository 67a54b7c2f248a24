"""taskbfs on a real dask-cuda cluster, on a real GPU (issue 19 item 2).

What it proves
--------------
``dask_cuda.LocalCUDACluster`` starts one worker per GPU, one thread each, and gives them
no ``GPU`` resource. Handed to ``tb.Runtime`` as a Cluster object, such a cluster:

* is recognised: its worker gets ``GPU=1`` (:func:`~taskbfs.runtime.attach.claim_dask_cuda_gpu`),
  which the runtime keeps;
* runs the ``gpu`` strategy's steps on that worker's GPU, searches giving exactly scipy's
  distances and parents that pass the Graph500 rules, as one task and with every level
  dispatched as tasks;
* runs ``hybrid`` too (its CPU steps on the same worker's host thread: a dask-cuda
  cluster declares no CPU resource).

Needs the ``dask_cuda`` package and a CUDA device that NVML sees; elsewhere (CI, the
CUDA simulator) it is skipped with that reason. ``benchmarks/device/gpu_session.sh`` carries
dask-cuda's wheels to the GPU machine (``.whl/cuda``) and runs it there.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from reference import scipy_distances

import taskbfs as tb
from taskbfs.runtime import detect_gpus
from taskbfs.runtime.plugin import workers_of

dask_cuda = pytest.importorskip(
    "dask_cuda", reason="dask-cuda is not installed (the GPU machine's run carries it)")

pytestmark = pytest.mark.skipif(
    os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or detect_gpus() < 1,
    reason="needs a real CUDA device: dask-cuda counts GPUs through NVML")

START_TIMEOUT = 120


@pytest.fixture(scope="module")
def cuda_runtime():
    """A LocalCUDACluster of one GPU worker on 127.0.0.1, wrapped by a taskbfs Runtime."""
    with dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES="0", n_workers=1, host="127.0.0.1",
                                    dashboard_address="127.0.0.1:0") as cluster, \
            tb.Runtime(cluster) as rt:
        rt.client.wait_for_workers(1, timeout=START_TIMEOUT)
        yield rt


@pytest.fixture(scope="module")
def graph():
    return tb.kronecker(14, seed=7)


def test_the_dask_cuda_worker_is_taken_as_a_gpu_worker(cuda_runtime):
    info = workers_of(cuda_runtime.client)
    assert [w["resources"] for w in info.values()] == [{"GPU": 1}]
    assert cuda_runtime.resources()["GPU"] == 1
    assert cuda_runtime.resources()["workers"] == 1


@pytest.mark.parametrize("dispatch", ["auto", "tasks"])
def test_gpu_searches_run_on_the_dask_cuda_gpu(cuda_runtime, graph, dispatch):
    for key in tb.search_keys(graph, 3, seed=1):
        r = tb.bfs(graph, int(key), strategy="gpu", dispatch=dispatch, runtime=cuda_runtime)
        assert np.array_equal(r.distances, scipy_distances(graph, int(key)))
        tb.validate(graph, int(key), r.parents, levels=r.distances)
        assert set(r.trace["device"]) == {"cuda"}


def test_hybrid_searches_run_on_a_dask_cuda_cluster(cuda_runtime, graph):
    key = int(tb.search_keys(graph, 1, seed=2)[0])
    r = tb.bfs(graph, key, strategy="hybrid", lam=200, runtime=cuda_runtime)
    assert np.array_equal(r.distances, scipy_distances(graph, key))
    tb.validate(graph, key, r.parents, levels=r.distances)
    assert set(r.trace["device"]) == {"smp", "cuda"}
