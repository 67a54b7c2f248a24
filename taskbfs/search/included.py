"""A whole search as one task on the worker that holds its data: every step and barrier included.

Returns
    :func:`run_search` (the body of the ``bfs_search`` task): a :class:`SearchOutcome`
    (the search's distances and parents, and the summary of every level).
Approach
    A level is always T step tasks and a barrier. When one worker holds every slice of
    the graph (the embedded cluster; any cluster whose workers share one process), the
    runtime does not dispatch them: the whole search is one task placed on that worker,
    and each level's steps and barrier run inside it as *included* tasks
    (:func:`taskbfs.runtime.include`, OmpSs's ``final`` clause), traced like dispatched
    ones. A dispatched level costs the Dask runtime a fixed overhead (submission,
    scheduling, two hops and a round trip through the client) whatever its work; an
    included one costs what its kernels cost plus a thread-pool hand-off. The steps of a
    level run side by side on the process's thread pool (as the worker would run them on
    its threads); a level with one step runs it in the task's own thread. Small top-down
    levels whose steps all run on the CPU go many at a time through a compiled loop
    (:mod:`taskbfs.search.compiled_levels`): a deep graph's levels cost microseconds.
    :class:`IncludedLevels` runs and announces each level; the one level loop
    (:func:`~taskbfs.search.levels.run_levels`, also the dispatched search's) drives it.
Devices
    Each step runs on the device the runtime's one placement rule gives its size and task
    id (:class:`~taskbfs.runtime.policy.Placement` of the search's policy, the rule the
    scheduler plugin applies to a dispatched step; this module compares no size with a
    threshold): on a CPU worker, always the CPU; on a GPU worker (a cluster with one GPU
    worker and a policy that uses it), the GPU steps one after another (the worker's one
    GPU), traced ``cuda``, the CPU ones side by side on the host's threads, traced
    ``smp``. With one task, a level whose step runs on the GPU keeps everything there:
    the step and its barrier run on the device and only the level's counts come back
    (:mod:`taskbfs.search.device_levels`; the rule, told that the state is there, may keep
    a small level there too). With several tasks all on the GPU, the GPU steps write the
    result into device memory. Either way it crosses the bus once, at the end. A user
    policy works on every path; one that gives no ``largest_cpu_size`` gets no compiled
    levels on the GPU worker (the compiled loop places by those numbers).
Messages
    The client needs no level summary to go on, so the task sends them for the live
    page and ``progress`` only, a few times a second (the last one at once when one went
    before it or ``progress`` waits for it); every summary comes back with the outcome.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from taskbfs.placed.kept import KeptResult
from taskbfs.runtime import (
    CUDA,
    SMP,
    Placement,
    PlacementPolicy,
    Policy,
    Task,
    include,
    publish,
    record_included,
    worker_threads,
)
from taskbfs.search.compiled_levels import (
    LEVELS_NAME,
    LevelBlock,
    LevelSummaries,
    cpu_sizes,
    run_small_levels,
    small_levels_apply,
)
from taskbfs.search.device_levels import GpuLevels
from taskbfs.search.level_tasks import LevelTasks
from taskbfs.search.levels import run_levels
from taskbfs.search.state import (
    Frontier,
    LevelSummary,
    SummaryPublisher,
    assemble_all,
    first_frontier,
)

#: Trace names of the included barrier and result assembly (those of the dispatched tasks).
BARRIER_NAME = "bfs_barrier"
RESULT_NAME = "bfs_result"


@dataclass
class SearchOutcome:
    """What the ``bfs_search`` task returns.

    Attributes
    ----------
    distances, parents : ndarray of int32 (int64 from 2^31 vertices)
        The search's result (see :class:`~taskbfs.search.result.BFSResult`).
    summaries : LevelSummaries
        One per level, level 0 first (a sequence); the last one has an empty frontier.
    assembly_d2h_bytes : int
        Bytes the result's assembly copied from the GPU (a result kept there).
    """

    distances: np.ndarray
    parents: np.ndarray
    summaries: LevelSummaries
    assembly_d2h_bytes: int = 0


def run_search_on_cpu(*args, **kwargs) -> SearchOutcome:
    """The search task's CPU implementation: :func:`run_search` with every step on the CPU."""
    return run_search(*args, device=SMP, **kwargs)


def run_search_on_gpu(*args, **kwargs) -> SearchOutcome:
    """Its GPU implementation (the task on the one GPU worker): each step on the device
    the policy gives it."""
    return run_search(*args, device=CUDA, **kwargs)


def run_search(bundle, degrees: np.ndarray, *, init: dict, policy: Policy | PlacementPolicy,
               device: str = SMP) -> SearchOutcome:
    """The whole search, every level's steps and barrier included in this task.

    Parameters
    ----------
    bundle : SliceBundle
        Every task's slices in task order (:class:`~taskbfs.placed.placement.SliceBundle`:
        per task its out-adjacency slice, then its transposed one when a directed graph
        has one for bottom-up steps).
    degrees : ndarray of int64
    init : dict
        ``bounds``, ``sources`` (int64, distinct), ``direction_mode``, ``total_edges``,
        ``alpha``, ``beta``, ``depth_limit``: what :func:`~taskbfs.search.state.first_frontier`
        needs; ``device_result``: leave the result in this GPU's memory (CuPy arrays, no
        copy to the host; :func:`_assemble`); ``progress``: the client reads the level
        summaries as they come (:class:`~taskbfs.search.state.SummaryPublisher`);
        ``kept``: the result stays on this worker, and the client reads the last summary
        from the message the task sends last (:data:`SEARCHED`), the others when asked
        (:class:`LaterSummaries`).
    policy : Policy or PlacementPolicy
        Places each step on a device (by its size and task id), through the runtime's
        :class:`~taskbfs.runtime.policy.Placement`.
    device : {"smp", "cuda"}
        The worker this task runs on: "cuda" on the GPU worker.
    """
    slices = bundle.tasks
    placement = Placement(policy, gpu_present=device == CUDA)
    sources = init["sources"]
    frontier, summary = first_frontier(degrees, init["bounds"], sources,
                                       init["direction_mode"], init["alpha"], init["beta"],
                                       init["total_edges"], depth_limit=init.get("depth_limit"))
    threads = worker_threads()
    on_device = bool(init.get("device_result")) and device == CUDA  # else moved after
    levels = IncludedLevels(slices, degrees, placement, device, threads, frontier, sources,
                            result_to_host=not on_device, waited=bool(init.get("progress")))
    run_levels(levels, summary)
    gpu, frontier = levels.gpu, levels.frontier
    d2h = gpu.result_bytes() if gpu is not None and gpu.ran and not on_device else 0
    distances, parents = include(RESULT_NAME, _assemble, {"done": True, "d2h_bytes": d2h},
                                 frontier, sources, threads, gpu, on_device)
    if init.get("kept"):  # the client's call returns on this, its result left here
        publish({SEARCHED: levels.summaries[-1].to_message(), "d2h_bytes": d2h})
    return SearchOutcome(distances, parents, levels.summaries, d2h)


#: The key of the message a search task whose result stays on its worker sends last.
SEARCHED = "searched"


#: The ways :class:`IncludedLevels` runs a level (each: the level's step tasks and its barrier).
ON_DEVICE, COMPILED, ON_THREADS = "on the device", "compiled", "on threads"


class IncludedLevels:
    """The runner of the one-task search's levels (:func:`~taskbfs.search.levels.run_levels`):
    how this task runs each level (the one rule, :meth:`way`, and the three ways) and
    announces it.

    Every way runs the same step tasks and barrier, traced alike: on the device
    (:class:`~taskbfs.search.device_levels.GpuLevels`: a level with a step placed on the
    GPU, its GPU steps as one batch, its CPU ones on the host's threads; only counts come
    back), in the compiled loop (small top-down CPU levels, many per call), or on the CPU
    worker's threads (:class:`~taskbfs.search.level_tasks.LevelTasks`: T steps and the
    barrier with no Python between tasks).

    Parameters
    ----------
    slices : list of tuple of GraphSlice
        Per task, its slices (see :func:`run_search`).
    degrees : ndarray of int64
    placement : Placement
        The runtime's rule that gives each step its device.
    device : {"smp", "cuda"}
        The worker this task runs on.
    threads : int
        The worker's threads (the levels run on them, and the result's assembly).
    frontier : Frontier
        Level 0's (:func:`~taskbfs.search.state.first_frontier`).
    sources : ndarray of int64
    result_to_host : bool
        Whether the result goes to the host (else it stays on the GPU: ``device_result``).
    waited : bool
        Whether the client reads the summaries as they come (``progress``).

    Attributes
    ----------
    frontier : Frontier
        The frontier of the last level run (the result is assembled from it).
    summaries : LevelSummaries
        Every level's summary as announced, level 0 first, and the step tables of the
        levels run on threads.
    gpu : GpuLevels or None
        The device levels (one task on the GPU worker).
    """

    def __init__(self, slices, degrees, placement: Placement, device: str, threads: int,
                 frontier: Frontier, sources, result_to_host: bool = True,
                 waited: bool = False):
        self.slices, self.degrees, self.placement = slices, degrees, placement
        self.device = device
        self.frontier = frontier
        num_tasks = len(slices)
        self.summaries = LevelSummaries(num_tasks)
        self.publisher = SummaryPublisher(waited)
        self.on_threads = LevelTasks(slices, degrees, threads)
        self.gpu = (GpuLevels(slices, placement, degrees, sources, frontier.bounds,
                              self.on_threads, result_to_host=result_to_host)
                    if GpuLevels.applies(device) else None)
        self.cpu_max = cpu_sizes(placement, frontier.tally.rule)  # None: no level is compiled

    def way(self, frontier: Frontier, summary: LevelSummary) -> str:
        """How the level ``summary`` opens runs (``frontier`` on the host unless on the
        device)."""
        if self.gpu is not None and self.gpu.runs(summary):
            return ON_DEVICE
        if small_levels_apply(frontier, summary, self.cpu_max):
            return COMPILED
        return ON_THREADS

    def level(self, summary: LevelSummary) -> LevelSummary | LevelBlock:
        """Run the level ``summary`` opens: its next level's summary, or for the compiled
        loop a :class:`LevelBlock` (a block of small levels)."""
        frontier = self.frontier
        if self.gpu is not None and not self.gpu.runs(summary):
            frontier = self.gpu.to_host(frontier)  # a CPU level after GPU ones
        way = self.way(frontier, summary)
        if way == ON_DEVICE:
            self.frontier, made = self.gpu.level(frontier, summary)
            self.summaries.add_steps(frontier.level, self.gpu.steps)
        elif way == COMPILED:
            self.frontier, made = include(LEVELS_NAME, run_small_levels, {"level": frontier.level},
                                          frontier, self.on_threads.lists, self.degrees,
                                          self.cpu_max)
        else:
            self.frontier, made = self._on_threads(frontier)
        return made

    def announce(self, made: LevelSummary | LevelBlock) -> tuple[LevelSummary, bool]:
        """Keep ``made`` and send its (last) summary as this task sends them (see
        :class:`SummaryPublisher`), with the device of each of the next level's steps
        (``gpu_steps``), asked of the runtime's rule (:class:`Placement`) once per step;
        with one task on the GPU worker, by :meth:`GpuLevels.place`, which tells the rule
        where the search's state is (a GPU level's barrier asked it already: its summary
        comes placed). ``(that summary, False)``: this search runs to its end."""
        if isinstance(made, LevelBlock):
            self.summaries.add_block(made)  # its summaries are built when read
            return self._placed(self.summaries[-1]), False
        summary = self._placed(made)
        self.summaries.append(summary)
        return summary, False

    def _placed(self, summary: LevelSummary) -> LevelSummary:
        """``summary`` with its ``gpu_steps``, published."""
        if not summary.gpu_steps.size:  # else placed by the GPU level's barrier
            summary = replace(summary, gpu_steps=self._devices(summary.sizes))
        self.publisher.add(summary)
        return summary

    def _devices(self, sizes: np.ndarray) -> np.ndarray:
        """Per task, 1 when its step of ``sizes[t]`` runs on the GPU (0: on the CPU, or no
        step): on a CPU worker, none."""
        if self.gpu is None:
            return np.zeros(sizes.size, dtype=np.int64)
        return self.gpu.devices(sizes)

    def _on_threads(self, frontier: Frontier):
        """One level by :class:`LevelTasks`: ``(next frontier, summary)``. Its barrier is
        recorded as an included task; its steps as one array in :attr:`summaries` (the
        trace's rows are made of it when read: a Python record per step would hold the GIL)."""
        nxt, summary, table, barrier = self.on_threads.run(frontier)
        self.summaries.add_steps(frontier.level, table)
        record_included(BARRIER_NAME, [barrier])
        return nxt, summary

def _assemble(frontier: Frontier, sources, threads: int | None = None,
              gpu: GpuLevels | None = None, on_device: bool = False):
    """The search's ``(distances, parents)`` from every step's output (the last
    frontier's ``included``), or the result on the GPU with the host levels' pairs; with
    ``on_device``, as CuPy arrays in this GPU's memory (:func:`result_on_device`)."""
    if gpu is not None and gpu.ran:
        if on_device:
            return gpu.result_on_device(frontier, sources)
        return gpu.result(frontier, sources)
    logs = [d for _, d in frontier.included]
    levels = [level for level, _ in frontier.included]
    result = assemble_all(logs, levels, sources=sources, bounds=frontier.bounds,
                          cuts=[0, int(frontier.bounds[-1])], threads=threads)
    # no level ran on the GPU: the result is made here and sent up once
    return tuple(map(to_cupy, result)) if on_device else result


def to_cupy(array: np.ndarray):
    """``array`` in this GPU's memory as a CuPy array (the one copy of a result made on
    the host; :class:`~taskbfs.errors.DeviceUnavailableError` without CuPy)."""
    from taskbfs.kernels.gpu import require_cupy

    return require_cupy("device_result=True").asarray(array)


class LaterSummaries(Sequence):
    """The summaries of a search whose result stayed on its worker: the last one at hand
    (what the call's result needs), every one read from the task's outcome when first
    asked for (:attr:`later`, a :class:`concurrent.futures.Future` that a task asked for
    when the search was submitted fills)."""

    def __init__(self, client, outcome, last: LevelSummary):
        self.last = last
        self.later = concurrent.futures.Future()
        meta = client.submit(_outcome_summaries, outcome)
        # Dask calls back in a thread of its own: reading the answer there waits on no one
        meta.add_done_callback(self._fill)
        self._meta = meta  # held: a released future's task may be forgotten

    def _fill(self, meta) -> None:
        try:
            self.later.set_result(meta.result())
        except BaseException as exc:  # noqa: BLE001 - the reader gets it
            self.later.set_exception(exc)

    def __getitem__(self, index):
        if isinstance(index, int) and index == -1:
            return self.last
        return self.later.result()[index]

    def __len__(self) -> int:
        return len(self.later.result())

    def __getattr__(self, name: str):  # the LevelSummaries' own (step tables, blocks)
        if name.startswith("_") or name in ("last", "later"):
            raise AttributeError(name)
        return getattr(self.later.result(), name)


def kept_of_search(client, outcome, bounds: np.ndarray) -> KeptResult:
    """The result inside a search task's ``outcome`` (a future), left on the worker that
    holds it, cut into the ranges ``bounds`` there."""
    pieces = [client.submit(_outcome_range, outcome, int(lo), int(hi))
              for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    return KeptResult(client, pieces, bounds)


def _outcome_range(outcome: SearchOutcome, lo: int, hi: int):
    return outcome.distances[lo:hi], outcome.parents[lo:hi]


def _outcome_summaries(outcome: SearchOutcome):
    return outcome.summaries


#: The search task on a CPU worker: ``ins = [slices, degrees]`` (every task's slices as one
#: :class:`~taskbfs.placed.placement.SliceBundle`), ``outs = [search]``. A CPU-only task: the policy always places it there.
SEARCH = Task("bfs_search", smp=run_search_on_cpu)
#: The same task on the GPU worker (a GPU-only task: the policy always places it there).
SEARCH_ON_GPU = Task("bfs_search", cuda=run_search_on_gpu)

__all__ = ["SEARCH", "SEARCH_ON_GPU", "SEARCHED", "LaterSummaries", "SearchOutcome",
           "kept_of_search", "run_search", "LevelSummary"]
