"""The BFS step tasks: one task's top-down or bottom-up step, CPU and GPU implementations.

Each implementation takes the task's graph slice and the level's :class:`Frontier` and
returns :class:`Discoveries` in the form the barrier reads: top-down candidates bucketed
by owning task, bottom-up discoveries with their bitmap words (both done here, in the
parallel steps, so that the barrier does not have to). The GPU implementations keep the
slice in device memory across levels and BFS calls (the OmpSs device cache), see
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
from taskbfs.runtime import Task
from taskbfs.search.state import BOTTOM_UP, Discoveries, Frontier, bucketed, with_bits


def step_smp(part: GraphSlice, frontier: Frontier, barrier_form: bool = True) -> Discoveries:
    """CPU step of one task for the frontier's direction; with ``barrier_form`` False its
    raw pairs (no bucketing, no bitmap words: what the owner loop's barriers read)."""
    if not frontier.has_work(part.task):
        return idle(part)
    if frontier.direction == BOTTOM_UP:
        found = _bottom_up_smp(part, frontier)
    else:
        found = _top_down_smp(part, frontier)
    return for_barrier(part, frontier, found) if barrier_form else found


def for_barrier(part: GraphSlice, frontier: Frontier, found: Discoveries) -> Discoveries:
    """A step's raw pairs in the form the barrier reads (see :class:`Discoveries`)."""
    if frontier.direction == BOTTOM_UP:
        if found.words is not None:  # the GPU step made them on the device
            return found
        return with_bits(found, part.lo, part.hi, part.out_offsets)
    if found.offsets is not None:  # the GPU step bucketed them on the device
        return found
    return bucketed(found, frontier.task_bounds(), parents=not frontier.result_on_device)


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


def step_cuda(part: GraphSlice, frontier: Frontier, barrier_form: bool = True,
              pairs: bool = True) -> Discoveries:
    """GPU step of one task (the slice stays in device memory between calls); with
    ``barrier_form`` False as :func:`step_smp`'s (a bottom-up step's words stay on the
    device), and with ``pairs`` False too, a bottom-up step whose pairs go into the result
    on the device returns its words instead of its vertices (see
    :func:`~taskbfs.search.gpu_step.run_step_on_gpu`)."""
    if not frontier.has_work(part.task):
        return idle(part)
    from taskbfs.search.gpu_step import run_step_on_gpu

    found = run_step_on_gpu(part, frontier, words=barrier_form or not pairs, pairs=pairs)
    return for_barrier(part, frontier, found) if barrier_form else found


def idle(part: GraphSlice) -> Discoveries:
    """What a step with nothing to do at this level returns (a level submitted before its
    frontier was known has a step for every task)."""
    empty = np.empty(0, dtype=part.indices.dtype)
    return Discoveries(part.task, empty, empty, 0)


def slice_for(slices, frontier: Frontier) -> GraphSlice:
    """The slice a step reads: ``(part,)`` or ``(part, transposed part)``; a bottom-up
    step reads in-neighbours, so the transposed one when the graph has one."""
    return slices[-1] if frontier.direction == BOTTOM_UP else slices[0]


def _step_task_smp(*args) -> Discoveries:
    *slices, frontier = args
    return step_smp(slice_for(slices, frontier), frontier)


def _step_task_cuda(*args) -> Discoveries:
    *slices, frontier = args
    return step_cuda(slice_for(slices, frontier), frontier)


#: The step task: ``ins = [part, (transposed part,) frontier]``; its direction is the
#: frontier's, so a level can be submitted before the barrier that decides it has run.
STEP = Task("bfs_step", smp=_step_task_smp, cuda=_step_task_cuda)
