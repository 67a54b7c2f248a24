"""Loading a search's compiled code on every worker before the first search, not inside it.

Returns
    :func:`warm_up` (run once per runtime, on every worker, by :func:`taskbfs.search`):
    the seconds it took on that worker.
Approach
    numba compiles each kernel once per machine (``cache=True``), but a new process still
    loads each one, with its typed-list and sort helpers, at its first call, which would
    land in the first search of a process (``benchmarks/first_search.py``). So, once per runtime, every worker
    runs the search task's body on a tiny graph, without Dask: every direction, one task
    and several, the compiled small levels and the level loop, a directed graph (its
    transposed slices), and on a GPU worker the GPU steps (not under numba's CUDA
    simulator, whose kernels are Python) and both ways into the device levels; then the
    CPU steps and the dispatched loop's
    owner tasks (a resumed search's too), called directly (a CPU worker's own searches
    never run them). Nothing of it is kept but what numba and CUDA keep.
    tests/test_first_search.py checks that no search compiles anything after it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from unittest import mock

import numpy as np

from taskbfs import config
from taskbfs.graph import Graph, partition
from taskbfs.placed.placement import SliceBundle, graph_slices
from taskbfs.runtime import CUDA, SMP, Policy
from taskbfs.search import compiled_levels, owner_barrier, owner_state
from taskbfs.search.included import run_search
from taskbfs.search.state import first_frontier
from taskbfs.search.steps import slice_for, step_smp

logger = logging.getLogger(__name__)


#: The warm-up graphs' star centre: the end of their first path.
STAR_CENTRE = 99
#: Held while a warm-up has the small-level paths off: two at once would put back each
#: other's values.
_paths_off = threading.Lock()


def _graphs() -> list[Graph]:
    """A path, a star at its end, and a path hanging from the star's last leaf (deep, then
    wide, then deep again: top-down, bottom-up, and top-down from a bottom-up level's
    frontier; levels small enough for the compiled loop, and one too big for it),
    undirected and directed."""
    leaves = 2 * compiled_levels.COMPILED_LEVEL_EDGES
    star = STAR_CENTRE + 1 + leaves  # vertices of the path and the star
    n = star + 50
    src = np.r_[np.arange(STAR_CENTRE), np.full(leaves, STAR_CENTRE), star - 1,
                np.arange(star, n - 1)]
    dst = np.r_[np.arange(1, STAR_CENTRE + 1), np.arange(STAR_CENTRE + 1, star),
                np.arange(star, n)]
    return [Graph.from_edges(src, dst, num_vertices=n),
            Graph.from_edges(src, dst, num_vertices=n, directed=True)]


def _bundle(graph: Graph, tasks: int) -> tuple[SliceBundle, np.ndarray]:
    """``graph`` cut into ``tasks`` slices as a search reads them, and the cut's bounds."""
    parts = partition(graph, tasks)
    out = graph_slices(graph, parts, graph.token)
    transposed = graph_slices(graph.transpose(), parts, graph.token + "/T", out=graph) \
        if graph.directed else out
    bundle = SliceBundle(*[s for t in range(tasks) for s in (out[t], transposed[t])], per_task=2)
    return bundle, parts.bounds


def _search(graph: Graph, tasks: int, direction: str, device: str, policy: Policy) -> None:
    bundle, bounds = _bundle(graph, tasks)
    init = {"bounds": bounds, "sources": np.zeros(1, dtype=np.int64), "direction_mode": direction,
            "total_edges": graph.num_arcs, "alpha": config.get("direction.alpha"), "beta": config.get("direction.beta")}
    run_search(bundle, graph.degrees(), init=init, policy=policy, device=device)


def _owner_levels(graph: Graph, tasks: int) -> None:
    """The dispatched loop's tasks (:mod:`taskbfs.search.owners`: the owner's state, each
    level's steps and the owner's barrier), called here without Dask, one owner holding
    every range; top-down and bottom-up levels in turn until the frontier ends."""
    bundle, bounds = _bundle(graph, tasks)
    front, state = owner_state.INIT.smp(*[bundle.tasks[t][0] for t in range(tasks)], sources=[0],
                                   num_vertices=graph.num_vertices, search="warm-up",
                                   bounds=bounds, owner_of=np.zeros(tasks, dtype=np.int64))
    for level in range(graph.num_vertices):
        if not front.counts.any():
            break
        direction = ("top-down", "bottom-up")[level % 2]
        pieces = [owner_barrier.OWNER_STEP.smp(bundle.tasks[t][-1 if direction == "bottom-up" else 0],
                                        front, level=level, direction=direction)
                  for t in range(tasks)]
        front, state = owner_barrier.OWNER_BARRIER.smp(*pieces, front, state, level=level, owner=0)
    owner_state.RESULT.smp(state)
    # a search resumed after a lost worker rebuilds its owners from the client's levels,
    # int8 widened to int16 / int32 as searches get deeper (docs/resume.md)
    distances = np.concatenate([r.distances for r in state.ranges])
    for dtype in (np.int8, np.int16, np.int32):
        owner_state.RESUME.smp(*[bundle.tasks[t][-1] for t in range(tasks)], distances.astype(dtype),
                          sources=[0], level=1, num_vertices=graph.num_vertices, search="warm-up")


def _steps(graph: Graph, tasks: int) -> None:
    """The CPU steps as a dispatched level, or a GPU worker's CPU step, runs them (a CPU
    worker's own searches run their levels through other kernels): in both directions,
    from the path's end (fewer frontier arcs than bitmap words) and from the star's centre
    (more: the step that reports each vertex once)."""
    bundle, bounds = _bundle(graph, tasks)
    degrees = graph.degrees()
    for source in (0, STAR_CENTRE):
        for direction in ("top-down", "bottom-up"):
            frontier, _ = first_frontier(degrees, bounds, source, direction,
                                         total_edges=graph.num_arcs)
            for t in range(tasks):
                if frontier.has_work(t):
                    step_smp(slice_for(bundle.tasks[t], frontier), frontier)


def _device_entries(graph: Graph, dask_worker) -> None:
    """Both ways a one-task search's state enters the GPU (``DeviceLevels.enter_reached``
    and ``DeviceLevels.enter``): a search takes the visited bitmap only when its host
    levels reached many vertices before its first GPU level, which the tiny graphs'
    searches never do, and a CUDA kernel's first launch in a process compiles it."""
    from taskbfs.kernels.bitmap import bitmap_from_vertices
    from taskbfs.search.device_cache import device_cache

    bundle, _ = _bundle(graph, 1)
    cache = device_cache(dask_worker)
    with cache.lock:
        levels, _ = cache.device_levels(bundle.tasks, graph.num_vertices)
        source = np.zeros(1, dtype=levels.dtype)
        visited = bitmap_from_vertices(source.astype(np.int64), graph.num_vertices)
        for top_down in (True, False):
            levels.start_search()
            levels.enter_reached(0, top_down, np.zeros((3, 1), dtype=levels.dtype), source)
            levels.start_search()
            levels.enter(0, top_down, visited, source if top_down else visited)


def _result_merges() -> None:
    """The host's writes of CPU steps' pairs over a GPU search's result
    (:func:`~taskbfs.search.device_cache.result_to_host`), for the vertex ids a CPU step or a
    block of compiled levels gives (int32 or int64) into int32 results: a search reaches
    them only when its levels leave the GPU for the host, which the tiny graphs' searches
    do or not by the seconds a move took."""
    from taskbfs.kernels.merge import record_pairs, record_pairs_at

    results = [np.full(2, -1, dtype=np.int32) for _ in range(2)]
    for dtype in (np.int32, np.int64):
        pairs = np.zeros(1, dtype=dtype)
        record_pairs(pairs, pairs, 0, 1, 0, 2, 1, *results)
        record_pairs_at(pairs, pairs, pairs, 0, 2, *results)


def _compiled_levels(on: bool, gpu: bool = False):
    """Leave the small-level paths as they are, or, in this process while the context
    lasts, turn the compiled small levels (and on a GPU worker, ``gpu``, the one-launch
    small levels) off: so that the tiny graphs' levels run as the steps and kernels of a
    big graph's do (a kernel a search reaches only past a size compiles in that search)."""
    stack = contextlib.ExitStack()
    if not on:
        stack.enter_context(_paths_off)
        stack.enter_context(mock.patch.object(compiled_levels, "COMPILED_LEVEL_EDGES", 0))
        if gpu:
            from taskbfs.kernels.gpu_levels import DeviceLevels

            stack.enter_context(mock.patch.object(DeviceLevels, "small_level_arcs", 0))
    return stack


def warm_up(dask_worker=None) -> float:
    """Run the search body on tiny graphs here (see the module docstring); returns the
    seconds it took. Never raises: a failure is logged and the searches go on."""
    start = time.perf_counter()
    on_gpu = bool(dask_worker is not None and dask_worker.state.total_resources.get("GPU"))
    # numba's CUDA simulator runs kernels as Python: nothing to load, and slow to run
    on_gpu = on_gpu and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1"
    runs = [(SMP, Policy("cpu"))] + ([(CUDA, Policy("gpu")), (CUDA, Policy("hybrid", lam=2))]
                                     if on_gpu else [])
    try:
        for graph in _graphs():  # the check every search makes first (in the caller's process:
            graph.validate()     # the embedded runtime's workers share it)
        for compiled in (True, False):  # without: the level loop's small steps
            with _compiled_levels(compiled, on_gpu):
                for graph in _graphs():
                    for device, policy in runs:
                        for tasks in (1, 3):
                            for direction in ("auto", "top-down", "bottom-up"):
                                _search(graph, tasks, direction, device, policy)
        if on_gpu:
            for graph in _graphs():
                _device_entries(graph, dask_worker)
        _result_merges()
        for graph in _graphs():
            for tasks in (1, 3):
                _steps(graph, tasks)
                _owner_levels(graph, tasks)
    except Exception:  # the warm-up must never stop a search
        logger.exception("taskbfs: warming up the search code failed; searches go on")
    return time.perf_counter() - start
