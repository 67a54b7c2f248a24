"""The GPU levels of a one-task search (T = 1) on the GPU worker: step and barrier on the device.

Returns
    :class:`GpuLevels`: :meth:`~GpuLevels.level` runs a level whose step the policy puts
    on the GPU and returns ``(next Frontier, LevelSummary)``, as the host's step and
    barrier (:func:`~taskbfs.bfs.state.advance`) would; :meth:`~GpuLevels.result` gives
    the search's ``(distances, parents)`` on the host at the end.
Approach
    When one task owns every vertex, a GPU level's discoveries are the next frontier as
    they are, so its barrier needs no host: the step (``bfs_step``, traced ``cuda``) runs
    the level's kernels on the device (:class:`~taskbfs.kernels.gpu_levels.DeviceLevels`)
    and reads back the level's counts (vertices found, their out-arcs, entries read); the
    barrier (``bfs_barrier``, traced ``cuda``) applies Beamer's rule to them, converts the
    frontier on the device when the direction changes, and makes the level's summary. The
    frontier, the visited set and the result stay in device memory; the next
    :class:`~taskbfs.bfs.state.Frontier` is a shell (``vertices`` and ``bits`` None) while
    they do. A level whose step the policy puts on the CPU (hybrid) gets the state back
    from the barrier before it (visited bitmap and frontier), and the next GPU level takes
    it up again, unless the state stays for it: each level's device is the runtime's one
    rule (:class:`~taskbfs.runtime.policy.Placement`), told that the state is in device
    memory (a :class:`~taskbfs.runtime.policy.Residence`) and what moving it to the host
    costs (``DeviceLevels.leave_seconds``), so a few small levels that cost less here than
    the move stay (:meth:`GpuLevels.place`). The CPU steps' pairs are written over the
    device's result on the host at the end
    (:func:`~taskbfs.bfs.device_cache.result_to_host`).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from taskbfs import config
from taskbfs.bfs.state import TOP_DOWN, Frontier, LevelSummary
from taskbfs.bfs.steps import STEP
from taskbfs.kernels.direction import BOTTOM_UP
from taskbfs.runtime import CUDA, Placement, Residence, include_each

#: The trace name of the barrier (that of the dispatched barrier task).
BARRIER_NAME = "bfs_barrier"


class GpuLevels:
    """One search's levels on this worker's GPU (see the module docstring).

    Parameters
    ----------
    slices : tuple of GraphSlice
        The search's one task's slices: ``(part,)`` or ``(part, transposed part)``.
    placement : Placement
        Where each level's step runs (the host between GPU levels when it says so).
    num_vertices : int
    source : int
    cache : DeviceCache, optional
        Default: this worker's.
    """

    def __init__(self, slices, placement: Placement, num_vertices: int, source: int,
                 cache=None):
        self.slices = slices
        self.placement = placement
        self.n = int(num_vertices)
        self.source = int(source)
        self._cache = cache
        #: The first entries of ``Frontier.included`` whose pairs the device's result holds.
        self.logs_on_device = 0
        self.levels = None  # the DeviceLevels, once a level ran on the GPU
        #: Where the frontier and visited set are (``device`` CUDA while on the GPU), and
        #: the rent paid for levels kept there against the policy's word.
        self.residence = Residence()

    @staticmethod
    def applies(device: str, num_tasks: int) -> bool:
        """Whether a search task on ``device`` with ``num_tasks`` tasks runs its GPU levels
        here: on the GPU worker, one task (see :func:`~taskbfs.bfs.state.one_range` for
        why one task: its discoveries are the next frontier as they are). Placing a graph
        asks it too, to have the device levels' buffers ready."""
        return device == CUDA and num_tasks == 1

    @property
    def on_device(self) -> bool:
        """Whether the frontier and visited set are on the device now."""
        return self.residence.device == CUDA

    def place(self, size: int) -> bool:
        """Whether the level whose step has ``size`` runs on the GPU, by the runtime's one
        rule (:meth:`Placement.device`) told where the state is and what moving it to the
        host costs (``DeviceLevels.leave_seconds``, the last move of this graph's state on
        this GPU): a search's last few small levels (a Kronecker graph's) stay while they
        cost less than that move; a long tail of them (a deep graph's) leaves for the
        compiled CPU loop. Asked once per level: by the barrier of a GPU level (which
        moves the state out when the answer is no), else when the level is announced."""
        move = self.levels.leave_seconds if self.on_device else 0.0
        return self.placement.device(int(size), 0, self.residence, move) == CUDA

    @staticmethod
    def runs(summary: LevelSummary) -> bool:
        """Whether the level ``summary`` opens runs on the GPU (its ``gpu_steps``)."""
        return bool(summary.gpu_steps.size and summary.gpu_steps[0])

    @property
    def cache(self):
        if self._cache is None:
            from taskbfs.bfs.device_cache import device_cache

            self._cache = device_cache()
        return self._cache

    # ------------------------------------------------------------------ a level
    def level(self, frontier: Frontier, summary: LevelSummary) -> tuple[Frontier, LevelSummary]:
        """The level ``summary`` opens, step and barrier, as included tasks traced ``cuda``."""
        start = time.perf_counter()
        tags = {"level": frontier.level, "task": 0, "size": int(summary.sizes[0]),
                "direction": frontier.direction}
        counts, h2d = include_each(STEP.name, self._step, [(tags, (frontier, summary))],
                                   device=CUDA)[0]
        self.residence.pay(time.perf_counter() - start)  # before the barrier places the next
        return include_each(BARRIER_NAME, self._barrier,
                            [({"level": frontier.level}, (frontier, counts, h2d))], device=CUDA)[0]

    def _step(self, frontier: Frontier, summary: LevelSummary):
        with self.cache.lock:
            h2d = 0 if self.on_device else self._enter(frontier)
            if frontier.direction == TOP_DOWN:
                counts = self.levels.top_down(frontier.level, summary.frontier_size,
                                              summary.frontier_edges)
            else:
                counts = self.levels.bottom_up(frontier.level)
        return counts, h2d

    def _barrier(self, frontier: Frontier, counts, h2d: int) -> tuple[Frontier, LevelSummary]:
        """:func:`~taskbfs.bfs.state.advance` for one task whose discoveries are on the
        device: the rule from the counts, the frontier converted there."""
        from taskbfs.kernels.gpu_levels import COUNTS_BYTES

        start = time.time()
        progress, tally = frontier.progress, frontier.tally
        n_new = counts.found
        unvisited = progress.unvisited_per_task - n_new
        summary = tally.rule.summary(
            frontier.level + 1, frontier.direction, tally.frontier_size, tally.unexplored_edges,
            np.array([n_new], dtype=np.int64), np.array([counts.next_edges], dtype=np.int64),
            unvisited, edges_examined=np.array([counts.examined], dtype=np.int64),
            found=np.array([n_new], dtype=np.int64), start=start)
        top_down = not (summary.direction == BOTTOM_UP and n_new)
        seconds, d2h = counts.seconds, COUNTS_BYTES
        if n_new and top_down != (frontier.direction == TOP_DOWN):
            with self.cache.lock:
                seconds += self.levels.convert(summary.level, top_down, n_new)
        offsets = np.array([0, n_new if top_down else 0], dtype=np.int64)
        empty = np.empty(0, dtype=np.int64)
        nxt = Frontier(summary.level, summary.direction, None if n_new else empty, offsets, None,
                       frontier.visited_bits, frontier.bounds,
                       replace(progress, unvisited_per_task=unvisited), frontier.included,
                       tally=tally.after(summary))
        size = int(summary.sizes[0])
        stays = bool(n_new or size) and self.place(size)  # the next level's one decision
        if n_new and not stays:
            d2h += self._leave(nxt)
        device_stats = np.array([[0, h2d, d2h, round(seconds * 1e9)]], dtype=np.int64)
        summary = replace(summary, device_stats=device_stats, barrier_stop=time.time(),
                          gpu_steps=np.array([int(stays and size > 0)], dtype=np.int64))
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
            self.levels, moved = self.cache.device_levels(self.slices[0], self.slices[-1], self.n)
            self.levels.start_search()
            self.levels.small_level_arcs = int(config.get("gpu.small-level-arcs"))
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
        self.cache.data.count_up(entered)
        moved += entered
        self.residence.device = CUDA
        return moved

    def _reached(self, frontier: Frontier):
        """``(pairs, frontier ids)`` for :meth:`DeviceLevels.enter_reached`: the source and
        every host step's pairs so far (``frontier.included``) as rows of vertex, parent
        and distance, and the level's frontier as vertex ids; None when they would be more
        bytes than two bitmaps (``entry_capacity``; :meth:`DeviceLevels.enter` then sends
        the visited bitmap and the frontier)."""
        logs = frontier.included
        if any(d.parents is None for _, d in logs):
            return None
        dtype = self.levels.dtype
        count = 1 + sum(int(d.vertices.size) for _, d in logs)
        top_down = frontier.direction == TOP_DOWN
        ids = frontier.vertices.size if top_down else count  # at most
        if 3 * count + ids > self.levels.entry_capacity:
            return None
        pairs = np.empty((3, count), dtype=dtype)
        pairs[:, 0] = (self.source, self.source, 0)
        at = 1
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
        """Fill the shell ``frontier`` in from the device (its visited bitmap in place);
        bytes moved."""
        top_down = frontier.direction == TOP_DOWN
        with self.cache.lock:
            visited, data, moved = self.levels.leave(frontier.level, top_down,
                                                     frontier.tally.frontier_size)
            self.cache.data.count_down(moved)
        frontier.visited_bits[:] = visited
        if top_down:
            frontier.vertices = data
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

    def result(self, frontier: Frontier, source: int):
        """``(distances, parents)`` on the host: the device's result, with the pairs of the
        steps that ran on the CPU (``frontier.included``) written over it."""
        from taskbfs.bfs.device_cache import result_to_host

        on_host = frontier.included[self.logs_on_device:]  # the others' are on the device
        logs = [d for _, d in on_host]
        levels = [level for level, _ in on_host]
        return result_to_host(frontier, logs, levels, source, cache=self.cache,
                              arrays=self.levels.result())
