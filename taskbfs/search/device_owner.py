"""An owner on a GPU worker: its ranges' adjacency and the search's state on its GPU for the whole search, each level's found vertices traded GPU to GPU.

Returns
    :class:`DeviceOwner`: the runner (:func:`~taskbfs.search.levels.run_levels`) of one
    owner's levels inside :data:`~taskbfs.search.owner_levels.OWNER_LEVELS`, when the
    client chose owners that are all GPU workers; its
    :meth:`~DeviceOwner.result` is what a host owner returns (per range, or in pieces).
Approach
    One :class:`~taskbfs.kernels.gpu_levels.DeviceLevels` over ``[lo, hi)``, from the
    owner's first vertex to its last, its ranges' slices joined on the device (another
    owner's vertices between them with no arcs: they find nothing), its state over every
    vertex id (parents, distances, the frontier as this owner's queue and as the whole
    bitmap). A level:

    1. its steps, each placed by the runtime's one rule: those on the GPU as one batch (the
       kernels of a search run as one task), those on the CPU side by side on the worker's
       threads over the visited bitmap and their frontier read from the device, their pairs
       claimed on the device;
    2. the vertices this owner claimed (of any range) as a bitmap, OR'd with every other
       owner's (:meth:`~taskbfs.runtime.collective.Collective.reduce_into`: an NCCL
       allgather between GPUs, Dask's comms elsewhere), so that every owner marks every
       found vertex reached (-2 where another owner claimed it: its parent is there) and
       queues its own for a top-down level; the bitmap is the next bottom-up frontier;
    3. the found vertices of its own ranges and their arcs counted per range as they are
       marked, summed over the owners (one small reduction): every owner makes the same
       next summary by the one switch rule, and publishes its ranges' counts as a host
       owner's report.

    At the end one max-reduction of the parents gives every vertex the parent an owner
    that claimed it wrote, and each owner copies its ranges' result to the host.
Faults
    The state lives on the GPUs only: the client keeps no vertices of these levels
    (:class:`~taskbfs.search.owners.KeptLevels`), so a lost owner's search starts again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np

from taskbfs.kernels.pinned import copy_out
from taskbfs.runtime import (
    CUDA,
    SMP,
    Placement,
    include_each,
    publish,
    record_included,
    thread_pool,
)
from taskbfs.search.included import BARRIER_NAME
from taskbfs.search.owner_state import REPORT
from taskbfs.search.state import TOP_DOWN, Frontier, LevelSummary, SummaryPublisher
from taskbfs.search.steps import STEP_NAME, step_smp


def owner_announce(made: LevelSummary, placement: Placement,
                   publisher: SummaryPublisher | None) -> tuple[LevelSummary, bool]:
    """How an owner running its levels itself announces ``made``: ``(made with the device
    of each of its steps, False)``, the runtime's one rule asked per step (every owner asks
    it alike, as the one-task search does); owner 0 (``publisher``) sends the live page the
    summaries now and then. The client keeps and reports the levels (from the reports)."""
    gpu_steps = np.array([int(bool(size) and placement.device(int(size), t) == CUDA)
                          for t, size in enumerate(made.sizes.tolist())], dtype=np.int64)
    made = replace(made, gpu_steps=gpu_steps)
    if publisher is not None:
        publisher.add(made)
    return made, False


class DeviceOwner:
    """One owner's levels on its GPU (see the module docstring).

    Parameters
    ----------
    slices : list of tuple of GraphSlice
        Per owned range (ascending), its slice and its transposed one when it has one.
    tasks : ndarray of int64
        The owned ranges.
    bounds : ndarray of int64
        Every range's bounds (T + 1).
    sources : ndarray of int64
    collective : Collective
        Between the owners (rank = owner number).
    rule : SwitchRule
    placement : Placement
    opening : LevelSummary
        Level 0's.
    queued : float
        Seconds the owner's task waited from its submission to its start.
    """

    def __init__(self, slices, tasks: np.ndarray, bounds: np.ndarray, sources, collective,
                 rule, placement: Placement, opening: LevelSummary, queued: float = 0.0):
        from taskbfs.kernels.gpu import require_gpu
        from taskbfs.search.device_cache import device_cache

        require_gpu()  # the device current in this thread: the levels' driver calls need it
        self.slices = dict(zip(tasks.tolist(), slices, strict=True))
        self.bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self.n = int(self.bounds[-1])
        self.collective, self.rule, self.placement = collective, rule, placement
        self.me = collective.rank
        self.own = np.zeros(self.bounds.size - 1, dtype=bool)
        self.own[tasks] = True
        self.cache = device_cache()
        sources = np.asarray(sources, dtype=np.int64).reshape(-1)
        with self.cache.lock:
            self.levels, uploaded = self.cache.device_levels(slices, self.n)
            self.h2d = uploaded + self._enter(sources, opening.direction == TOP_DOWN)
        self.unvisited = np.diff(self.bounds) - np.bincount(
            np.searchsorted(self.bounds, sources, side="right") - 1, minlength=self.own.size)
        self.arcs = self._source_arcs(sources)  # per range, its frontier's out-arcs
        self.words = self.levels.words

        self._reported = time.perf_counter()
        self._queued = queued  # the first level's report says how long the task waited
        # owner 0 sends the live page the levels' summaries, as a one-task search does
        self.publisher = SummaryPublisher() if self.me == 0 else None

    def _enter(self, sources: np.ndarray, top_down: bool) -> int:
        """A new search's state: the sources reached, the frontier this owner's sources
        (top-down) or all of them (a bottom-up bitmap); bytes copied."""
        from taskbfs.kernels.gpu_owner import FoundShare

        levels = self.levels
        levels.start_search()
        levels.set_tasks(self.bounds)
        levels.zero_task_rows()  # the owner counts per task whatever T (set_tasks: T > 1)
        pairs = np.stack([sources, sources, np.zeros_like(sources)]).astype(levels.dtype)
        mine = self.own[np.searchsorted(self.bounds, sources, side="right") - 1]
        frontier = sources[mine] if top_down else sources
        moved = levels.enter_reached(0, top_down, pairs, frontier.astype(levels.dtype))
        self.share = FoundShare(levels, self.own, self.cache.buffer)
        return moved

    def _source_arcs(self, sources: np.ndarray) -> np.ndarray:
        arcs = np.zeros(self.own.size, dtype=np.int64)
        for t, group in self.slices.items():
            part = group[0]
            mine = sources[(sources >= part.lo) & (sources < part.hi)] - part.lo
            indptr = np.asarray(part.indptr)
            arcs[t] = int((indptr[mine + 1] - indptr[mine]).sum())
        return arcs

    # ------------------------------------------------------------------ the runner
    def announce(self, made: LevelSummary) -> tuple[LevelSummary, bool]:
        """``(made with the device of each of its steps, False)``: :func:`owner_announce`."""
        return owner_announce(made, self.placement, self.publisher)

    def level(self, summary: LevelSummary) -> LevelSummary:
        """Run the level ``summary`` opens (see the module docstring); the next summary."""
        opened, start = time.perf_counter(), time.time()
        level, top_down = summary.level, summary.direction == TOP_DOWN
        own, levels = self.own, self.levels
        on_gpu = summary.gpu_steps.astype(bool)
        cpu_tasks = np.flatnonzero(own & ~on_gpu & (summary.frontier_counts > 0))
        host_read = np.zeros(own.size, dtype=np.int64)
        with self.cache.lock:
            levels.place_tasks(on_gpu | (summary.sizes == 0))
            if cpu_tasks.size:
                seconds, moved = self._mixed(summary, on_gpu, cpu_tasks, host_read)
            else:
                seconds, moved = self._on_gpu(summary, own), (0, 0)
            stepped, batch_stop = time.perf_counter(), time.time()
            self._share(level, top_down)
            shared = time.perf_counter()
            _, tasks = levels.task_counts(level, tallied=True)
        self._record(summary, own & on_gpu, start, batch_stop)
        if top_down:  # a top-down step reads every arc of its frontier
            tasks[2] = np.where(own & on_gpu, self.arcs, 0)
        tasks[2] += host_read
        tasks = self._summed(tasks)
        found, arcs, examined = tasks
        reported = time.perf_counter()
        leader = int(np.argmax(own & on_gpu)) if (own & on_gpu).any() else -1
        device = np.array([[leader, self.h2d + moved[0], moved[1] + levels.counts_bytes,
                            round(seconds * 1e9)]] if leader >= 0 else [], dtype=np.int64)
        self.h2d = 0
        report = self._report(summary, found, arcs, examined, device, start, {
            "opening": opened - self._reported, "steps": stepped - opened,
            "pieces": shared - stepped, "barrier": reported - shared})
        publish({REPORT: report})
        self._reported, self._queued = reported, 0.0
        self.unvisited = self.unvisited - found
        self.arcs = arcs
        return self.rule.summary(
            level + 1, summary.direction, summary.frontier_size, summary.unexplored_edges,
            found, arcs, self.unvisited, edges_examined=examined, found=found, start=start,
            device_stats=device.reshape(-1, 4))

    def _record(self, summary: LevelSummary, gpu_own: np.ndarray, start: float,
                stop: float) -> None:
        """The trace's records of the level's GPU steps (one batch, from ``start`` to
        ``stop``) and of its barrier (the trade and the counts, until now)."""
        thread = threading.get_ident()
        level, direction = summary.level, summary.direction
        steps = np.flatnonzero(gpu_own & (summary.frontier_counts > 0)).tolist()
        record_included(STEP_NAME, [({"level": level, "task": t, "size": int(summary.sizes[t]),
                                      "direction": direction}, thread, start, stop)
                                    for t in steps], device=CUDA)
        record_included(BARRIER_NAME, [({"level": level, "owner": self.me}, thread, stop,
                                        time.time())], device=CUDA)

    def _on_gpu(self, summary: LevelSummary, own: np.ndarray) -> float:
        """The level's steps, all on the GPU: one batch; the kernels' seconds."""
        levels, level = self.levels, summary.level
        if summary.direction != TOP_DOWN:
            return levels.bottom_up(level, read=False).seconds
        size = int(summary.frontier_counts[own].sum())
        return levels.top_down(level, size, int(self.arcs[own].sum()), read=False).seconds

    def _mixed(self, summary: LevelSummary, on_gpu: np.ndarray, cpu_tasks: np.ndarray,
               host_read: np.ndarray) -> tuple[float, tuple[int, int]]:
        """A level whose steps run on both devices: the GPU batch, the CPU steps on the
        worker's threads (the entries each read into ``host_read``), their pairs claimed
        on the device. ``(the kernels' seconds, (bytes up, bytes down))``."""
        levels, level = self.levels, summary.level
        top_down = summary.direction == TOP_DOWN
        visited = levels.visited_bits()
        down = visited.nbytes
        offsets = np.zeros(self.bounds.size, dtype=np.int64)
        gpu_own = self.own & on_gpu
        if top_down:
            counts = summary.frontier_counts
            size, gpu_size = int(counts[self.own].sum()), int(counts[gpu_own].sum())
            queue, cpu_vertices = levels.split(level, size, gpu_size)
            down += cpu_vertices.nbytes
            np.cumsum(np.where(gpu_own | ~self.own, 0, counts), out=offsets[1:])
            frontier = Frontier(level, summary.direction, np.sort(cpu_vertices), offsets, None,
                                visited, self.bounds)
            gpu = levels.top_down(level, gpu_size, int(self.arcs[gpu_own].sum()),
                                  frontier=queue, read=False)
        else:
            bits = levels.frontier_bits(level)
            down += bits.nbytes
            frontier = Frontier(level, summary.direction, np.empty(0, np.int64), offsets, bits,
                                visited, self.bounds)
            gpu = levels.bottom_up(level, read=False)
        calls = [({"level": level, "task": t, "size": int(summary.sizes[t]),
                   "direction": summary.direction}, (self._cpu_slice(t, top_down), frontier))
                 for t in cpu_tasks.tolist()]
        executor = thread_pool() if len(calls) > 1 else None
        found = include_each(STEP_NAME, step_smp, calls, executor=executor, device=SMP)
        for t, d in zip(cpu_tasks.tolist(), found, strict=True):
            host_read[t] = d.edges_examined
        vertices = np.concatenate([d.vertices for d in found])
        parents = np.concatenate([d.parents for d in found])
        up = levels.accept(level, top_down, vertices, parents)
        return gpu.seconds, (up, down)

    def _cpu_slice(self, task: int, top_down: bool):
        """The slice a CPU step of range ``task`` reads: out-arcs top-down, else in-arcs."""
        group = self.slices[task]
        return group[0] if top_down else group[-1]

    def _share(self, level: int, top_down: bool) -> None:
        """What every owner found at ``level`` into this owner's state (step 2 of the
        module docstring)."""
        self._reduce(self.share.claimed(level, top_down), "or")
        self.share.take(level)

    def _reduce(self, device_array, op: str) -> None:
        """``device_array`` reduced over the owners in place (through the host where the
        owners trade over Dask's comms)."""
        if self.collective.on_gpu:
            self.collective.reduce_into(device_array, op)
            return
        host = device_array.copy_to_host()
        self.collective.reduce_into(host, op)
        device_array.copy_to_device(host)

    def _summed(self, tasks: np.ndarray) -> np.ndarray:
        """This owner's per-range counts (its ranges' columns) summed with the others'."""
        tasks = np.where(self.own, tasks, 0)
        if self.collective.on_gpu:
            import cupy

            summed = cupy.asarray(tasks)
            self.collective.reduce_into(summed, "sum")
            return summed.get()
        self.collective.reduce_into(tasks, "sum")
        return tasks

    def _report(self, summary: LevelSummary, found, arcs, examined, device: np.ndarray,
                start: float, phases: dict) -> dict:
        """This owner's report of the level, as a host owner's barrier makes it
        (:func:`~taskbfs.search.owner_barrier.accept_pieces`): its ranges' columns."""
        own = np.flatnonzero(self.own)
        work = own[summary.frontier_counts[own] > 0]
        steps = [[t, int(examined[t]), int(found[t]), 0, 0, 0] for t in work.tolist()]
        for row in device.tolist():
            steps = [[*s[:3], *row[1:]] if s[0] == row[0] else s for s in steps]
        traded = 8 * self.words * (self.collective.size - 1)
        return {"reached": b"", "reached_words": False, "level": summary.level,
                "owner": self.me,
                "ranges": np.stack([found[own], arcs[own], self.unvisited[own] - found[own]])
                .tobytes(),
                "words": 8 * self.words, "steps": steps, "inbound": 0, "remote": 0,
                "local": 0, "traded": traded, "start": start, "stop": time.time(),
                "phases": {"queued": self._queued, **phases, "waited": 0.0}}

    # ------------------------------------------------------------------ the result
    def result(self, per_range: bool) -> list:
        """Every owner's parents max-reduced (an owner's -2 is another's claim), then this
        owner's ranges' result on the host, as the owner task's outputs: one ``(distances,
        parents)`` per range with ``per_range``, else one output, the list of
        ``(range, distances, parents)``."""
        levels = self.levels
        with self.cache.lock:
            parents = levels.parents[: self.n]
            self._reduce(parents, "max")
            pieces = []
            for t in np.flatnonzero(self.own).tolist():  # into the buffers pinned per range
                a, b = int(self.bounds[t]), int(self.bounds[t + 1])
                pieces.append((t, *(copy_out(array[a:b], b - a, levels.dtype, thread_pool())
                                    for array in (levels.distances, levels.parents))))
        return [(d, p) for _, d, p in pieces] if per_range else [pieces]


__all__ = ["DeviceOwner", "owner_announce"]
