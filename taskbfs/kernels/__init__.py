"""Compute kernels: pure functions over plain arrays, CPU (numba) and GPU (numba.cuda).

No Dask and no scheduling here. See ``docs/internals.md`` for the contract.

=====================  ===========================================================
``top_down_step``      one task's top-down step (paper's Algorithm 4)
``bottom_up_step``     one task's bottom-up step (direction-optimizing BFS)
``frontier_edge_count``  edges leaving a task's frontier (buffer size, switch rule)
``bitmap``             uint64 bitmaps of visited sets and frontiers
``gpu_levels``         the GPU's levels and steps (``DeviceLevels``, loaded lazily), with
                       ``DeviceSlice``, ``launch_config``, ``gpu_available``
=====================  ===========================================================
"""

from taskbfs.kernels.cpu import allocate_outputs, bottom_up_step, frontier_edge_count, top_down_step

#: GPU names, loaded from :mod:`taskbfs.kernels.gpu` on first access (importing this
#: package never imports numba.cuda; ``gpu_available()`` says whether the kernels can run).
_GPU_NAMES = ("DeviceSlice", "LaunchConfig", "gpu_available", "launch_config")


def __getattr__(name):
    if name in _GPU_NAMES:
        from taskbfs.kernels import gpu

        return getattr(gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["allocate_outputs", "bottom_up_step", "frontier_edge_count", "top_down_step", *_GPU_NAMES]
