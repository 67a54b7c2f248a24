"""The task-based level-synchronous BFS (the paper's Algorithm 2) on the runtime.

Returns
    :class:`~taskbfs.search.result.BFSResult`.
Approach
    A level is T step tasks, one per vertex range with work to do (top-down: a non-empty
    frontier; bottom-up: unvisited vertices), each placed on a CPU or GPU by the policy
    from its size, then a barrier that folds their discoveries into the visited set and
    yields the next frontier (one per worker owning ranges, when dispatched). Whether those tasks are dispatched through the
    Dask scheduler or included in one task on the worker that holds their data is the
    runtime's choice (:meth:`~taskbfs.runtime.Runtime.include_site`), made once per
    search: when one worker holds every slice and can run every device the policy may
    ask for, the whole search is one task there (:mod:`taskbfs.search.included`); else
    each level goes to the scheduler as one batch of T' <= T steps and one barrier per
    worker owning ranges, which keeps their state and writes their parents and
    distances (:mod:`taskbfs.search.owners`); the client sums the barriers' counts and
    submits the next level. Partitions are placed once per graph and reused.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from taskbfs import config
from taskbfs.errors import (
    InsufficientMemoryError,
    InvalidParameterError,
    WorkerLostError,
)
from taskbfs.graph import Graph, as_graph
from taskbfs.graph._csr import check_memory
from taskbfs.kernels.assembly import result_dtype
from taskbfs.placed.graph import DistributedGraph
from taskbfs.placed.placement import (
    is_placed,
    place_graph,
    tasks_for_slots,
)
from taskbfs.runtime import Policy, Program
from taskbfs.runtime.choice import resolve_runtime
from taskbfs.runtime.task import CPU_RESOURCE, GPU_RESOURCE
from taskbfs.search.device_cache import upload_to_gpus
from taskbfs.search.faults import (
    Deadline,
    Heard,
    faults,
    recover,
    tell_attempts,
    wait_for_a_worker,
)
from taskbfs.search.options import (
    Options,
    as_given,
    check_choice,
    check_depth_limit,
    check_flag,
    check_lam,
    check_progress,
    check_retries,
    check_share,
    check_tasks,
    check_timeout,
    reversed_graph,
)
from taskbfs.search.owners import KeptLevels
from taskbfs.search.result import BFSResult
from taskbfs.search.runner import Search
from taskbfs.search.sources import check_sources
from taskbfs.search.state import AUTO, BOTTOM_UP, DIRECTIONS, TOP_DOWN

STRATEGIES = ("hybrid", "fixed", "cpu", "gpu")
DISPATCH = ("auto", "tasks")


def bfs(graph: Graph, source, tasks: int | None = None, strategy: str = "hybrid",
        lam: float | None = None, runtime=None, direction: str = AUTO,
        balance: str | None = None, gpu_share: float | None = None,
        progress=None, dispatch: str | None = None,
        timeout: float | None = None, *, depth_limit: int | None = None,
        reverse: bool = False, device_result: bool = False) -> BFSResult:
    """Breadth-first search from ``source`` (one vertex or several) as a program of tasks
    on a Dask cluster.

    Parameters
    ----------
    graph : Graph, scipy.sparse matrix or networkx graph
        A scipy matrix or networkx graph is converted once and kept with the object
        (:func:`taskbfs.graph.as_graph`; a later call reuses it and its placed partitions).
    source : int, label, or a sequence of them
        Start vertex: its id, or its label for a graph whose vertices are labelled
        (string ids, a networkx graph's nodes: ``Graph.labels``; then
        ``result.distance_dict()`` and ``result.parent_dict()`` speak labels too). Several
        (a list, tuple, set or array of ids or labels; duplicates count once): the search
        starts from all of them at level 0, each its own parent at distance 0, and every
        other vertex gets its distance to the nearest (``result.sources``).
    tasks : int, optional
        Number T of vertex-range tasks, any number >= 1 (a task owns at least one vertex,
        so T above the vertex count runs one task per vertex: ``result.num_tasks`` says
        how many ran); default :func:`default_tasks`: one per GPU worker for ``hybrid``
        and ``gpu`` on a cluster with GPUs, else one per CPU slot, at least
        ``taskbfs.tasks`` (4) (a :class:`DistributedGraph`: its ranges).
    strategy : {"hybrid", "fixed", "cpu", "gpu"}
        hybrid: a task goes to the GPU when its frontier exceeds λ (paper Sec. V.A);
        fixed: the first ``gpu_share`` of the tasks always run on the GPU (Sec. V.B);
        cpu / gpu: every task on that device. Without GPU workers, hybrid and fixed run
        everything on the CPU; gpu raises :class:`~taskbfs.errors.DeviceUnavailableError`.
    lam : float, optional
        λ of the hybrid strategy (default ``taskbfs.lambda``).
    runtime : Runtime, distributed.Client, str or None
        Where to run; None uses the embedded default cluster (started once per process).
    direction : {"auto", "top-down", "bottom-up"}
        auto switches between top-down and bottom-up levels by Beamer's rule.
    balance : {"edges", "vertices"}
        How vertex ranges are cut.
    gpu_share : float
        Share of the tasks bound to the GPU by the fixed strategy.
    progress : callable, optional
        Called as ``progress(summary)`` with level summaries as the search goes (the CLI's
        progress display): every level's when levels are dispatched; when the search is
        one task, the latest level's a few times a second,
        and the last.
    dispatch : {"auto", "tasks"}, optional
        Default ``taskbfs.dispatch`` ("auto"). "auto": the runtime includes a level's step tasks and barrier in one task on the
        worker that holds their data when there is one that can run every device the
        policy may ask for (the embedded cluster; then the whole search is one task,
        :mod:`taskbfs.search.included`), and otherwise in one task per worker owning ranges,
        the owners trading pieces worker to worker (:mod:`taskbfs.search.owner_levels`).
        "tasks": every step and barrier is a Dask task of its own (what the
        granularity notebook and the dashboard's per-task view show best; each costs the
        runtime a trip through the scheduler: ``benchmarks/dispatch.py``). The trace has every step either way (``included`` says which).
    timeout : float, optional
        Seconds the call may take once the runtime is there (placing the graph, the
        search, the result and its records), else
        :class:`~taskbfs.errors.SearchTimeoutError` naming the last level heard of;
        default: the setting ``taskbfs.search.timeout`` (None: no bound; see
        ``taskbfs/taskbfs.yaml`` for why).
    depth_limit : int, optional
        Search levels 0 .. ``depth_limit`` only: vertices farther than ``depth_limit``
        hops stay unreached (distance and parent -1). 0: the sources alone. None (the
        default): no limit.
    reverse : bool
        Follow arcs backwards (in-neighbours): the search of the transposed graph, so
        ``distances[v]`` is the hops from ``v`` to the nearest source and ``parents[v]``
        the next vertex on the way. Made once per graph and kept with it (a
        :class:`Graph`'s transpose, as many bytes again; a
        :class:`~taskbfs.DistributedGraph`'s built on the workers). A no-op on undirected
        graphs.
    device_result : bool
        Leave the distances and parents in the GPU memory of the worker that ran the
        search (CuPy arrays, not copied to the host): read them with
        ``result.to_cupy()`` or ``result.to_dask()`` (CuPy chunks); ``result.distances``
        copies them to the host when read. Needs a strategy that uses the GPU, a GPU
        worker and CuPy (else :class:`~taskbfs.errors.DeviceUnavailableError`).

    Raises
    ------
    InvalidGraphError
        The graph's arrays are not a CSR graph (checked once per graph).
    WorkerLostError
        A worker the search needed left the cluster, and the search could not run again
        (``taskbfs.search.retries-on-worker-loss`` attempts more on the workers left: a
        :class:`Graph`'s lost slices placed again from its arrays, a
        :class:`DistributedGraph`'s recomputed by Dask from the tasks that built them;
        a dispatched search resumes from the last level it completed, docs/resume.md,
        a one-task search starts again from level 0); it names the worker and the
        level. ``result.attempts`` says how many attempts a search took,
        ``result.resumed_from`` where the later ones started, ``result.trace["attempt"]``
        which one ran each task.
    SearchTimeoutError
        ``timeout`` passed.
    InvalidParameterError
        A bad value of a parameter (named in the message), e.g. a source that is not a
        vertex of the graph (:class:`~taskbfs.errors.InvalidVertexError`), an empty list of
        sources, a negative ``depth_limit``.

    Returns
    -------
    BFSResult

    Examples
    --------
    >>> import taskbfs as tb
    >>> g = tb.Graph.from_edges([0, 1, 2], [1, 2, 3])
    >>> r = tb.bfs(g, 0, tasks=2)
    >>> r.distances.tolist(), r.parents.tolist()
    ([0, 1, 2, 3], [0, 0, 1, 2])
    >>> tb.bfs(g, [0, 3], tasks=2).distances.tolist()         # two sources
    [0, 1, 1, 0]
    >>> tb.bfs(g, 0, tasks=2, depth_limit=1).distances.tolist()
    [0, 1, -1, -1]
    >>> arcs = tb.Graph.from_edges([0, 1, 2], [1, 2, 3], directed=True)
    >>> tb.bfs(arcs, 2, tasks=2, reverse=True).distances.tolist()  # who reaches 2
    [2, 1, 0, -1]
    """
    called, called_wall = time.perf_counter(), time.time()
    graph = graph if isinstance(graph, DistributedGraph) else as_graph(graph).validate()
    sources = check_sources(graph, source)
    depth_limit = check_depth_limit(depth_limit)
    graph = reversed_graph(graph, check_flag("reverse", reverse))
    device_result = check_flag("device_result", device_result)
    requested = check_tasks(tasks)
    direction = check_choice("direction", direction, DIRECTIONS)
    strategy = check_choice("strategy", strategy, STRATEGIES)
    dispatch = check_choice("dispatch", config.get("dispatch") if dispatch is None else dispatch,
                             DISPATCH)
    share = check_share(config.get("gpu-share") if gpu_share is None else gpu_share)
    balance = config.get("balance") if balance is None else balance
    clock = Deadline(check_timeout(config.get("search.timeout") if timeout is None else timeout))
    policy = Policy(strategy, lam=check_lam(lam))
    if device_result and not policy.uses_gpu:
        raise InvalidParameterError(f"device_result=True needs a strategy that runs on the "
                                    f"GPU (hybrid, fixed or gpu), got strategy {strategy!r}")
    if device_result:  # this process receives the CuPy arrays: it needs CuPy too
        from taskbfs.kernels.gpu import require_cupy

        require_cupy("device_result=True")
    progress = check_progress(progress)
    reaching = time.perf_counter()
    rt = _runtime(runtime if runtime is not None else getattr(graph, "runtime", None))
    # not the search's time: starting the embedded cluster (a process's first call) or
    # connecting to a scheduler given by its address; the clocks of elapsed and of the
    # trace's times leave it out
    reaching = time.perf_counter() - reaching
    called, called_wall = called + reaching, called_wall + reaching
    retries = check_retries(config.get("search.retries-on-worker-loss"))
    lost = []
    kept = KeptLevels(graph.num_vertices, sources)  # what a later attempt resumes from
    search = Options(sources, depth_limit, device_result)
    while True:
        try:
            result = _attempt(rt, graph, search, requested, strategy, policy, direction,
                              dispatch, share, balance, progress, clock, called_wall,
                              attempt=len(lost) + 1, kept=kept)
            break
        except WorkerLostError as exc:
            lost.append(exc)
            why_not = ("" if len(lost) > retries else recover(rt, graph, clock))
            if len(lost) > retries or why_not:
                if len(lost) > 1 or why_not:
                    tell_attempts(exc, lost, why_not)
                raise
    result.attempts, result.lost_workers = len(lost) + 1, [w for e in lost for w in e.workers]
    result.resumed_from = [first for _, _, first in kept.attempts[1:]]
    result.sources, result.source = sources, as_given(source, sources, graph)
    result.reverse, result.depth_limit = bool(reverse), depth_limit
    result.elapsed = time.perf_counter() - called
    return result


def _attempt(rt, graph, search: Options, requested, strategy: str, policy: Policy, direction: str,
             dispatch: str, share: float, balance: str, progress, clock, called_wall: float,
             attempt: int, kept: KeptLevels) -> BFSResult:
    """One attempt of :func:`bfs` on ``rt`` (what the cluster fails turned into taskbfs
    errors by :func:`faults`): from the last level an earlier dispatched attempt
    completed (``kept``; then dispatched again, on the same ranges, and a directed graph
    places its transposed slices: the owners find parents again over in-arcs), else
    from level 0."""
    heard = Heard()
    resuming = kept.level >= 1
    began = called_wall if attempt == 1 else time.time()  # what it loses is lost from then
    with faults(rt, graph, began, clock, heard):
        rt.share_settings(clock.left())
        resources = rt.resources(clock.left())
        if not resources.get("workers", 1):
            resources = wait_for_a_worker(rt, clock)
        # A task owns at least one vertex: more tasks than vertices means one task per vertex.
        num_tasks = (kept.num_tasks if resuming else
                     min(requested or _default_for(resources, strategy, graph),
                         graph.num_vertices))
        if strategy == "fixed":
            policy = replace(policy, gpu_tasks=frozenset(range(round(share * num_tasks))))
        if policy.needs_gpu:
            rt.require_gpu("strategy 'gpu'", resources)
        if search.device_result:
            rt.require_gpu("device_result=True", resources)

        # asked by a dispatched search only (an included one reads the degrees there)
        source_degree = functools.partial(_source_degree, graph, search.sources, clock)
        # asked now, read after the include site's round trip (before, when slices go out)
        free_memory = rt.free_memory_later()
        unplaced = isinstance(graph, Graph) and not is_placed(rt, graph, num_tasks, balance)
        if unplaced:
            _check_memory(rt, graph, unplaced, direction, free_memory(clock.left()))
        placed = place_graph(rt, graph, num_tasks, balance,
                             need_transpose=direction != TOP_DOWN or resuming,
                             timeout=clock.left())
        if policy.uses_gpu and resources.get(GPU_RESOURCE, 0) > 0:
            # a search run as one task reads the whole graph there; dispatched steps, slices
            upload_to_gpus(rt, placed, graph.num_vertices,
                           "graph" if dispatch == "auto" else "slices", clock.left())
        # one worker holding every slice includes the search (the degrees, 8 bytes a
        # vertex, are copied to it once if they were made elsewhere)
        site = (None if dispatch == "tasks" or resuming
                else rt.include_site(placed.slice_futures(), policy, clock.left(), resources))
        if not unplaced:
            _check_memory(rt, graph, unplaced, direction, free_memory(clock.left()))
        program = Program(rt, policy, name="bfs")
        run = Search(program, graph, placed, search, direction, progress, clock, heard,
                      attempt, kept, source_degree)
        try:
            if site is None:
                outcome = run.dispatched(exchanged=dispatch != "tasks")
            else:
                outcome = run.included(site)
            result = run.result(outcome, strategy, called_wall)
            result.labels = getattr(graph, "labels", None)  # a DistributedGraph has none
        finally:
            program.close()
    return result


def _source_degree(graph, sources: np.ndarray, clock: Deadline) -> Callable[[], np.ndarray]:
    """The sources' out-degrees, for the client's level-0 summary of a dispatched search,
    as a call that returns them: a graph on the workers is asked now (a task on the worker
    holding the source's range; for several, on the one holding the degrees) and answers
    when called (within the call's timeout), so that the round trip runs beside the
    search's next ones (finding its owners)."""
    if isinstance(graph, DistributedGraph):
        if sources.size == 1:
            future = graph.degree_future(int(sources[0]))
        else:
            future = graph.runtime.client.submit(np.take, graph.degrees_future(), sources)
        return lambda: np.asarray(future.result(timeout=clock.left()),
                                  dtype=np.int64).reshape(-1)
    return lambda: graph.indptr[sources + 1] - graph.indptr[sources]


#: Bytes per vertex a search holds on the workers beside its graph: the steps' discoveries
#: (vertex, parent) and the assembled distances and parents, 4 bytes each below 2^31
#: vertices, with the visited and frontier bitmaps.
SEARCH_BYTES_PER_VERTEX = 17


def _check_memory(rt, graph, unplaced: bool, direction: str, free: int | None) -> None:
    """Refuse a search whose graph slices (``unplaced``: they go to the workers first) and
    state exceed what the workers have free (``free``, :meth:`Runtime.free_memory`), or
    whose result exceeds what this machine has free (:class:`InsufficientMemoryError`,
    saying how much is needed and free)."""
    n = graph.num_vertices
    state = SEARCH_BYTES_PER_VERTEX * n
    slices = 0
    if unplaced:
        slices = graph.indptr.nbytes + graph.indices.nbytes
        if graph.directed and direction != TOP_DOWN:
            slices *= 2  # the transposed slices too
    if free is not None and slices + state > free:
        raise InsufficientMemoryError(
            f"this search needs {(slices + state) / 2**20:,.0f} MiB on the workers (graph "
            f"slices {slices / 2**20:,.0f} MiB, search state {state / 2**20:,.0f} MiB) but "
            f"they have {free / 2**20:,.0f} MiB free (their memory limits less their use)",
            slices + state, free)
    if not rt.in_process and isinstance(graph, Graph):  # a DistributedGraph keeps its result there
        check_memory(2 * result_dtype(n).itemsize * n, "the search's result (distances and "
                     "parents) on this machine")


def default_tasks(runtime=None, strategy: str = "hybrid") -> int:
    """T when ``bfs`` is not given ``tasks``.

    With GPU workers and a strategy that sends big levels to them (``hybrid``, ``gpu``):
    ``taskbfs.tasks-per-gpu`` per GPU worker. Otherwise (``cpu``, ``fixed``, or no
    GPU): one task per CPU slot (worker thread) of the cluster, at least
    ``taskbfs.tasks`` (4): a level's tasks run on the worker's threads and cost
    microseconds each, and a few more tasks than threads balance the load (2 cores: 4
    tasks; 16 cores: 16). See those settings for the measurements behind them. A graph
    of fewer vertices runs one task per vertex (``result.num_tasks``).

    Parameters
    ----------
    runtime : Runtime, distributed.Client, str or None
        As for :func:`bfs` (None: the embedded default cluster).
    strategy : {"hybrid", "fixed", "cpu", "gpu"}
    """
    strategy = check_choice("strategy", strategy, STRATEGIES)
    return _default_for(_runtime(runtime).resources(), strategy)


def _default_for(resources: dict, strategy: str, graph=None) -> int:
    gpus = int(resources.get(GPU_RESOURCE, 0))
    if gpus and strategy in ("hybrid", "gpu"):
        return max(1, gpus * config.get("tasks-per-gpu"))
    if isinstance(graph, DistributedGraph):
        # its own ranges (one per CPU slot, or more where it was built in passes): another
        # T would cut copies of its rows on the workers
        return graph.ranges.num_tasks
    return tasks_for_slots(int(resources.get(CPU_RESOURCE, 0)))


def _runtime(runtime):
    """The Runtime a call uses (:func:`~taskbfs.runtime.choice.resolve_runtime`), with the
    live page installed: the page is the BFS's, not the runtime's."""
    from taskbfs.dashboard import install

    return install(resolve_runtime(runtime))


__all__ = ["STRATEGIES", "bfs", "default_tasks", "TOP_DOWN", "BOTTOM_UP", "AUTO"]
