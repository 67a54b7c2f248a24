"""Compute kernels: pure functions over plain arrays, CPU (numba) and GPU twins.

No Dask and no scheduling here. See ``docs/internals.md`` for the contract.

=====================  ===========================================================
``top_down_step``      one task's top-down step (paper's Algorithm 4)
``bottom_up_step``     one task's bottom-up step (direction-optimizing BFS)
``frontier_edge_count``  edges leaving a task's frontier (buffer size, switch rule)
``bitmap``             uint64 bitmaps of visited sets and frontiers
=====================  ===========================================================
"""

from taskbfs.kernels.cpu import allocate_outputs, bottom_up_step, frontier_edge_count, top_down_step

__all__ = ["allocate_outputs", "bottom_up_step", "frontier_edge_count", "top_down_step"]
