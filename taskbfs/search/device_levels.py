"""The GPU levels of a search run as one task on the GPU worker: a level's GPU tasks as one batch.

Returns
    :class:`GpuLevels`: :meth:`~GpuLevels.level` runs a level with at least one step task
    placed on the GPU and returns ``(next Frontier, LevelSummary)``, as the host's steps
    and barrier (:class:`~taskbfs.search.level_tasks.LevelTasks`) would;
    :meth:`~GpuLevels.result` gives the search's ``(distances, parents)`` on the host at
    the end.
Approach
    The search's state (visited set as the result's parents, the frontier, the result)
    lives in device memory from the first level with a GPU task. A level is T step tasks,
    each placed by the runtime's one rule (:class:`~taskbfs.runtime.policy.Placement`)
    from its size; the tasks placed on the GPU run as one batch over the union of their
    ranges (:class:`~taskbfs.kernels.gpu_levels.DeviceLevels`: one or two launches, the
    other tasks' vertices skipped), so that a GPU task costs what its share of the kernels
    costs, whatever T. The tasks placed on the CPU read the level's frontier and the
    visited bitmap from the device and run side by side on the host's threads; their
    pairs cross the bus back and are claimed on the device as the GPU's are. Per task,
    the vertices found, their out-arcs and the entries read are counted on the device and
    reach the host once per level with the level's counts (mapped memory, no copy); the
    barrier (``bfs_barrier``, traced ``cuda``) applies Beamer's rule to them and converts
    the frontier on the device when the direction changes. A level with no task on the GPU takes the state
    back to the host (visited bitmap and frontier), unless the rule keeps it here: told
    that the state is in device memory (a :class:`~taskbfs.runtime.policy.Residence`) and
    what moving it costs (``DeviceLevels.leave_seconds``), it keeps a few small levels,
    or a level's few small tasks, here while they cost less than the move
    (:meth:`GpuLevels.devices`). The result's copy to the host starts when the search
    turns top-down again after bottom-up levels, beside its last levels
    (:meth:`~taskbfs.kernels.gpu_levels.DeviceLevels.snapshot`); the pairs of levels run
    on the host are written over it at the end
    (:func:`~taskbfs.search.device_cache.result_to_host`).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from taskbfs.kernels.direction import BOTTOM_UP
from taskbfs.kernels.level_tasks import EDGES
from taskbfs.runtime import CUDA, Placement, Residence, include_each
from taskbfs.search.level_tasks import STEP_COLUMNS, LevelTasks, batch_table, step_table, task_edges
from taskbfs.search.state import TOP_DOWN, Frontier, LevelSummary

#: The trace name of the barrier (that of the dispatched barrier task).
BARRIER_NAME = "bfs_barrier"
#: The step table of a level with no CPU step.
_NO_STEPS = np.zeros((0, len(STEP_COLUMNS)), dtype=np.int64)


class GpuLevels:
    """One search's levels on this worker's GPU (see the module docstring).

    Parameters
    ----------
    slices : list of tuple of GraphSlice
        Per task, its slices: ``(part,)`` or ``(part, transposed part)``.
    placement : Placement
        Where each step runs.
    degrees : ndarray of int64
        Out-degrees of every vertex.
    sources : ndarray of int64
        The search's sources (distinct).
    bounds : ndarray of int64
        The T + 1 bounds of the tasks' ranges.
    on_threads : LevelTasks
        Runs a level's CPU steps on the host's threads, as one parallel loop.
    cache : DeviceCache, optional
        Default: this worker's.
    result_to_host : bool
        Whether the result goes to the host at the end (False: ``device_result``): its
        copy then starts once the search turns top-down again, beside the last levels.
    """

    def __init__(self, slices, placement: Placement, degrees: np.ndarray, sources,
                 bounds: np.ndarray, on_threads: LevelTasks, cache=None,
                 result_to_host: bool = True):
        self.slices = slices
        self.result_to_host = result_to_host
        self.on_threads = on_threads
        self.placement = placement
        self.degrees = degrees
        self.n = int(degrees.size)
        self.sources = np.asarray(sources, dtype=np.int64).reshape(-1)
        self.bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self.num_tasks = int(self.bounds.size - 1)
        self._cache = cache
        #: The first entries of ``Frontier.included`` whose pairs the device's result holds.
        self.logs_on_device = 0
        self.levels = None  # the DeviceLevels, once a level ran on the GPU
        #: Where the frontier and visited set are (``device`` CUDA while on the GPU), and
        #: the rent paid for levels kept there against the policy's word.
        self.residence = Residence()
        self._rented_share = 0.0  # of the level placed last, kept on the device as rent
        self._largest_cpu = placement.largest_cpu_sizes(self.num_tasks)

    @staticmethod
    def applies(device: str) -> bool:
        """Whether a search task on ``device`` runs its GPU levels here: on the GPU worker."""
        return device == CUDA

    @property
    def on_device(self) -> bool:
        """Whether the frontier and visited set are on the device now."""
        return self.residence.device == CUDA

    # ------------------------------------------------------------------ placement
    def devices(self, sizes: np.ndarray) -> np.ndarray:
        """Per task, 1 where its step of ``sizes[t]`` runs on the GPU (0: on the CPU, or
        no step), by the runtime's one rule. With the state on the device, a task the
        policy puts on the CPU would take it (the visited set, its frontier) to the host:
        the rule is told where the state is and what moving it costs (the last move of this
        graph's state on this GPU), and such tasks stay on the device while the rent paid
        is less than that move, whether or not other tasks of the level want the GPU. So a
        search's last few small levels, or a level's few small tasks, stay; a long tail of
        them (a deep graph's) leaves for the host."""
        work = sizes > 0
        if self._largest_cpu is not None:
            wanted = work & (sizes > self._largest_cpu)
        else:
            wanted = np.array([bool(w) and self.placement.preferred(int(s), t) == CUDA
                               for t, (s, w) in enumerate(zip(sizes, work, strict=True))])
        self.residence.renting = False
        self._rented_share = 0.0
        on_host = work & ~wanted
        if self.on_device and on_host.any():
            largest = int(np.argmax(np.where(on_host, sizes, -1)))
            move = self.levels.leave_seconds
            if self.placement.device(int(sizes[largest]), largest, self.residence,
                                     move) == CUDA:
                # the rent is the level's time for the work kept against the policy's word
                self._rented_share = float(sizes[on_host].sum()) / float(sizes[work].sum())
                wanted = work
        return wanted.astype(np.int64)

    @staticmethod
    def runs(summary: LevelSummary) -> bool:
        """Whether the level ``summary`` opens has a step on the GPU (its ``gpu_steps``)."""
        return bool(summary.gpu_steps.size and summary.gpu_steps.any())

    @property
    def cache(self):
        if self._cache is None:
            from taskbfs.search.device_cache import device_cache

            self._cache = device_cache()
        return self._cache

    # ------------------------------------------------------------------ a level
    def level(self, frontier: Frontier, summary: LevelSummary) -> tuple[Frontier, LevelSummary]:
        """The level ``summary`` opens, its steps and barrier, as included tasks: the GPU
        steps traced ``cuda`` as one batch, the CPU ones ``smp``."""
        start = time.perf_counter()
        on_gpu = summary.gpu_steps.astype(bool)
        cpu_tasks = np.flatnonzero(~on_gpu & (summary.frontier_counts > 0))
        with self.cache.lock:
            h2d = 0 if self.on_device else self._enter(frontier)
            batch_start = time.time()
            counts, tasks, moved = self._batch(frontier, summary, on_gpu, cpu_tasks)
            batch_stop = time.time()
        # the level's steps as one step table (the runner keeps it for the trace)
        self.steps = np.concatenate([batch_table(np.flatnonzero(on_gpu), batch_start,
                                                 batch_stop), self.cpu_steps])
        # before the barrier places the next level
        self.residence.pay((time.perf_counter() - start) * self._rented_share)
        leader = int(np.argmax(on_gpu))  # the batch's first GPU step reports its device work
        return include_each(BARRIER_NAME, self._barrier,
                            [({"level": frontier.level},
                              (frontier, counts, tasks, leader, h2d + moved[0], moved[1]))],
                            device=CUDA)[0]

    def _batch(self, frontier: Frontier, summary: LevelSummary, on_gpu: np.ndarray,
               cpu_tasks: np.ndarray):
        """The level's GPU steps as one batch and its CPU steps beside it: ``(LevelCounts,
        per-task counts (3, T), (bytes up, bytes down))``."""
        from taskbfs.kernels.gpu_levels import LevelCounts

        levels, level = self.levels, frontier.level
        top_down = frontier.direction == TOP_DOWN
        several = self.num_tasks > 1
        if several:  # a task with no work is idle on either device: marked here, so that
            # the mask (and its upload) changes only when a task with work goes to the CPU
            levels.place_tasks(on_gpu | (summary.sizes == 0))
        self.cpu_steps = _NO_STEPS
        if cpu_tasks.size:  # several tasks: one task runs on one device
            seconds, moved, host_read = self._mixed(frontier, summary, on_gpu)
        else:
            if top_down:
                counts = levels.top_down(level, summary.frontier_size, summary.frontier_edges,
                                         read=not several)
            else:
                counts = levels.bottom_up(level, read=not several)
            if not several:
                tasks = np.array([[counts.found], [counts.next_edges], [counts.examined]],
                                 dtype=np.int64)
                return counts, tasks, (0, 0)
            seconds, moved, host_read = counts.seconds, (0, 0), 0
        totals, tasks = levels.task_counts(level)
        if top_down:  # a top-down step reads every arc of its frontier
            tasks[2] = np.where(on_gpu, task_edges(frontier, self.degrees), 0)
        tasks[2] += host_read
        examined = totals.examined + int(np.sum(host_read))
        return LevelCounts(totals.found, totals.next_edges, examined, seconds), tasks, moved

    def _mixed(self, frontier: Frontier, summary: LevelSummary, on_gpu: np.ndarray):
        """A level whose steps run on both devices: the GPU batch, then the CPU steps'
        pairs claimed on the device (their step table in :attr:`cpu_steps`). Returns
        ``(the kernels' seconds, (bytes up, bytes down), per task the entries its CPU step
        read)``."""
        levels, level = self.levels, frontier.level
        top_down = frontier.direction == TOP_DOWN
        visited = levels.visited_bits()
        down = visited.nbytes
        if top_down:
            sizes = summary.frontier_counts
            gpu_size = int(sizes[on_gpu].sum())
            queue, cpu_vertices = levels.split(level, summary.frontier_size, gpu_size)
            down += cpu_vertices.nbytes
            arcs = task_edges(frontier, self.degrees)
            host = _host_frontier(frontier, visited, on_gpu, vertices=np.sort(cpu_vertices),
                                  counts=np.where(on_gpu, 0, sizes),
                                  task_edges=np.where(on_gpu, 0, arcs))
            gpu = levels.top_down(level, gpu_size, int(arcs[on_gpu].sum()), frontier=queue,
                                  read=False)
        else:
            bits = levels.frontier_bits(level)
            down += bits.nbytes
            host = _host_frontier(frontier, visited, on_gpu, bits=bits)
            gpu = levels.bottom_up(level, read=False)
        steps, out = (self.on_threads.top_down(host) if top_down
                      else self.on_threads.bottom_up(host))
        _, _, _, vertices, parents, _, stats, idents = out
        up = levels.accept(level, top_down, vertices, parents)
        host_read = np.zeros(self.num_tasks, dtype=np.int64)
        host_read[steps] = stats[:, EDGES]
        self.cpu_steps = step_table(steps, stats, idents)
        return gpu.seconds, (up, down), host_read

    def _barrier(self, frontier: Frontier, counts, tasks: np.ndarray, leader: int, h2d: int,
                 d2h: int) -> tuple[Frontier, LevelSummary]:
        """:func:`~taskbfs.search.level_tasks.next_level` for a level whose discoveries are
        on the device: the rule from the counts, the frontier converted there."""
        start = time.time()
        progress, tally = frontier.progress, frontier.tally
        n_new = counts.found
        found, arcs, examined = tasks
        unvisited = progress.unvisited_per_task - found
        summary = tally.rule.summary(
            frontier.level + 1, frontier.direction, tally.frontier_size, tally.unexplored_edges,
            found, arcs, unvisited, edges_examined=examined, found=found, start=start)
        top_down = not (summary.direction == BOTTOM_UP and n_new)
        seconds = counts.seconds
        d2h += self.levels.counts_bytes
        if n_new and top_down != (frontier.direction == TOP_DOWN):
            with self.cache.lock:
                if top_down and self.result_to_host:  # most of the result is final: copy it now
                    self.levels.snapshot(frontier.level)
                seconds += self.levels.convert(summary.level, top_down, n_new)
        offsets = np.zeros(self.num_tasks + 1, dtype=np.int64)
        if top_down:
            np.cumsum(found, out=offsets[1:])
        empty = np.empty(0, dtype=np.int64)
        nxt = Frontier(summary.level, summary.direction, None if n_new else empty, offsets, None,
                       frontier.visited_bits, frontier.bounds,
                       replace(progress, unvisited_per_task=unvisited), frontier.included,
                       task_edges=arcs.copy() if top_down else None,
                       tally=tally.after(summary))
        gpu_steps = self.devices(summary.sizes)  # the next level's one decision
        if n_new and summary.sizes.any() and not gpu_steps.any():  # a host level is next
            d2h += self._leave(nxt)
        device_stats = np.array([[leader, h2d, d2h, round(seconds * 1e9)]], dtype=np.int64)
        summary = replace(summary, device_stats=device_stats, barrier_stop=time.time(),
                          gpu_steps=gpu_steps)
        return nxt, summary

    # ------------------------------------------------------------------ state in and out
    def _enter(self, frontier: Frontier) -> int:
        """Hand the host's state of ``frontier``'s level to the device; bytes moved. The
        search's first entry sends the pairs its host steps found when they take at most
        the bytes of two bitmaps (:meth:`_reached`), so that the device's result starts
        complete; a later one, or a larger first one, sends the visited bitmap."""
        moved = 0
        fresh = self.levels is None
        if fresh:
            self.levels, moved = self.cache.device_levels(self.slices, self.n)
            self.levels.start_search()
            self.levels.set_tasks(self.bounds)
            self.cache.results += 1
        top_down = frontier.direction == TOP_DOWN
        reached = self._reached(frontier) if fresh else None
        if reached is not None:
            pairs, ids = reached
            entered = self.levels.enter_reached(frontier.level, top_down, pairs, ids)
            self.logs_on_device = len(frontier.included)
        else:
            data = frontier.vertices if top_down else frontier.bits
            entered = self.levels.enter(frontier.level, top_down, frontier.visited_bits, data)
            if not fresh:  # the per-task counts of the levels run here before are stale
                self.levels.zero_task_rows()
        self.cache.data.count_up(entered)
        moved += entered
        self.residence.device = CUDA
        return moved

    def _reached(self, frontier: Frontier):
        """``(pairs, frontier ids)`` for :meth:`DeviceLevels.enter_reached`: the sources and
        every host step's pairs so far (``frontier.included``) as rows of vertex, parent
        and distance, and the level's frontier as vertex ids; None when they would be more
        bytes than two bitmaps (``entry_capacity``; :meth:`DeviceLevels.enter` then sends
        the visited bitmap and the frontier)."""
        logs = frontier.included
        if any(d.parents is None for _, d in logs):
            return None
        dtype = self.levels.dtype
        count = self.sources.size + sum(int(d.vertices.size) for _, d in logs)
        top_down = frontier.direction == TOP_DOWN
        ids = frontier.vertices.size if top_down else count  # at most
        if 3 * count + ids > self.levels.entry_capacity:
            return None
        pairs = np.empty((3, count), dtype=dtype)
        at = self.sources.size
        pairs[0, :at], pairs[1, :at], pairs[2, :at] = self.sources, self.sources, 0
        for level, d in logs:
            stop = at + d.vertices.size
            pairs[0, at:stop] = d.vertices
            pairs[1, at:stop] = d.parents
            pairs[2, at:stop] = d.depths if d.depths is not None else level + 1
            at = stop
        ids = (frontier.vertices if top_down
               else pairs[0, pairs[2] == frontier.level])
        return pairs, ids

    def _leave(self, frontier: Frontier) -> int:
        """Fill the shell ``frontier`` in from the device (its visited bitmap in place; a
        top-down frontier sorted, so that each task's vertices are together); bytes moved."""
        top_down = frontier.direction == TOP_DOWN
        with self.cache.lock:
            visited, data, moved = self.levels.leave(frontier.level, top_down,
                                                     frontier.tally.frontier_size)
            self.cache.data.count_down(moved)
        frontier.visited_bits[:] = visited
        if top_down:
            frontier.vertices = np.sort(data) if self.num_tasks > 1 else data
        else:
            frontier.vertices, frontier.bits = np.empty(0, dtype=np.int64), data
        self.residence.device = None
        return moved

    def to_host(self, frontier: Frontier) -> Frontier:
        """``frontier`` with its data on the host (a no-op unless it is a shell)."""
        if self.on_device and frontier.vertices is None:
            self._leave(frontier)
        return frontier

    # ------------------------------------------------------------------ the result
    @property
    def ran(self) -> bool:
        """Whether a level ran on the GPU (the result is then there)."""
        return self.levels is not None

    def result_bytes(self) -> int:
        """Bytes the result's copy to the host moves."""
        return 2 * self.levels.dtype.itemsize * self.n if self.ran else 0

    def result(self, frontier: Frontier, sources):
        """``(distances, parents)`` on the host: the device's result, with the pairs of the
        levels that ran on the host (``frontier.included``) written over it."""
        from taskbfs.search.device_cache import result_to_host

        with self.cache.lock:
            copied = self.levels.copied_result()
        return result_to_host(frontier, *self._host_logs(frontier), sources, cache=self.cache,
                              arrays=self.levels.result() if copied is None else copied)

    def result_on_device(self, frontier: Frontier, sources):
        """:meth:`result` left in this GPU's memory, as CuPy arrays (``bfs(...,
        device_result=True)``): nothing crosses the bus but the host levels' pairs."""
        from taskbfs.search.device_cache import result_on_device

        return result_on_device(frontier, *self._host_logs(frontier), sources, cache=self.cache,
                                arrays=self.levels.result())

    def _host_logs(self, frontier: Frontier) -> tuple[list, list]:
        """``(logs, levels)`` of the steps that ran on the host (the others' pairs are in
        the device's result)."""
        on_host = frontier.included[self.logs_on_device:]
        return [d for _, d in on_host], [level for level, _ in on_host]


def _host_frontier(frontier: Frontier, visited: np.ndarray, on_gpu: np.ndarray,
                   vertices: np.ndarray | None = None, counts: np.ndarray | None = None,
                   task_edges: np.ndarray | None = None,
                   bits: np.ndarray | None = None) -> Frontier:
    """The level's frontier on the host as its CPU steps read it, the GPU tasks' work left
    out: top-down, the CPU tasks' ``vertices`` (sorted, ``counts`` and ``task_edges`` per
    task); bottom-up, the frontier's ``bits`` and the CPU tasks' unvisited vertices."""
    offsets = np.zeros(frontier.bounds.size, dtype=np.int64)
    if counts is not None:
        np.cumsum(counts, out=offsets[1:])
    progress = frontier.progress
    progress = replace(progress, unvisited_per_task=np.where(on_gpu, 0,
                                                             progress.unvisited_per_task))
    empty = np.empty(0, dtype=np.int64)
    return Frontier(frontier.level, frontier.direction, empty if vertices is None else vertices,
                    offsets, bits, visited, frontier.bounds, progress, task_edges=task_edges)


__all__ = ["BARRIER_NAME", "GpuLevels"]
