"""Where a GPU worker's device memory comes from: RMM when it is installed, else numba's own.

Returns
    :func:`use_rmm_if_available` ``(dask_worker=None) -> Allocator``: run once per worker
    process at its GPU setup (the runtime's first worker warm-up; the
    device-data code may call it too: it is idempotent); :func:`choose_allocator`, the
    decision alone; :func:`free_device_memory`, the free bytes of the current device
    whichever allocator is in use.
Approach
    RAPIDS Memory Manager (``rmm``) gives one device-memory pool to every library of a
    process; dask-cuda's workers set it up (``--rmm-pool-size``). When ``rmm`` imports on a
    worker with a GPU, numba-cuda's
    allocations (the device cache's slices and buffers, :class:`GpuLevels`' arrays, every
    ``cuda.device_array``) go through RMM's current memory resource by numba's External
    Memory Management plugin ``rmm.allocators.numba.RMMNumbaManager``, and CuPy's (when
    CuPy is installed) by ``rmm.allocators.cupy.rmm_cupy_allocator``. numba binds a memory
    manager to a CUDA context when it makes the context, so this must run before the
    process's first GPU work: a process whose context already exists keeps numba's
    allocator, and says so. Under numba's CUDA simulator there is no device memory, and
    nothing is changed. There is no switch: a process without ``rmm`` installed keeps
    numba's allocator.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Allocator:
    """What a process's device memory goes through: ``name`` ``"rmm"`` or ``"numba"``
    (numba-cuda's own allocator), and why."""

    name: str
    reason: str


_chosen: Allocator | None = None  # per process: numba's memory manager is process-wide


def choose_allocator(simulator: bool, rmm_importable: bool, context_exists: bool) -> Allocator:
    """The allocator a GPU worker process uses (the decision only; nothing is changed).

    Parameters
    ----------
    simulator : bool
        numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``).
    rmm_importable : bool
        ``import rmm`` works in this process.
    context_exists : bool
        numba made a CUDA context in this process already (it keeps its memory manager).

    Returns
    -------
    Allocator
    """
    if simulator:
        return Allocator("numba", "numba's CUDA simulator has no device memory")
    if not rmm_importable:
        return Allocator("numba", "rmm is not installed")
    if context_exists:
        return Allocator("numba", "a CUDA context existed before the RMM setup (it keeps "
                                  "numba's allocator); set it up before the first GPU work")
    return Allocator("rmm", "rmm is installed")


def use_rmm_if_available(dask_worker=None) -> Allocator:
    """Send this process's numba-cuda (and CuPy) device allocations through RMM when
    :func:`choose_allocator` says so; once per process, later calls return the first
    answer.

    Parameters
    ----------
    dask_worker : distributed.Worker, optional
        Given by the runtime's warm-up; a worker without a ``GPU`` resource changes
        nothing (its process may hold GPU workers of its own, which choose themselves).

    Returns
    -------
    Allocator
        ``Allocator("none", ...)`` on a worker with no GPU.
    """
    global _chosen
    if dask_worker is not None and not dask_worker.state.total_resources.get("GPU"):
        return Allocator("none", "not a GPU worker")
    if _chosen is not None:
        return _chosen
    simulator = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    rmm = _import("rmm")
    choice = choose_allocator(simulator, rmm is not None,
                              not simulator and rmm is not None and _numba_context_exists())
    if choice.name == "rmm":
        try:
            _install_numba(_import("rmm.allocators.numba").RMMNumbaManager)
            cupy = _import("cupy")
            if cupy is not None:
                cupy.cuda.set_allocator(_import("rmm.allocators.cupy").rmm_cupy_allocator)
        except Exception as exc:  # an rmm that does not fit this numba: keep numba's
            choice = Allocator("numba", f"the RMM setup failed: {type(exc).__name__}: {exc}")
    if choice.name == "numba" and choice.reason != "rmm is not installed" and not simulator:
        logger.warning("taskbfs: GPU memory through numba's allocator: %s", choice.reason)
    _chosen = choice
    return choice


def free_device_memory() -> tuple[int, int]:
    """``(free, total)`` bytes of the current device, as the driver reports them: also
    under RMM, whose numba plugin cannot say (a pool's free bytes are its own)."""
    from numba import cuda

    if _chosen is not None and _chosen.name == "rmm":
        return tuple(int(v) for v in _import("rmm.mr").available_device_memory())
    free, total = cuda.current_context().get_memory_info()
    return int(free), int(total)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _numba_context_exists() -> bool:
    """Whether numba has made a CUDA context in this process (without making one)."""
    from numba.cuda.cudadrv import devices

    try:
        return any(gpu._device.primary_context is not None for gpu in devices._runtime.gpus)
    except Exception:  # noqa: BLE001 - no driver: then there is no context either
        return False


def _install_numba(manager) -> None:
    from numba import cuda

    cuda.set_memory_manager(manager)


__all__ = ["Allocator", "choose_allocator", "free_device_memory", "use_rmm_if_available"]
