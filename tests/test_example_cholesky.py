"""The tiled Cholesky of ``examples/cholesky.py``: a second task program on the runtime,
with real numba.cuda tile kernels, checked against numpy and scipy.

How this file finds a GPU
    As ``test_kernels_gpu.py``: the GPU tests run in this process when ``numba.cuda`` is
    usable here (a real GPU, or ``NUMBA_ENABLE_CUDASIM=1`` set before numba's first
    import); otherwise ``test_cholesky_in_simulator_subprocess`` runs this file again in a
    fresh interpreter with the simulator on, and fails if anything there fails. The
    simulator runs each CUDA thread as a Python thread: matrices are tiny.

Expectations
    Each cuda tile task equals its numpy twin; the program on a cluster with a GPU worker
    (the runtime's embedded one: a ``GPU=1`` worker) gives ``L`` with ``L @ L.T == a`` and
    ``L`` equal to ``scipy.linalg.cholesky(a, lower=True)``, with every task (policy
    ``gpu``) or only the gemm updates (hybrid, λ between ``b**3`` and ``2 b**3``) run by
    their ``cuda`` implementation on that worker, as the trace records show.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from taskbfs.errors import InvalidParameterError
from taskbfs.runtime import CUDA, SMP, Policy, Program, Runtime
from taskbfs.runtime.plugin import workers_of

from gpu_support import run_module_under_simulator  # isort: skip  (tests/)
from programs import cholesky_example, random_spd  # isort: skip  (examples/cholesky.py)

TASKS = cholesky_example.TASKS


def _gpu_usable() -> bool:
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


IN_PROCESS = _gpu_usable()
needs_gpu = pytest.mark.skipif(
    not IN_PROCESS,
    reason="numba.cuda is not usable in this process; "
    "test_cholesky_in_simulator_subprocess runs these under NUMBA_ENABLE_CUDASIM=1",
)


@pytest.mark.gpu
@pytest.mark.skipif(IN_PROCESS, reason="the GPU tests run in this process")
def test_cholesky_in_simulator_subprocess():
    run_module_under_simulator(__file__, timeout=600)


def _check(lower, a):
    np.testing.assert_allclose(lower @ lower.T, a, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lower, scipy.linalg.cholesky(a, lower=True), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lower, np.linalg.cholesky(a), rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- host only
@pytest.fixture(scope="module")
def cpu_runtime():
    with Runtime(threads=2, gpus=0, dashboard_address=None) as rt:
        yield rt


@pytest.mark.parametrize("n, tile", [(12, 3), (8, 8), (10, 2), (1, 1)])
def test_cholesky_on_the_cpu(cpu_runtime, n, tile):
    a = random_spd(n, seed=n)
    p = Program(cpu_runtime)
    _check(cholesky_example.cholesky(p, a, tile=tile), a)
    assert {r["device"] for r in p.records()} == {SMP}


def test_cholesky_rejects_bad_tiles():
    class NoProgram:  # the shapes are checked before anything is put
        pass

    with pytest.raises(InvalidParameterError, match="tile=5"):
        cholesky_example.cholesky(NoProgram(), np.eye(8), tile=5)
    with pytest.raises(InvalidParameterError, match="square"):
        cholesky_example.cholesky(NoProgram(), np.ones((4, 6)), tile=2)


# ---------------------------------------------------------------- the GPU
@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("b", [1, 3, 8])
def test_cuda_tiles_equal_their_numpy_twins(b):
    rng = np.random.default_rng(b)
    a = random_spd(b, seed=b)
    x, y = rng.standard_normal((b, b)), rng.standard_normal((b, b))
    lkk = TASKS["potrf"].cuda(a)
    np.testing.assert_allclose(lkk, TASKS["potrf"].smp(a), atol=1e-12)
    assert np.all(np.triu(lkk, 1) == 0)
    np.testing.assert_allclose(TASKS["trsm"].cuda(lkk, x), TASKS["trsm"].smp(lkk, x), atol=1e-12)
    np.testing.assert_allclose(TASKS["syrk"].cuda(x, a), TASKS["syrk"].smp(x, a), atol=1e-12)
    np.testing.assert_allclose(TASKS["gemm"].cuda(x, y, a), TASKS["gemm"].smp(x, y, a), atol=1e-12)


@pytest.fixture(scope="module")
def gpu_runtime():
    """The embedded cluster: a CPU worker and one GPU worker (GPU=1)."""
    with Runtime(threads=1, gpus=1, dashboard_address=None) as rt:
        yield rt


def _workers(rt) -> dict:
    return {CUDA if "GPU" in w["resources"] else SMP: addr
            for addr, w in workers_of(rt.client).items()}


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("batch", [True, False])
def test_cholesky_on_a_gpu_worker(gpu_runtime, batch):
    a = random_spd(12, seed=7)
    p = Program(gpu_runtime, Policy("gpu"))
    _check(cholesky_example.cholesky(p, a, tile=4, batch=batch), a)
    records = p.records()
    assert len(records) == 3 + 3 + 3 + 1  # potrf, trsm, syrk, gemm on 3 x 3 tiles
    assert {(r["device"], r["worker"]) for r in records} == {(CUDA, _workers(gpu_runtime)[CUDA])}


@pytest.mark.gpu
@needs_gpu
def test_hybrid_sends_only_the_gemm_updates_to_the_gpu(gpu_runtime):
    b = 4
    a = random_spd(16, seed=3)
    p = Program(gpu_runtime, Policy("hybrid", lam=1.5 * b**3))
    _check(cholesky_example.cholesky(p, a, tile=b), a)
    where = _workers(gpu_runtime)
    seen = {}
    for r in p.records():
        seen.setdefault(r["name"], set()).add((r["device"], r["worker"]))
    assert seen == {"potrf": {(SMP, where[SMP])}, "trsm": {(SMP, where[SMP])},
                    "syrk": {(SMP, where[SMP])}, "gemm": {(CUDA, where[CUDA])}}
