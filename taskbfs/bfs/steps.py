"""The BFS step tasks: one task's top-down or bottom-up step, CPU and GPU implementations.

Each implementation takes the task's graph slice and the level's :class:`Frontier` and
returns :class:`Discoveries`. The GPU implementations keep the slice in device memory
across levels and BFS calls (the OmpSs device cache), see :mod:`taskbfs.bfs.device_cache`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from taskbfs.bfs.state import BOTTOM_UP, Discoveries, Frontier
from taskbfs.kernels.cpu import bottom_up_step, frontier_edge_count, top_down_step
from taskbfs.runtime import Task


@dataclass
class GraphSlice:
    """One task's share of the graph: vertices ``[lo, hi)`` and their adjacency.

    ``indices`` lists out-neighbours (in-neighbours for a transposed slice used by
    bottom-up steps on directed graphs).
    """

    task: int
    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    token: str  # graph identity + orientation, the device cache key

    @property
    def nbytes(self) -> int:
        return self.indptr.nbytes + self.indices.nbytes


def step_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    """CPU step of one task for the frontier's direction."""
    if frontier.direction == BOTTOM_UP:
        return _bottom_up_smp(part, frontier)
    return _top_down_smp(part, frontier)


def _top_down_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    mine = frontier.of_task(part.task)
    size = frontier_edge_count(part.indptr, part.lo, mine)
    out_v = np.empty(size, dtype=part.indices.dtype)
    out_p = np.empty(size, dtype=part.indices.dtype)
    n_found, edges = top_down_step(part.indptr, part.indices, part.lo, mine,
                                   frontier.visited_bits, out_v, out_p)
    return Discoveries(part.task, out_v[:n_found], out_p[:n_found], int(edges))


def _bottom_up_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    size = part.hi - part.lo
    out_v = np.empty(size, dtype=part.indices.dtype)
    out_p = np.empty(size, dtype=part.indices.dtype)
    n_found, edges = bottom_up_step(part.indptr, part.indices, part.lo, part.hi,
                                    frontier.visited_bits, frontier.bits, out_v, out_p)
    return Discoveries(part.task, out_v[:n_found], out_p[:n_found], int(edges))


def step_cuda(part: GraphSlice, frontier: Frontier) -> Discoveries:
    """GPU step of one task (the slice stays in device memory between calls)."""
    from taskbfs.bfs.device_cache import run_step_on_gpu

    return run_step_on_gpu(part, frontier)


STEP = Task("bfs_step", smp=step_smp, cuda=step_cuda)
