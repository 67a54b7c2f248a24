"""Which allocator a GPU worker's device memory goes through (taskbfs.kernels.gpu_memory).

rmm does not run on this machine (no GPU): these tests check the choice and that the
chosen allocators would be handed to numba and CuPy, with stand-in ``rmm`` and ``cupy``
modules that only record what they were given. tests/test_rmm_gpu.py runs the real RMM
on a GPU machine with rmm installed.
"""

from __future__ import annotations

import logging
import sys
import types

import pytest

import taskbfs as tb
from taskbfs.kernels import gpu_memory
from taskbfs.kernels.gpu_memory import Allocator, choose_allocator, use_rmm_if_available
from taskbfs.runtime import attach


@pytest.mark.parametrize(("simulator", "importable", "context", "expected"), [
    (False, True, False, "rmm"),
    (True, True, False, "numba"),     # the simulator has no device memory
    (False, False, False, "numba"),   # rmm not installed
    (False, True, True, "numba"),     # too late: numba's context has its manager
])
def test_the_choice(simulator, importable, context, expected):
    choice = choose_allocator(simulator, importable, context)
    assert choice.name == expected and choice.reason


class _Worker:
    """A stand-in for a distributed.Worker: only what the function reads."""

    def __init__(self, gpus: int):
        self.state = types.SimpleNamespace(total_resources={"GPU": gpus} if gpus else {"CPU": 2})


@pytest.fixture
def fake_gpu_process(monkeypatch):
    """A process that looks like a real GPU worker's with rmm and cupy installed: stand-in
    modules that record the allocators handed over; numba's own setter replaced by a
    recorder (the real one would change this test process's numba)."""
    handed = {}
    rmm = types.ModuleType("rmm")
    numba_plugin = types.ModuleType("rmm.allocators.numba")
    numba_plugin.RMMNumbaManager = type("RMMNumbaManager", (), {})
    cupy_plugin = types.ModuleType("rmm.allocators.cupy")
    cupy_plugin.rmm_cupy_allocator = object()
    mr = types.ModuleType("rmm.mr")
    mr.available_device_memory = lambda: (3 << 30, 80 << 30)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(set_allocator=lambda a: handed.__setitem__("cupy", a))
    for name, module in {"rmm": rmm, "rmm.allocators": types.ModuleType("rmm.allocators"),
                         "rmm.allocators.numba": numba_plugin, "rmm.allocators.cupy": cupy_plugin,
                         "rmm.mr": mr, "cupy": cupy}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    monkeypatch.setattr(gpu_memory, "_chosen", None)
    monkeypatch.setattr(gpu_memory, "_numba_context_exists", lambda: False)
    monkeypatch.setattr(gpu_memory, "_install_numba", lambda m: handed.__setitem__("numba", m))
    return types.SimpleNamespace(handed=handed, numba=numba_plugin.RMMNumbaManager,
                                 cupy=cupy_plugin.rmm_cupy_allocator)


def test_with_rmm_installed_numba_and_cupy_get_rmms_allocators(fake_gpu_process):
    assert use_rmm_if_available(_Worker(gpus=1)) == Allocator("rmm", "rmm is installed")
    assert fake_gpu_process.handed == {"numba": fake_gpu_process.numba, "cupy": fake_gpu_process.cupy}
    assert gpu_memory.free_device_memory() == (3 << 30, 80 << 30)  # from RMM, not numba's plugin
    fake_gpu_process.handed.clear()
    assert use_rmm_if_available(_Worker(gpus=1)).name == "rmm"  # once per process
    assert fake_gpu_process.handed == {}


def test_a_cpu_worker_changes_nothing(fake_gpu_process):
    assert use_rmm_if_available(_Worker(gpus=0)).name == "none"
    assert fake_gpu_process.handed == {} and gpu_memory._chosen is None


def test_a_context_made_before_keeps_numbas_allocator_and_says_so(fake_gpu_process, monkeypatch,
                                                                   caplog):
    monkeypatch.setattr(gpu_memory, "_numba_context_exists", lambda: True)
    with caplog.at_level(logging.WARNING, logger=gpu_memory.__name__):
        assert use_rmm_if_available(_Worker(gpus=1)).name == "numba"
    assert fake_gpu_process.handed == {}
    assert "before the first GPU work" in caplog.text


def test_an_rmm_that_does_not_fit_keeps_numbas_allocator(fake_gpu_process, monkeypatch):
    def refuse(manager):
        raise RuntimeError("EMM Plugin interface has version 0 - version 1 required")

    monkeypatch.setattr(gpu_memory, "_install_numba", refuse)
    choice = use_rmm_if_available(_Worker(gpus=1))
    assert choice.name == "numba" and "EMM Plugin interface" in choice.reason


def test_without_rmm_numba_keeps_its_allocator(fake_gpu_process, monkeypatch):
    monkeypatch.setitem(sys.modules, "rmm", None)  # import rmm raises ImportError
    assert use_rmm_if_available(_Worker(gpus=1)) == Allocator("numba", "rmm is not installed")
    assert fake_gpu_process.handed == {}


def test_every_worker_of_a_real_cluster_runs_the_setup_when_the_runtime_starts():
    """The embedded cluster with a GPU worker (numba's simulator here): the runtime's
    warm-up calls the setup on every worker; the GPU worker's process keeps numba's
    allocator (the simulator), the CPU worker is left alone."""
    assert attach.WORKER_WARM_UP[0] == \
        "taskbfs.kernels.gpu_memory:use_rmm_if_available"  # before any GPU work of the warm-up
    with tb.Runtime(threads=1, gpus=1, dashboard_address=None) as rt:
        answers = rt.client.run(lambda dask_worker: use_rmm_if_available(dask_worker).name)
    assert sorted(answers.values()) == ["none", "numba"]
