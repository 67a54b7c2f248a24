"""Issue 46's options on the GPU: several sources, ``depth_limit`` and ``reverse`` with the
gpu and hybrid strategies, and results left in GPU memory (``device_result=True``).

How this file finds a GPU
    As ``tests/test_bfs_gpu.py``: in this process when numba.cuda is usable (a real GPU,
    or ``NUMBA_ENABLE_CUDASIM=1`` set before numba's first import), else
    ``test_in_simulator_subprocess`` runs it again under the simulator. Graphs are tiny
    (the simulator runs each CUDA thread as a Python thread).
What runs where
    The strategies' searches run on the simulator and on a GPU. A result left on the GPU
    needs CuPy, which the simulator has not: there ``device_result=True`` and
    ``to_cupy()`` must say so (:class:`~taskbfs.errors.DeviceUnavailableError`), and
    :func:`test_device_result_stays_on_the_gpu` runs only on a GPU with CuPy.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from gpu_support import run_module_under_simulator
from test_bfs_options import check_forest, scipy_levels

import taskbfs as tb
from taskbfs.errors import DeviceUnavailableError
from taskbfs.kernels.gpu import gpu_available

IN_PROCESS = gpu_available()
needs_gpu = pytest.mark.skipif(
    not IN_PROCESS,
    reason="numba.cuda is not usable in this process; test_in_simulator_subprocess runs "
    "these under NUMBA_ENABLE_CUDASIM=1",
)
SIMULATOR = IN_PROCESS and __import__("numba").config.ENABLE_CUDASIM
HAS_CUPY = IN_PROCESS and not SIMULATOR and importlib.util.find_spec("cupy") is not None


@pytest.mark.gpu
@pytest.mark.skipif(IN_PROCESS, reason="the GPU tests run in this process")
def test_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=900)


def _directed() -> tb.Graph:
    rng = np.random.default_rng(7)
    src = np.concatenate([rng.integers(0, 60, 150), np.full(20, 3)])
    dst = np.concatenate([rng.integers(0, 60, 150), np.arange(40, 60)])
    return tb.Graph.from_edges(src, dst, num_vertices=64, directed=True)


@needs_gpu
@pytest.mark.parametrize("strategy, lam", [("gpu", None), ("hybrid", 4)])
@pytest.mark.parametrize("dispatch, tasks", [("auto", 1), ("auto", 3), ("tasks", 2)])
def test_options_on_the_gpu_match_scipy(runtime, strategy, lam, dispatch, tasks):
    g, sources = _directed(), [0, 3, 50, 3]
    for kwargs in ({}, {"depth_limit": 2}, {"reverse": True, "depth_limit": 3}):
        r = tb.bfs(g, sources, tasks=tasks, strategy=strategy, lam=lam, dispatch=dispatch,
                   runtime=runtime, **kwargs)
        reverse = kwargs.get("reverse", False)
        np.testing.assert_array_equal(
            r.distances, scipy_levels(g, sources, reverse, kwargs.get("depth_limit")))
        check_forest(g, sources, r, reverse)
    if strategy == "gpu":
        assert set(r.trace["device"]) <= {"cuda"}


@needs_gpu
@pytest.mark.skipif(HAS_CUPY, reason="CuPy is here: test_device_result_stays_on_the_gpu")
def test_without_cupy_device_result_is_a_clear_error(runtime):
    g = _directed()
    with pytest.raises(DeviceUnavailableError, match="device_result=True needs CuPy"):
        tb.bfs(g, 0, strategy="gpu", device_result=True, runtime=runtime)
    with pytest.raises(DeviceUnavailableError, match="to_cupy"):
        tb.bfs(g, 0, strategy="gpu", runtime=runtime).to_cupy()


@pytest.mark.skipif(not HAS_CUPY, reason="needs a real GPU and CuPy (the CUDA simulator has "
                    "no CuPy): run on a GPU machine")
@pytest.mark.parametrize("dispatch, tasks", [("auto", 1), ("auto", 3), ("tasks", 2)])
def test_device_result_stays_on_the_gpu(runtime, monkeypatch, dispatch, tasks):
    import cupy

    from taskbfs.kernels.gpu_levels import DeviceLevels

    copies = []  # a result copy to the host begun beside the levels: none here
    monkeypatch.setattr(DeviceLevels, "snapshot", lambda self, level: copies.append(level))
    g, sources = _directed(), [0, 3, 50]
    expected = scipy_levels(g, sources, limit=3)
    r = tb.bfs(g, sources, tasks=tasks, strategy="gpu", dispatch=dispatch, depth_limit=3,
               device_result=True, runtime=runtime)
    assert r.on_workers and r.assembly_d2h_bytes == 0 and copies == []
    d, p = r.to_cupy()
    assert isinstance(d, cupy.ndarray) and isinstance(p, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(d), expected)
    dd, _ = r.to_dask()
    with runtime.client.as_current():  # kept on the workers: computed there
        np.testing.assert_array_equal(cupy.asnumpy(dd.compute()), expected)
        table = r.to_dask_dataframe().compute()
    np.testing.assert_array_equal(table["vertex"], np.flatnonzero(expected >= 0))
    np.testing.assert_array_equal(r.distances, expected)  # copied to the host when read
    check_forest(g, sources, r)
