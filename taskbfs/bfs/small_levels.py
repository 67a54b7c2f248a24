"""Small levels inside one task: a search's first and last levels without a round trip each.

Returns
    :func:`run_small_levels` (the ``bfs_small_levels`` task): the frontier after the levels
    it ran; :class:`SmallLevels`, the rule that says which levels are small.
Approach
    A level costs the runtime about the same whatever its work: on 2 cores ~3 ms of
    submission, scheduling and two hops (step → barrier → client → next steps), where a
    level of a few thousand edges needs well under a millisecond of kernels. Such levels
    come at both ends of a search on a small-world graph (the source and its first
    neighbours; the last stragglers) and all along a deep one. OmpSs's answer is the
    ``final`` clause: the tasks a final task creates are *included*, run at once by the
    creating thread with no scheduling. So for a small level the level loop submits one
    final task instead of T steps and a barrier: it reads every task's slice, the degrees
    and the frontier (inout, in place), runs the level's steps and its barrier as included
    tasks (:func:`taskbfs.runtime.include`: they are traced like tasks) and goes on with
    the next level while that one is small too, publishing each level's summary as a
    barrier does, ``chained`` while it goes on (the client then submits nothing). The
    steps' discoveries stay in the frontier (``Frontier.included``) for the result assembly.
    The task also reads the outputs of every step the search ran before it: when the
    search ends inside it (as most do: their last levels are small), it writes the result
    too (an included assembly, on threads) and its last summary says ``assembled``,
    sparing the round trip to the client and the assembly tasks.
    A level's steps run side by side on the barrier's thread pool (as the level's tasks
    would on the worker's threads), each traced as an included task.
Which levels are small
    Every step at most ``max_vertices`` in size (frontier vertices top-down, unvisited
    vertices bottom-up): λ for the hybrid strategy on a cluster with GPUs, so that every
    step of a small level would have run on the CPU anyway (fixed with GPU workers has no
    small levels, gpu only the GPU levels below). Top-down, at most ``max_edges`` frontier
    edges; bottom-up, at most ``max_bottom_up_edges`` edges left unexplored (a bound on
    what its steps read: the end of a search, once its big levels have visited almost
    every vertex with an edge). See ``config.SMALL_LEVEL_EDGES`` and
    ``config.SMALL_BOTTOM_UP_EDGES`` for the defaults.
Every level on one GPU worker
    With a single GPU worker, every step that the policy sends to the GPU runs there, one
    after another, and the level loop pays the runtime per level (measured on the H100
    host: ~7-14 ms a level against ~1-15 ms of kernels, and hybrid's search hops between
    the CPU and GPU workers). So with the gpu or hybrid strategy there
    (``config.GPU_LEVELS_IN_ONE_TASK``) every level runs inside one task on the GPU worker:
    the task has a GPU implementation, it is submitted with a size above λ, so the
    scheduler plugin's policy places it there, and each step inside runs on the device
    the same policy gives its size (:meth:`SmallLevels.on_gpu`): the GPU steps one after
    another, traced on ``cuda``, the CPU ones side by side on the host's thread pool,
    traced on ``smp`` (OmpSs's GPU worker is a host thread as well). The placement of
    every step is the policy's, as when each runs as a task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from taskbfs import config
from taskbfs.bfs.state import (
    TOP_DOWN,
    Frontier,
    LevelSummary,
    SummaryPublisher,
    assemble_all,
    init_state,
    merge_level,
    pool,
)
from taskbfs.bfs.steps import STEP, slice_for, step_cuda, step_smp
from taskbfs.runtime import CUDA, SMP, Task, include, include_each


@dataclass(frozen=True)
class SmallLevels:
    """Which levels one task runs by itself, and on which device (see the module docstring).

    Attributes
    ----------
    max_edges : int
        Most frontier edges (the sum of the frontier's out-degrees) of a small top-down level.
    max_vertices : float
        Most vertices of a small level's step (its size: frontier vertices top-down,
        unvisited vertices bottom-up): λ when the hybrid strategy has GPU workers, so
        that the policy would send every step to the CPU; else ∞.
    max_bottom_up_edges : int
        Most unexplored edges of a small bottom-up level (0: no bottom-up level is small).
    gpu_above : float or None
        With one GPU worker: every level runs inside one task on that worker, each step
        on the device the policy gives its size: the GPU above this (λ for the hybrid
        strategy, -1 for gpu), else the CPU (the worker's host threads). None: only the
        small levels run inside tasks, on the CPU.
    """

    max_edges: int
    max_vertices: float = math.inf
    max_bottom_up_edges: int = 0
    gpu_above: float | None = None

    def device(self, summary: LevelSummary) -> str | None:
        """Where one task runs the level ``summary`` describes (its frontier): ``"cuda"``
        (the task on the GPU worker) for every level when there is one, ``"smp"`` for a
        small level, None when the level runs as steps and a barrier."""
        sizes = summary.frontier_counts[summary.frontier_counts > 0]
        if summary.frontier_size == 0 or sizes.size == 0:
            return None
        if self.gpu_above is not None:
            return CUDA
        if int(sizes.max()) > self.max_vertices:
            return None
        if summary.direction == TOP_DOWN:
            small = summary.frontier_edges <= self.max_edges
        else:
            small = 0 < self.max_bottom_up_edges and summary.unexplored_edges <= self.max_bottom_up_edges
        return SMP if small else None

    def on_gpu(self, size: int) -> bool:
        """Whether a step of ``size`` runs on the GPU inside the GPU worker's task (the
        policy's rule: size above λ for hybrid, always for gpu)."""
        return self.gpu_above is not None and size > self.gpu_above

    def admits(self, summary: LevelSummary, device: str = SMP) -> bool:
        """Whether a task on ``device`` runs the level ``summary`` describes itself."""
        return self.device(summary) == device


@dataclass(frozen=True)
class Assembly:
    """How a small-level task that ends the search writes its result.

    Attributes
    ----------
    name : str
        The trace name of the (included) assembly.
    source : int
    cuts : list of int
        Vertex ids cutting the result into the slices written in parallel.
    levels : list of int
        The level of each earlier step output the task reads, in order.
    """

    name: str
    source: int
    cuts: list
    levels: list


def run_small_levels(*args, **kwargs) -> Frontier:
    """The small-level task's CPU implementation: :func:`run_levels` with the CPU steps,
    side by side on the barrier's thread pool."""
    return run_levels(*args, run_steps=_cpu_steps, device=SMP, **kwargs)


def run_levels_on_gpu(*args, **kwargs) -> Frontier:
    """Its GPU implementation (every level of a search with one GPU worker, see
    :func:`taskbfs.bfs.core._small_levels`): :func:`run_levels` with each step on the
    device the policy gives its size, the GPU steps one after another (as that worker
    would run them as tasks), the CPU ones side by side on the thread pool."""
    return run_levels(*args, run_steps=_steps_by_size, device=CUDA, **kwargs)


def run_levels(*args, level: int, small: SmallLevels, barrier_name: str, run_steps,
               device: str, assembly: Assembly | None = None, init: dict | None = None,
               slices_per_task: int = 1) -> Frontier:
    """The small-level task: run level ``level`` and the small levels after it.

    Called as ``run_small_levels(*slices, degrees, *earlier, frontier, ...)``: every
    task's slices in task order (``slices_per_task`` each: its out-adjacency slice, then
    its transposed one when a directed graph has one for bottom-up steps), the degree
    array, the outputs of the steps the search ran before (``assembly.levels`` says their
    levels), then the frontier of ``level`` (updated in place, as a barrier does). Each
    level's steps (one for each task with work, run by ``run_steps(calls, small)``) and
    its barrier run here as included tasks, the barrier going on while ``small`` admits
    the next level on ``device``; each level's summary is published as a barrier
    publishes it. Returns the frontier of the first level that is not small,
    holding the included steps' discoveries; or, when the search ended here and
    ``assembly`` is given, the last frontier with the search's ``result``. With ``init``
    (the search's first task) there is no frontier argument: the task makes the level-0
    frontier itself, ``init_state(degrees, **init)``.
    """
    if init is None:
        *args, frontier = args
        num_tasks = frontier.bounds.size - 1
    else:
        num_tasks = len(init["bounds"]) - 1
    num_slices = num_tasks * slices_per_task
    slices = [args[t * slices_per_task : (t + 1) * slices_per_task] for t in range(num_tasks)]
    degrees, earlier = args[num_slices], args[num_slices + 1 :]
    if init is not None:
        frontier = init_state(degrees, **init)
        frontier.progress.result_on_device = _keeps_result_on_device(device, num_tasks, small)
    if frontier.level != level:
        raise RuntimeError(f"small levels from {level} got the frontier of level {frontier.level}")
    publisher = SummaryPublisher()
    while True:
        calls = [(_step_tags(frontier, t), (slice_for(slices[t], frontier), frontier))
                 for t in range(num_tasks) if frontier.has_work(t)]
        found = run_steps(calls, small)
        nxt, summary = include(barrier_name, merge_level, {"level": frontier.level},
                               frontier, found, degrees, small, assembly is not None, device,
                               publisher)
        nxt.included.extend((frontier.level, d) for d in found)
        frontier = nxt
        if summary.assembled:
            return replace(frontier, result=include(
                assembly.name, _assemble, {"done": True, "d2h_bytes": _result_bytes(frontier)},
                frontier, earlier, assembly))
        if not summary.chained:
            return frontier


def _cpu_steps(calls, small: SmallLevels) -> list:
    """A level's steps (``calls`` as for :func:`include_each`) on the CPU, side by side on
    the thread pool (one alone runs in this thread: there is nothing to overlap)."""
    return include_each(STEP.name, step_smp, calls, executor=pool() if len(calls) > 1 else None,
                        device=SMP)


def _steps_by_size(calls, small: SmallLevels) -> list:
    """A level's steps (``calls`` as for :func:`include_each`, in task order) each on the
    device the policy gives its size: the CPU ones side by side on the thread pool, then
    the GPU ones one after another; their outputs in task order."""
    on_gpu = [small.on_gpu(tags["size"]) for tags, _ in calls]
    cpu = iter(_cpu_steps([c for c, g in zip(calls, on_gpu, strict=True) if not g], small))
    gpu = iter(include_each(STEP.name, step_cuda,
                            [c for c, g in zip(calls, on_gpu, strict=True) if g], device=CUDA))
    return [next(gpu if g else cpu) for g in on_gpu]


def _keeps_result_on_device(device: str, num_tasks: int, small: SmallLevels) -> bool:
    """Whether a search that starts in this task keeps its result on the GPU
    (``config.RESULT_ON_DEVICE``): its GPU steps write their pairs into it and return
    vertices only, and the result crosses the bus once, at the end. So on the GPU worker,
    which runs every level of such a search, when every pair a GPU step reports is one
    the barrier keeps: with one task (one step a level, its pairs unique and unvisited),
    or with every step on the GPU (the level's vertex mask reports each vertex once)."""
    return (config.RESULT_ON_DEVICE and device == CUDA
            and (num_tasks == 1 or small.on_gpu(0)))


def _result_bytes(frontier: Frontier) -> int:
    """Bytes the assembly copies from the device: the two int64 arrays of a result kept
    there, else none."""
    if frontier.progress is None or not frontier.progress.result_on_device:
        return 0
    return 2 * 8 * int(frontier.bounds[-1])


def _assemble(frontier: Frontier, earlier, assembly: Assembly):
    """The search's ``(distances, parents)``: the earlier steps' outputs and the included
    ones, or the result on the GPU with the CPU steps' pairs (``_keeps_result_on_device``)."""
    logs = list(earlier) + [d for _, d in frontier.included]
    levels = list(assembly.levels) + [level for level, _ in frontier.included]
    if frontier.progress is not None and frontier.progress.result_on_device:
        from taskbfs.bfs.device_cache import result_to_host

        return result_to_host(frontier, logs, levels, assembly.source)
    return assemble_all(logs, levels, source=assembly.source, bounds=frontier.bounds,
                        cuts=assembly.cuts)


def _step_tags(frontier: Frontier, t: int) -> dict:
    """A step's trace tags, as the level loop gives a submitted step (its size: frontier
    vertices top-down, unvisited vertices bottom-up)."""
    if frontier.direction == TOP_DOWN:
        size = int(frontier.offsets[t + 1] - frontier.offsets[t])
    else:
        size = int(frontier.progress.unvisited_per_task[t])
    return {"level": frontier.level, "task": t, "size": size, "direction": frontier.direction}


#: The small-level task: ``ins = [part/0, (tpart/0,) .. part/T-1, (tpart/T-1,) degrees,
#: earlier steps' outputs]``,
#: ``inouts = [frontier]`` (``outs`` when it makes the level-0 frontier itself).
SMALL_LEVELS = Task("bfs_small_levels", smp=run_small_levels, cuda=run_levels_on_gpu)
