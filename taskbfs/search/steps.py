"""One range's step of a level, CPU and GPU implementations, as the owners' steps run it.

Each implementation takes the range's graph slice and the level's :class:`Frontier` and
returns the pairs it found as :class:`Discoveries` (top-down: candidates of any range, in
the order found; bottom-up: its own vertices); the owner step splits them per owner
(:mod:`taskbfs.search.owner_barrier`). The GPU implementation keeps the slice in device
memory across levels and BFS calls (the OmpSs device cache), see
:mod:`taskbfs.search.device_cache`.
"""

from __future__ import annotations

import numpy as np

from taskbfs.kernels.cpu import (
    bottom_up_step_words,
    frontier_edge_count,
    top_down_step,
    top_down_step_unique,
)
from taskbfs.placed.slices import GraphSlice
from taskbfs.search.state import BOTTOM_UP, Discoveries, Frontier

#: The trace name of a step, however it ran (dispatched, or included in a search task).
STEP_NAME = "bfs_step"


def step_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    """CPU step of one range for the frontier's direction: its raw pairs."""
    if not frontier.has_work(part.task):
        return idle(part)
    if frontier.direction == BOTTOM_UP:
        return _bottom_up_smp(part, frontier)
    return _top_down_smp(part, frontier)


def _top_down_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    mine = frontier.of_task(part.task)
    size = frontier_edge_count(part.indptr, part.lo, mine)
    out_v = np.empty(size, dtype=part.indices.dtype)
    out_p = np.empty(size, dtype=part.indices.dtype)
    if size > frontier.visited_bits.size:
        # More edges than bitmap words: a zeroed bitmap that drops this step's duplicate
        # discoveries costs less than carrying them to the bucketing, the barrier and the
        # result (a Kronecker hub's level can name each vertex tens of times).
        seen = np.zeros_like(frontier.visited_bits)
        n_found, edges = top_down_step_unique(part.indptr, part.indices, part.lo, mine,
                                              frontier.visited_bits, seen, out_v, out_p)
    else:
        n_found, edges = top_down_step(part.indptr, part.indices, part.lo, mine,
                                       frontier.visited_bits, out_v, out_p)
    return Discoveries(part.task, out_v[:n_found], out_p[:n_found], int(edges))


def _bottom_up_smp(part: GraphSlice, frontier: Frontier) -> Discoveries:
    size = part.hi - part.lo
    out_v = np.empty(size, dtype=part.indices.dtype)
    out_p = np.empty(size, dtype=part.indices.dtype)
    n_found, edges = bottom_up_step_words(part.indptr, part.indices, part.lo, part.hi,
                                          part.searchable_bits(), frontier.visited_bits,
                                          frontier.bits, out_v, out_p)
    return Discoveries(part.task, out_v[:n_found], out_p[:n_found], int(edges))


def step_cuda(part: GraphSlice, frontier: Frontier) -> Discoveries:
    """GPU step of one range (the slice stays in device memory between calls), its raw
    pairs as :func:`step_smp`'s (see :func:`~taskbfs.search.gpu_step.run_step_on_gpu`)."""
    if not frontier.has_work(part.task):
        return idle(part)
    from taskbfs.search.gpu_step import run_step_on_gpu

    return run_step_on_gpu(part, frontier)


def idle(part: GraphSlice) -> Discoveries:
    """What a step with nothing to do at this level returns (a level submitted before its
    frontier was known has a step for every task)."""
    empty = np.empty(0, dtype=part.indices.dtype)
    return Discoveries(part.task, empty, empty, 0)


def slice_for(slices, frontier: Frontier) -> GraphSlice:
    """The slice a step reads: ``(part,)`` or ``(part, transposed part)``; a bottom-up
    step reads in-neighbours, so the transposed one when the graph has one."""
    return slices[-1] if frontier.direction == BOTTOM_UP else slices[0]
