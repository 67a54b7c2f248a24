"""Compute kernels: pure functions over plain arrays, CPU (numba) and GPU twins.

No Dask and no scheduling here. See ``docs/internals.md`` for the contract.

=====================  ===========================================================
``top_down_step``      one task's top-down step (paper's Algorithm 4)
``bottom_up_step``     one task's bottom-up step (direction-optimizing BFS)
``frontier_edge_count``  edges leaving a task's frontier (buffer size, switch rule)
``bitmap``             uint64 bitmaps of visited sets and frontiers
``gpu_top_down_step``  GPU twins (numba.cuda, loaded lazily): also ``gpu_bottom_up_step``,
                       ``DeviceSlice``, ``launch_config``, ``gpu_available``
=====================  ===========================================================
"""

from taskbfs.kernels.cpu import allocate_outputs, bottom_up_step, frontier_edge_count, top_down_step

#: GPU names, loaded from :mod:`taskbfs.kernels.gpu` (the steps: :mod:`taskbfs.kernels.gpu_steps`)
#: on first access (importing this package never imports numba.cuda; ``gpu_available()``
#: says whether the kernels can run).
_GPU_NAMES = ("DeviceSlice", "LaunchConfig", "gpu_available", "launch_config")
_GPU_STEPS = ("gpu_bottom_up_step", "gpu_top_down_step")


def __getattr__(name):
    if name in _GPU_NAMES:
        from taskbfs.kernels import gpu

        return getattr(gpu, name)
    if name in _GPU_STEPS:
        from taskbfs.kernels import gpu_steps

        return getattr(gpu_steps, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["allocate_outputs", "bottom_up_step", "frontier_edge_count", "top_down_step", *_GPU_NAMES,
           *_GPU_STEPS]
