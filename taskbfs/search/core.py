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

import contextlib
import functools
import time
import warnings
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from distributed import wait as distributed_wait
from distributed.comm import CommClosedError
from distributed.scheduler import KilledWorker

from taskbfs import config
from taskbfs.errors import (
    DeviceUnavailableError,
    InsufficientMemoryError,
    InvalidParameterError,
    SearchTimeoutError,
    TaskBFSError,
    WorkerLostError,
)
from taskbfs.graph import Graph, as_graph
from taskbfs.graph._graph import check_memory
from taskbfs.kernels.assembly import result_dtype
from taskbfs.live_runs import send_finished
from taskbfs.placed.graph import DistributedGraph
from taskbfs.placed.kept import KeptResult
from taskbfs.placed.placement import (
    forget_graph,
    forget_lost,
    is_placed,
    place_graph,
    tasks_for_slots,
)
from taskbfs.runtime import CUDA, SMP, ExchangeAborted, Policy, Program
from taskbfs.runtime.choice import resolve_runtime
from taskbfs.runtime.plugin import (
    CPU_RESOURCE,
    GPU_RESOURCE,
    cluster_resources,
    fetch_trace_later,
)
from taskbfs.search.compiled_levels import LEVELS_NAME, outside_blocks, summary_columns
from taskbfs.search.device_cache import upload_to_gpus
from taskbfs.search.included import (
    BARRIER_NAME,
    RESULT_NAME,
    SEARCH,
    SEARCH_ON_GPU,
    kept_of_search,
    outcome_summaries,
)
from taskbfs.search.owner_levels import exchanged_search
from taskbfs.search.owners import KeptLevels, owned_search
from taskbfs.search.result import BFSResult
from taskbfs.search.sources import check_sources, several_sources
from taskbfs.search.state import (
    AUTO,
    BOTTOM_UP,
    DIRECTIONS,
    TOP_DOWN,
    LevelSummary,
    first_summary,
    step_sizes,
    summaries_of,
    switch_parameters,
)
from taskbfs.search.steps import STEP

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
    depth_limit = _check_depth_limit(depth_limit)
    graph = _reversed(graph, _check_flag("reverse", reverse))
    device_result = _check_flag("device_result", device_result)
    requested = _check_tasks(tasks)
    direction = _check_choice("direction", direction, DIRECTIONS)
    strategy = _check_choice("strategy", strategy, STRATEGIES)
    dispatch = _check_choice("dispatch", config.get("dispatch") if dispatch is None else dispatch,
                             DISPATCH)
    share = _check_share(config.get("gpu-share") if gpu_share is None else gpu_share)
    balance = config.get("balance") if balance is None else balance
    clock = _Deadline(_check_timeout(config.get("search.timeout") if timeout is None else timeout))
    policy = Policy(strategy, lam=_check_lam(lam))
    if device_result and not policy.uses_gpu:
        raise InvalidParameterError(f"device_result=True needs a strategy that runs on the "
                                    f"GPU (hybrid, fixed or gpu), got strategy {strategy!r}")
    if device_result:  # this process receives the CuPy arrays: it needs CuPy too
        from taskbfs.kernels.gpu import require_cupy

        require_cupy("device_result=True")
    progress = _check_progress(progress)
    reaching = time.perf_counter()
    rt = _runtime(runtime if runtime is not None else getattr(graph, "runtime", None))
    # not the search's time: starting the embedded cluster (a process's first call) or
    # connecting to a scheduler given by its address; the clocks of elapsed and of the
    # trace's times leave it out
    reaching = time.perf_counter() - reaching
    called, called_wall = called + reaching, called_wall + reaching
    retries = _check_retries(config.get("search.retries-on-worker-loss"))
    lost = []
    kept = KeptLevels(graph.num_vertices, sources)  # what a later attempt resumes from
    search = _Options(sources, depth_limit, device_result)
    while True:
        try:
            result = _attempt(rt, graph, search, requested, strategy, policy, direction,
                              dispatch, share, balance, progress, clock, called_wall,
                              attempt=len(lost) + 1, kept=kept)
            break
        except WorkerLostError as exc:
            lost.append(exc)
            why_not = ("" if len(lost) > retries else _recover(rt, graph, clock))
            if len(lost) > retries or why_not:
                if len(lost) > 1 or why_not:
                    _tell_attempts(exc, lost, why_not)
                raise
    result.attempts, result.lost_workers = len(lost) + 1, [w for e in lost for w in e.workers]
    result.resumed_from = [first for _, _, first in kept.attempts[1:]]
    result.sources, result.source = sources, _as_given(source, sources, graph)
    result.reverse, result.depth_limit = bool(reverse), depth_limit
    result.elapsed = time.perf_counter() - called
    return result


@dataclass(frozen=True)
class _Options:
    """What a search is asked for besides its graph and how it runs (see :func:`bfs`)."""

    sources: np.ndarray  # int64, distinct, ascending
    depth_limit: int | None = None
    device_result: bool = False


def _as_given(source, sources: np.ndarray, graph):
    """``result.source``: the one source's id as before, else the sources' ids."""
    return int(sources[0]) if not several_sources(graph, source) else sources


def _check_depth_limit(depth_limit) -> int | None:
    """``depth_limit`` if it is None or an integer >= 0 (a bool or a float is refused)."""
    if depth_limit is None:
        return None
    if isinstance(depth_limit, (bool, np.bool_)) or not isinstance(depth_limit, (int, np.integer)):
        raise InvalidParameterError(f"depth_limit must be an integer >= 0 or None, got "
                                    f"{depth_limit!r} ({type(depth_limit).__name__})")
    if depth_limit < 0:
        raise InvalidParameterError(f"depth_limit must be >= 0 (0: the sources alone), got "
                                    f"{depth_limit}")
    return int(depth_limit)


def _check_flag(name: str, value) -> bool:
    """``value`` if it is a bool (a number or a string here is a slip)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _reversed(graph, reverse: bool):
    """The graph a search with ``reverse`` runs on: its transpose when directed (made
    once and kept with the graph), else the graph."""
    if not reverse or not graph.directed:
        return graph
    if isinstance(graph, DistributedGraph):
        return graph.reversed()
    made = graph.__dict__.get("_reversed")
    if made is None:  # kept: the next reversed search reuses it and its placed slices
        made = graph.__dict__["_reversed"] = graph.transpose()
    return made


def _attempt(rt, graph, search: _Options, requested, strategy: str, policy: Policy, direction: str,
             dispatch: str, share: float, balance: str, progress, clock, called_wall: float,
             attempt: int, kept: KeptLevels) -> BFSResult:
    """One attempt of :func:`bfs` on ``rt`` (what the cluster fails turned into taskbfs
    errors by :func:`_faults`): from the last level an earlier dispatched attempt
    completed (``kept``; then dispatched again, on the same ranges, and a directed graph
    places its transposed slices: the owners find parents again over in-arcs), else
    from level 0."""
    heard = _Heard()
    resuming = kept.level >= 1
    began = called_wall if attempt == 1 else time.time()  # what it loses is lost from then
    with _faults(rt, graph, began, clock, heard):
        rt.share_settings(clock.left())
        resources = rt.resources(clock.left())
        if not resources.get("workers", 1):
            resources = _wait_for_a_worker(rt, clock)
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

        source_degree = _source_degree(graph, search.sources, clock)  # its round trip overlaps the next ones
        _check_memory(rt, graph, num_tasks, balance, direction, clock)
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
        program = Program(rt, policy, name="bfs")
        run = _Search(program, graph, placed, search, direction, progress, clock, heard,
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


def _wait_for_a_worker(rt, clock) -> dict:
    """The cluster's resources once a worker is there (waiting up to
    ``runtime.connect-timeout`` seconds, within the call's timeout), else
    :class:`DeviceUnavailableError` saying the cluster has no workers."""
    wait = float(config.get("runtime.connect-timeout"))
    left = clock.left()
    wait = wait if left is None else min(wait, left)
    try:
        rt.client.wait_for_workers(1, timeout=wait)
    except TimeoutError:
        raise DeviceUnavailableError(
            f"the cluster has no workers (none joined within {wait:g} s, "
            f"taskbfs.runtime.connect-timeout): start some, e.g. "
            f"dask worker {rt.client.scheduler.address}") from None
    return cluster_resources(rt.client, clock.left())


def _source_degree(graph, sources: np.ndarray, clock: _Deadline) -> Callable[[], np.ndarray]:
    """The sources' out-degrees, for the client's level-0 summary of a dispatched search,
    as a call that returns them: a graph on the workers is asked now (a task on the worker
    holding the source's range; for several, on the one holding the degrees) and answers
    when called (within the call's timeout), so that the round trip runs beside the
    call's other ones."""
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


def _check_memory(rt, graph, tasks: int, balance: str, direction: str, clock) -> None:
    """Refuse a search whose graph slices (when not placed yet) and state exceed what the
    workers have free, or whose result exceeds what this machine has free
    (:class:`InsufficientMemoryError`, saying how much is needed and free)."""
    n = graph.num_vertices
    state = SEARCH_BYTES_PER_VERTEX * n
    slices = 0
    if isinstance(graph, Graph) and not is_placed(rt, graph, tasks, balance):
        slices = graph.indptr.nbytes + graph.indices.nbytes
        if graph.directed and direction != TOP_DOWN:
            slices *= 2  # the transposed slices too
    free = rt.free_memory(clock.left())
    if free is not None and slices + state > free:
        raise InsufficientMemoryError(
            f"this search needs {(slices + state) / 2**20:,.0f} MiB on the workers (graph "
            f"slices {slices / 2**20:,.0f} MiB, search state {state / 2**20:,.0f} MiB) but "
            f"they have {free / 2**20:,.0f} MiB free (their memory limits less their use)",
            slices + state, free)
    if not rt.in_process and isinstance(graph, Graph):  # a DistributedGraph keeps its result there
        check_memory(2 * result_dtype(n).itemsize * n, "the search's result (distances and "
                     "parents) on this machine")


def _check_timeout(timeout):
    """``timeout`` if it is None or a finite number of seconds > 0."""
    if timeout is None:
        return None
    # Dask's own waits take seconds as a finite number; infinity means "no bound", i.e. None.
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.number)) \
            or not (float(timeout) > 0 and np.isfinite(timeout)):
        raise InvalidParameterError(f"timeout must be a finite number of seconds > 0 or None "
                                    f"(None: no bound), got {timeout!r}")
    return timeout


def _check_lam(lam):
    """``lam`` if it is None or a number (a bool is refused: ``lam=True`` is a slip)."""
    if isinstance(lam, bool) or not (lam is None or isinstance(lam, (int, float, np.number))):
        raise InvalidParameterError(f"lam (λ) must be a number >= 0 or None, got {lam!r}")
    return lam


def _check_progress(progress):
    """``progress`` if it is None or callable, checked before the search runs."""
    if progress is not None and not callable(progress):
        raise InvalidParameterError(f"progress must be a callable taking a level summary, "
                                    f"or None, got {progress!r}")
    return progress


def _check_retries(retries) -> int:
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
        raise InvalidParameterError(f"taskbfs.search.retries-on-worker-loss must be an integer "
                                    f">= 0, got {retries!r}")
    return int(retries)


def _recover(rt, graph, clock: _Deadline) -> str:
    """Make the cluster ready for another attempt after a lost worker: the embedded
    cluster's workers restarted, at least one worker there (waiting up to
    ``taskbfs.runtime.connect-timeout`` seconds, within the call's ``timeout``). Why the
    search cannot run again, or "" when it can: a :class:`Graph` is placed again from the
    client's arrays; a :class:`DistributedGraph` only when Dask can recompute every slice
    it lost (built by tasks, not scattered); the next attempt waits for that."""
    with contextlib.suppress(Exception):  # a cluster that cannot heal is judged below
        rt.heal()
    if isinstance(graph, DistributedGraph) and any(
            f.status in ("cancelled", "error") for f in graph.slices):
        return "the graph's slices on it cannot be made again (they were not built by tasks)"
    wait = config.get("runtime.connect-timeout")
    left = clock.left()
    wait = wait if left is None else min(wait, left)
    try:
        rt.client.wait_for_workers(1, timeout=wait)
    except (TimeoutError, *_LOST):
        return f"no worker was left to run it (none joined within {wait:g} s)"
    return ""


def _tell_attempts(exc: WorkerLostError, lost: list, why_not: str) -> None:
    """Make ``exc``, the last of the ``lost`` attempts' errors, say in one message what
    each attempt lost, and why the search was not tried again (``why_not``; "": no
    retries were left); its ``workers`` become every attempt's."""
    said = []
    for attempt, e in enumerate(lost, 1):
        where = "before its first level" if e.level is None else f"at level {e.level}"
        who = (f"worker {', '.join(e.workers)} left the cluster" if e.workers else
               "it lost data it needed")
        said.append(f"attempt {attempt} {where}: {who}")
    end = (f"not tried again: {why_not}" if why_not else
           f"taskbfs.search.retries-on-worker-loss = {len(lost) - 1}")
    if len(lost) == 1:
        exc.args = (f"{exc}; {end}",)
        return
    exc.args = (f"the search lost a worker in each of its {len(lost)} attempts "
                f"({'; '.join(said)}); {end}",)
    exc.workers = [w for e in lost for w in e.workers]


class _Deadline:
    """The time left of a call's ``timeout`` (None: unbounded)."""

    def __init__(self, timeout):
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.number)) \
                    or not timeout > 0:
                raise InvalidParameterError(f"timeout must be a number of seconds > 0 or None, "
                                            f"got {timeout!r}")
            timeout = float(timeout)
        self.timeout = timeout
        self._end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        """Seconds left (a small positive number once passed), or None."""
        if self._end is None:
            return None
        return max(self._end - time.monotonic(), 1e-3)


class _Heard:
    """The last level of the search the client heard of (for error messages)."""

    level: int | None = None


#: What distributed raises when a worker (or the scheduler) left with data a search needs.
_LOST = (CancelledError, CommClosedError, KilledWorker)


@contextlib.contextmanager
def _faults(rt, graph: Graph, since: float, clock: _Deadline, heard: _Heard):
    """Turn what distributed raises when the cluster fails a search into taskbfs errors:
    a lost worker into :class:`WorkerLostError` (and the placements it held dropped), a
    passed ``timeout`` into :class:`SearchTimeoutError`."""
    try:
        yield
    except ExchangeAborted as exc:  # a peer's message did not come, or could not be sent
        if not exc.workers:
            raise
        lost = [w for w in _workers_lost_since(rt, since) if w in exc.workers]
        if lost:  # it left the cluster: a lost worker, as below
            raise _lost(rt, graph, heard, lost, exc) from None
        where = "before its first level" if heard.level is None else f"at level {heard.level}"
        raise SearchTimeoutError(
            f"the search did not finish: it was {where}, and worker {', '.join(exc.workers)} "
            f"did not answer the other owners within the exchange's timeout "
            f"({exc.timeout:g} s; it may be frozen or overloaded)",
            heard.level) from None
    except TaskBFSError:
        raise
    except TimeoutError as exc:
        where = "before its first level" if heard.level is None else f"at level {heard.level}"
        within = (f"within its timeout of {clock.timeout:g} s" if clock.timeout is not None else
                  f"because the cluster did not answer in time ({exc or type(exc).__name__})")
        raise SearchTimeoutError(
            f"the search did not finish {within}: it was {where} (a worker or the scheduler "
            f"may be frozen or overloaded)", heard.level
        ) from None
    except _LOST as exc:
        raise _lost(rt, graph, heard, _workers_lost_since(rt, since), exc) from None


def _lost(rt, graph, heard: _Heard, workers: list[str], exc: Exception) -> WorkerLostError:
    """The :class:`WorkerLostError` of a search that lost ``workers`` (empty: it cannot
    say which; ``exc`` is what distributed raised), the placements they held dropped."""
    forget_lost(rt)
    forget_graph(rt, graph)
    where = "before its first level" if heard.level is None else f"at level {heard.level}"
    who = (f"worker {', '.join(workers)} left the cluster" if workers else
           f"the cluster lost data the search needed ({type(exc).__name__}: {exc})")
    return WorkerLostError(f"the search failed {where}: {who}; the graph's data on it is "
                           f"placed again by the next search", workers, heard.level)


#: Seconds a failed search waits for the scheduler to log the worker it lost (the
#: search may hear of the loss, through a failed transfer, before the scheduler does).
LOST_WORKER_WAIT = 5.0


def _workers_lost_since(rt, since: float) -> list[str]:
    """Addresses of the workers the scheduler removed since ``since`` (``time.time()``),
    from its event log; empty when it cannot say. No slack before ``since``: a worker
    removed just before the call (an earlier search's loss) is not this search's."""
    give_up = time.monotonic() + LOST_WORKER_WAIT
    while True:
        try:
            events = rt.client.sync(rt.client.scheduler.events, topic="all",
                                    callback_timeout=config.get("runtime.connect-timeout"))
        except Exception:  # the scheduler itself may be gone
            return []
        lost = sorted({msg["worker"] for stamp, msg in events
                       if isinstance(msg, dict) and msg.get("action") == "remove-worker"
                       and stamp >= since})
        if lost or time.monotonic() > give_up:
            return lost
        time.sleep(0.1)


@dataclass
class _Outcome:
    """What either way of running a search leaves the client with."""

    distances: np.ndarray
    parents: np.ndarray
    summaries: list
    seconds: float  # from the first submission to the result in the client's hands
    assembly_d2h_bytes: int = 0
    kept: KeptResult | None = None  # the result left on the workers (distances None)
    exchange: pd.DataFrame | None = None  # bytes moved per level by the dispatched loop


class _Search:
    """One search's submissions, and its result (see :func:`bfs`)."""

    def __init__(self, program: Program, graph: Graph, placed, search: _Options, direction: str,
                 progress, clock: _Deadline, heard: _Heard, attempt: int, kept: KeptLevels,
                 source_degree: Callable[[], np.ndarray]):
        self.program = program
        self.source_degree = source_degree
        self.attempt = attempt
        self.kept = kept  # the levels earlier attempts completed (see bfs)
        self.clock = clock
        self.heard = heard
        self.graph = graph
        self.placed = placed
        self.parts = placed.parts
        self.sources = search.sources
        self.depth_limit = search.depth_limit
        self.device_result = search.device_result
        self.direction = direction
        self.progress = progress
        self.slices = _slice_names(program, placed, placed.parts.num_tasks)
        program.put_future("degrees", placed.degrees)
        # α and β as configured now, sent to the worker too: both sides decide alike
        alpha, beta = switch_parameters(None, None)
        self.init = {"bounds": self.parts.bounds, "sources": search.sources,
                     "direction_mode": direction, "total_edges": placed.num_arcs, "alpha": alpha,
                     "beta": beta, "depth_limit": search.depth_limit,
                     "device_result": search.device_result}
        self.tags = {"vertices": graph.num_vertices, "directed": bool(graph.directed),
                     "arcs": placed.num_arcs}
        # a graph kept on the workers keeps its results there too (gathered when read),
        # and a result asked for on the GPU stays there
        self.keep = isinstance(graph, DistributedGraph) or search.device_result
        # a one-task search's result asked for on a GPU of this process: the call's value
        # is the worker's own arrays, no copy
        self.here_on_device = (search.device_result and program.runtime.in_process
                               and not isinstance(graph, DistributedGraph))

    def included(self, device: str) -> _Outcome:
        """The whole search as one task on the worker that holds every slice
        (:mod:`taskbfs.search.included`), on ``device``."""
        program = self.program
        start = time.perf_counter()
        task = SEARCH_ON_GPU if device == CUDA else SEARCH
        # every slice as one input: 2 inputs whatever T (see PlacedGraph.bundle)
        program.put_future("slices", self.placed.bundle(program.client))
        kwargs = {"init": self.init, "policy": program.policy}
        tags = {**self.tags, "level": 0, "search": True}
        if self.progress is None and (not self.keep or self.here_on_device):  # its value goes to this caller only
            value = functools.partial(program.call, task, ins=["slices", "degrees"],
                                      kwargs=kwargs, tags=tags)
        else:
            program.submit(task, ins=["slices", "degrees"], outs=["search"], kwargs=kwargs,
                           tags=tags)
            while self.progress is not None and not self.report(
                    _next_summaries(program, "search", self.clock)):
                pass
            if self.keep:
                future = program.future("search")
                summaries, d2h = outcome_summaries(program.client, future, self.clock.left())
                kept = kept_of_search(program.client, future, self.parts.bounds)
                if self.device_result:  # CuPy arrays already when made on a GPU worker
                    kept = kept.to_device()
                return _Outcome(None, None, summaries, time.perf_counter() - start, d2h, kept)
            value = functools.partial(program.get, "search")
        try:
            outcome = value(timeout=self.clock.left())
        except (TimeoutError, *_LOST):
            self._hear_latest()
            raise
        seconds = time.perf_counter() - start
        if self.here_on_device:
            kept = KeptResult.in_this_process(program.client, (outcome.distances, outcome.parents),
                                              self.parts.bounds)
            return _Outcome(None, None, outcome.summaries, seconds, kept=kept)
        return _Outcome(outcome.distances, outcome.parents, outcome.summaries, seconds,
                        outcome.assembly_d2h_bytes)

    def dispatched(self, exchanged: bool = False) -> _Outcome:
        """Every level as T' step tasks and one barrier per owner worker through the
        scheduler (:mod:`taskbfs.search.owners`), or with ``exchanged`` as one task per owner
        worker that runs them all and trades pieces with the others
        (:mod:`taskbfs.search.owner_levels`); the result gathered from the owners, or left
        there for a graph kept on the workers."""
        start = time.perf_counter()
        first = first_summary(self.parts.bounds, self.sources, self.source_degree(),
                              self.placed.num_arcs, self.direction, self.init["alpha"],
                              self.init["beta"], self.depth_limit)
        if self.kept.level >= 1:  # a resumed search reported its first levels already
            self.heard.level = self.kept.level
        search = exchanged_search if exchanged else owned_search
        summaries, result, exchange = search(
            self.program, self.placed, self.slices, self.sources, first, self.direction,
            self.init["alpha"], self.init["beta"], self.depth_limit, self, self.tags,
            self.keep, self.kept)
        seconds = time.perf_counter() - start
        if self.keep:
            kept = KeptResult(self.program.client, result, self.parts.bounds)
            if self.device_result:  # each range's result to a GPU worker (a copy each)
                kept = kept.to_device()
            return _Outcome(None, None, summaries, seconds, kept=kept, exchange=exchange)
        return _Outcome(*result, summaries, seconds, exchange=exchange)

    def _check(self, workers=()) -> None:
        """Fail the search when the call's timeout passed or a worker holding the graph's
        ranges (one of ``workers``) left the cluster (a task pinned to it would wait
        forever)."""
        if self.clock.timeout is not None and self.clock.left() <= 1e-3:
            raise TimeoutError("the search's timeout passed")
        if not self.placed.intact():
            raise CancelledError("a worker holding ranges of the graph left the cluster")
        # asked of the scheduler within the timeout: a frozen one must not hold the call
        if workers and set(workers) - set(self.program.client.nthreads(
                callback_timeout=self.clock.left())):
            raise CancelledError("a worker holding ranges of the graph left the cluster")

    def settle(self, futures, workers=()) -> None:
        """Wait until ``futures`` are computed, within the call's timeout (see
        :meth:`_check`)."""
        client = self.program.client
        while True:
            try:
                with client.as_current():  # ``wait`` uses the default client; ours may not be it
                    distributed_wait(futures, timeout=min(self.clock.left() or 1.0, 1.0))
                break
            except TimeoutError:
                pass
            self._check(workers)
        for f in futures:
            if f.status in ("error", "cancelled"):
                f.result()

    def listen(self, watch, workers=()):
        """The program's next message (the error of the task writing a datum of
        ``watch`` raised instead), within the call's timeout (see :meth:`_check`)."""
        while True:
            try:
                return self.program.next_message(watch=watch,
                                                 timeout=min(self.clock.left() or 1.0, 1.0))
            except TimeoutError:
                pass
            self._check(workers)

    def gather(self, names):
        """The values of the data ``names``, within the call's timeout."""
        return self.program.gather(names, self.clock.left())

    def report(self, summaries) -> bool:
        """Hand ``summaries`` to ``progress``; whether the last one ends the search."""
        for summary in summaries:
            if self.progress is not None:
                self.progress(summary)
        self.heard.level = summaries[-1].level
        return summaries[-1].frontier_size == 0

    def _attempts_that_ran(self, program_id: str) -> list[tuple[int, str, int]]:
        """``(attempt, program id, first level)`` of the attempts whose levels this
        result is made of: this one's alone unless it resumed an earlier one."""
        ran = self.kept.attempts
        if ran and ran[-1][1] == program_id:
            return ran
        return [(self.attempt, program_id, 0)]

    def _hear_latest(self) -> None:
        """Read the summaries a one-task search sent and no one read (for the level an
        error names; the program's other messages, e.g. a resident call's placement, are
        skipped)."""
        with contextlib.suppress(TimeoutError):
            while True:
                message = self.program.next_message(timeout=0)
                if isinstance(message, dict) and "summaries" in message:
                    self.heard.level = summaries_of(message)[-1].level

    def result(self, outcome: _Outcome, strategy: str, wall_start: float) -> BFSResult:
        """The :class:`BFSResult` of ``outcome``; its tables are built when first read
        (``wall_start``, the call's entry as ``time.time()``, is their clock's zero)."""
        program, parts, summaries = self.program, self.parts, outcome.summaries
        self.heard.level = summaries[-1].level
        # The tasks' records are asked for now and read when a table is first read: the
        # caller does not wait for that round trip, nor for the live page's copy (its
        # steps' records made on the event loop, later).
        pending = program.finished_later()
        client, program_id = program.client, program.id
        ran = self._attempts_that_ran(program_id)
        earlier = [(fetch_trace_later(client, pid), first, stop)
                   for (_, pid, first), (_, _, stop) in zip(ran[:-1], ran[1:], strict=True)]

        def to_page(done) -> None:
            if done.exception() is None:
                records = done.result()[0]
                send_finished(client, program_id, records, summaries,
                              steps=functools.partial(_table_step_columns, records, summaries))

        pending.add_done_callback(to_page)

        def fetched():
            records, placements = _trace_answer(pending)
            for answer, first, stop in earlier:  # the levels that attempt completed
                ran_records, ran_placements = _trace_answer(answer)
                records = [*(r for r in ran_records if first <= r.get("level", -1) < stop),
                           *records]
                placements = [*ran_placements, *placements]
            return records, placements

        def trace():
            table = _with_device_stats(_task_trace(fetched()[0], parts, wall_start, summaries),
                                       summaries)
            # which attempt ran each level (a restart from level 0 ran them all again)
            firsts = np.array([first for _, _, first in ran], dtype=np.int64)
            which = np.searchsorted(firsts, table["level"].to_numpy(np.int64), side="right") - 1
            table["attempt"] = np.array([a for a, _, _ in ran], dtype=np.int64)[which]
            table["resumed_from"] = firsts[which]
            return table

        def levels():
            # through a weak reference: a result that refers to itself through this
            # closure would live (with its arrays, maybe pinned buffers lent by the GPU
            # worker's pool) until the next garbage collection, not until it is dropped
            return _level_table(summaries, mine().trace, wall_start, fetched()[0])

        result = BFSResult(
            source=self.sources,
            distances=outcome.distances,
            parents=outcome.parents,
            trace=trace,
            levels=levels,
            elapsed=outcome.seconds,
            search_seconds=outcome.seconds,
            traversed_edges=_traversed_edges(self.placed.num_arcs, summaries[-1],
                                             self.graph.directed),
            strategy=strategy,
            direction=self.direction,
            num_tasks=parts.num_tasks,
            placements=lambda: fetched()[1],
            assembly_seconds=lambda: _span(fetched()[0], RESULT_NAME),
            assembly_d2h_bytes=outcome.assembly_d2h_bytes,
            kept=outcome.kept,
            bounds=parts.bounds,
        )
        if outcome.exchange is not None:
            result.exchange = outcome.exchange  # docs/distributed.md: bytes per level
        mine = weakref.ref(result)
        return result


#: Seconds reading a result's trace waits for its records (asked for when the search
#: ended; they come in milliseconds unless the scheduler is gone).
TRACE_WAIT_SECONDS = 60.0


def _trace_answer(pending) -> tuple[list, list]:
    """``(records, placements)`` of a finished search, once they arrived."""
    try:
        return pending.result(TRACE_WAIT_SECONDS)
    except FuturesTimeout:
        raise TaskBFSError(f"the search's trace records did not arrive within "
                           f"{TRACE_WAIT_SECONDS:.0f} s (is the scheduler still up?)") from None
    except Exception as exc:
        raise TaskBFSError(f"the search's trace records could not be read: "
                           f"{type(exc).__name__}: {exc}") from None


def _traversed_edges(num_arcs: int, last: LevelSummary, directed: bool) -> int:
    """Graph500's traversed edges, from the search's own counts: the arcs of the reached
    vertices are every arc but those of the vertices left unvisited (the last summary's
    ``unexplored_edges``); an undirected graph stores each edge as two arcs."""
    arcs = int(num_arcs) - int(last.unexplored_edges)
    return arcs if directed else arcs // 2


def _slice_names(program: Program, placed, num_tasks: int) -> list[list[str]]:
    """Per task, the data names of the slices a step reads: its slice, and the transposed
    one when the graph has a distinct one (a directed graph searched bottom-up)."""
    distinct = placed.transposed is not None and placed.transposed is not placed.slices
    names = []
    for t in range(num_tasks):
        program.put_future(f"part/{t}", placed.slices[t])
        names.append([f"part/{t}"])
        if distinct:
            program.put_future(f"tpart/{t}", placed.transposed[t])
            names[t].append(f"tpart/{t}")
    return names


def _next_summaries(program: Program, producer: str, clock: _Deadline) -> list[LevelSummary]:
    """The summaries of the next message a barrier or the search task sent (the task
    that writes ``producer``: its error is raised instead of waiting forever)."""
    return summaries_of(program.next_message(watch=[producer], timeout=clock.left()))


_TRACE_COLUMNS = ["level", "task", "lo", "hi", "direction", "size", "edges_examined", "found",
                  "device", "worker", "thread", "start", "stop", "name", "included"]


def _task_trace(records, parts, wall_start, summaries=()) -> pd.DataFrame:
    rows = [r for r in records
            if r.get("name") == STEP.name and _had_work(r["level"], r["task"], summaries)]
    frames = [_step_frame(rows, summaries)] if rows else []
    frames += _compiled_step_frames(records, summaries)
    frames += _table_step_frames(records, summaries)
    lost = _unrecorded_steps(frames, summaries)
    if lost:
        frames.append(_step_frame(lost, summaries))
    if not frames:
        return pd.DataFrame(columns=_TRACE_COLUMNS)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    tasks = df["task"].to_numpy()
    df["lo"] = parts.bounds[tasks]
    df["hi"] = parts.bounds[tasks + 1]
    df["start"] -= wall_start
    df["stop"] -= wall_start
    return (df[_TRACE_COLUMNS].sort_values(["level", "task"], kind="stable")
            .reset_index(drop=True))


def _step_frame(rows: list[dict], summaries) -> pd.DataFrame:
    """Trace rows of the step tasks (dispatched or included) from their records."""
    df = pd.DataFrame(rows)
    df["size"] = [int(summaries[r["level"]].sizes[r["task"]]) for r in rows]
    df["direction"] = [summaries[r["level"]].direction for r in rows]
    df["edges_examined"], df["found"] = _step_counts(df, summaries)
    # run inside another task (its key in the record) rather than as a task of its own
    df["included"] = df["included"].notna() if "included" in df else False
    return df


def _compiled_step_frames(records, summaries) -> list[pd.DataFrame]:
    """Trace rows of the steps that compiled level blocks ran
    (:mod:`taskbfs.search.compiled_levels`), one frame per block, from its step array: each
    with the record of the included task that ran the block (worker, thread) and the
    span of its level's steps (``LevelBlock.level_times``)."""
    blocks = getattr(summaries, "blocks", ())
    if not blocks:
        return []
    ran_by = {r["level"]: r for r in records if r.get("name") == LEVELS_NAME}
    frames = []
    for block in blocks:
        record = ran_by.get(block.first, {})
        steps = block.step_stats
        frames.append(pd.DataFrame({
            "level": steps[:, 0], "task": steps[:, 1],
            "size": step_sizes(TOP_DOWN, steps[:, 2], steps[:, 3], block.rule, steps[:, 1]),
            "edges_examined": steps[:, 3], "found": steps[:, 4], "direction": TOP_DOWN,
            "name": STEP.name, "device": record.get("device", "smp"),
            "worker": record.get("worker"), "thread": record.get("thread"),
            # each level's own span, from the block's cycle counts
            "start": block.level_times[steps[:, 0] - block.first, 0],
            "stop": block.level_times[steps[:, 0] - block.first, 1],
            "included": record.get("included", True) is not None}))
    return frames


def _table_step_frames(records, summaries) -> list[pd.DataFrame]:
    """Trace rows of the steps kept as step tables (one array per level: the levels on a
    worker's threads, :class:`~taskbfs.search.level_tasks.LevelTasks`, and the GPU batches of
    :class:`~taskbfs.search.device_levels.GpuLevels`), in one frame: the worker that of the
    search task that ran them."""
    tables = [(level, t) for level, t in getattr(summaries, "step_tables", ()) if len(t)]
    if not tables:
        return []
    search = next((r for r in records if r.get("search")), {})
    levels = np.concatenate([np.full(len(t), level, dtype=np.int64) for level, t in tables])
    table = np.concatenate([t for _, t in tables])
    tasks = table[:, 0]
    df = pd.DataFrame({"level": levels, "task": tasks, "thread": table[:, 1],
                       "start": table[:, 2] / 1e9, "stop": table[:, 3] / 1e9,
                       "name": STEP.name, "device": np.where(table[:, 4] > 0, CUDA, SMP),
                       "worker": search.get("worker"), "included": True})
    df["size"] = np.concatenate([summaries[level].sizes[t[:, 0]] for level, t in tables])
    df["direction"] = np.concatenate([np.full(len(t), summaries[level].direction, dtype=object)
                                      for level, t in tables])
    df["edges_examined"], df["found"] = _step_counts(df, summaries)
    return [df]


def _table_step_columns(records, summaries) -> dict:
    """The steps of the step tables as record columns (as
    :func:`~taskbfs.live_runs.record_columns` makes them, for the live page's timeline),
    made on the client's event loop after the call returned, with no object per step."""
    tables = [(level, t) for level, t in getattr(summaries, "step_tables", ()) if len(t)]
    search = next((r for r in records if r.get("search")), {})
    parent = str(search.get("key", ""))
    table = (np.concatenate([t for _, t in tables]) if tables
             else np.zeros((0, 5), dtype=np.int64))
    levels = (np.concatenate([np.full(len(t), level, dtype=np.int64) for level, t in tables])
              if tables else np.zeros(0, dtype=np.int64))
    n = len(table)
    return {"key": [f"{parent}/{STEP.name}"] * n, "name": [STEP.name] * n,
            "device": np.where(table[:, 4] > 0, CUDA, SMP).tolist(),
            "worker": [str(search.get("worker") or "")] * n, "thread": table[:, 1].tolist(),
            "start": (table[:, 2] / 1e9).tolist(), "stop": (table[:, 3] / 1e9).tolist(),
            "level": levels.tolist(), "task": table[:, 0].tolist(), "included": [parent] * n}


def _unrecorded_steps(frames: list[pd.DataFrame], summaries) -> list[dict]:
    """Records for the steps that had work but left none (the worker that ran them left
    the cluster before the search collected its records, and Dask ran them again or
    not at all): worker, thread, start and stop unknown. Warns when there are any.
    Compiled blocks always report their steps, so only the other levels are looked at."""
    have = {pair for f in frames for pair in zip(f["level"].tolist(), f["task"].tolist(),
                                                  strict=True)}
    missing = [{"name": STEP.name, "level": level, "task": t, "device": None, "worker": None,
                "thread": None, "start": np.nan, "stop": np.nan, "included": None}
               for level in _loop_levels(summaries)
               for t in np.flatnonzero(summaries[level].frontier_counts).tolist()
               if (level, t) not in have]
    if missing:
        warnings.warn(f"the trace has no record of {len(missing)} of {len(have) + len(missing)} "
                      f"steps (their worker left the cluster): their rows have no worker, "
                      f"thread, start or stop", RuntimeWarning, stacklevel=5)
    return missing


def _loop_levels(summaries) -> list[int]:
    """The levels with steps (all but the last) that no compiled block ran."""
    levels, start = [], 0
    for block in sorted(getattr(summaries, "blocks", ()), key=lambda b: b.first):
        levels += range(start, block.first)
        start = max(start, block.last_level)
    return levels + list(range(start, len(summaries) - 1))


def _had_work(level: int, task: int, summaries) -> bool:
    """Whether the step of ``task`` at ``level`` had work: a level before the last summary
    (the one with an empty frontier) and a non-zero count in its level's summary."""
    return level < len(summaries) - 1 and summaries[level].frontier_counts[task] > 0


def _step_counts(df: pd.DataFrame, summaries):
    """Per step row: edges examined and vertices found (before the barrier's
    deduplication), from the summary of the barrier that merged the step (level + 1)."""
    examined = np.zeros(len(df), dtype=np.int64)
    found = np.zeros(len(df), dtype=np.int64)
    tasks = df["task"].to_numpy()
    for level, idx in df.groupby("level").indices.items():
        if int(level) + 1 < len(summaries):
            merged = summaries[int(level) + 1]
            if merged.edges_examined.size:
                examined[idx] = merged.edges_examined[tasks[idx]]
                found[idx] = merged.found[tasks[idx]]
    return examined, found


def _devices_per_level(trace: pd.DataFrame, num_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level: (CPU tasks, GPU tasks) of the trace."""
    levels = trace["level"].to_numpy(dtype=np.int64)
    on_gpu = (trace["device"] == "cuda").to_numpy()
    gpu = np.bincount(levels[on_gpu], minlength=num_levels)[:num_levels]
    cpu = np.bincount(levels, minlength=num_levels)[:num_levels] - gpu
    return cpu, gpu


def _span(records, name: str) -> float:
    """Seconds from the first start to the last stop of the tasks called ``name``."""
    mine = [r for r in records if r.get("name") == name]
    if not mine:
        return 0.0
    return max(r["stop"] for r in mine) - min(r["start"] for r in mine)


def _barrier_places(records, summaries, num_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per level: worker and thread of the barrier that merged that level's steps (for
    levels of a compiled block, of the included task that ran it); None where unknown."""
    workers = np.full(num_levels, None, dtype=object)
    threads = np.full(num_levels, None, dtype=object)
    for r in records:
        if r.get("name") == BARRIER_NAME and 0 <= r.get("level", -1) < num_levels:
            workers[r["level"]], threads[r["level"]] = r["worker"], r["thread"]
    ran_by = {r["level"]: r for r in records if r.get("name") == LEVELS_NAME}
    for block in getattr(summaries, "blocks", ()):
        record = ran_by.get(block.first)
        if record is not None:
            ran = slice(block.first, min(block.last_level, num_levels))
            workers[ran], threads[ran] = record["worker"], record["thread"]
    return workers, threads


def _level_table(summaries, trace: pd.DataFrame, wall_start: float, records=()) -> pd.DataFrame:
    """One row per level that ran: its opening summary's counts and the closing
    barrier's (edges examined, vertices discovered, device traffic, times)."""
    cols = summary_columns(summaries)
    levels = len(summaries) - 1
    cpu, gpu = _devices_per_level(trace, levels)
    workers, threads = _barrier_places(records, summaries, levels)
    opened, closed = slice(0, levels), slice(1, levels + 1)
    return pd.DataFrame({
        "level": np.arange(levels, dtype=np.int64),
        "direction": cols["direction"][opened],
        "frontier_size": cols["frontier_size"][opened],
        "frontier_edges": cols["frontier_edges"][opened],
        "unexplored_edges": cols["unexplored_edges"][opened],
        "edges_examined": cols["edges_examined"][closed],
        "discovered": cols["frontier_size"][closed],
        "tasks": cpu + gpu,
        "tasks_cpu": cpu,
        "tasks_gpu": gpu,
        "start": cols["barrier_stop"][opened] - wall_start,
        "stop": cols["barrier_stop"][closed] - wall_start,
        "barrier_seconds": cols["barrier_stop"][closed] - cols["barrier_start"][closed],
        "barrier_worker": workers,
        "barrier_thread": threads,
        "h2d_bytes": cols["h2d_bytes"][closed],
        "d2h_bytes": cols["d2h_bytes"][closed],
        "kernel_seconds": cols["kernel_ns"][closed] / 1e9,
    })


#: Per-task device columns of the trace (0 for CPU tasks), from LevelSummary.device_stats.
DEVICE_COLUMNS = ("h2d_bytes", "d2h_bytes", "kernel_seconds")


def _device_rows(summary) -> np.ndarray:
    """``summary.device_stats`` as an int64 array of rows (task, h2d, d2h, kernel_ns)."""
    return np.asarray(getattr(summary, "device_stats", ()), dtype=np.int64).reshape(-1, 4)


def _with_device_stats(trace: pd.DataFrame, summaries) -> pd.DataFrame:
    """Add the per-task device columns: the barrier after level L reports the steps of L."""
    for name in DEVICE_COLUMNS:
        trace[name] = 0.0 if name == "kernel_seconds" else 0
    if not len(trace):
        return trace
    stats = [(s.level - 1, *row) for s in outside_blocks(summaries)  # blocks: CPU only
             for row in _device_rows(s).tolist()]
    if not stats:
        return trace
    found = pd.DataFrame(stats, columns=["level", "task", "h2d_bytes", "d2h_bytes", "kernel_ns"])
    merged = trace[["level", "task"]].merge(found, on=["level", "task"], how="left")
    trace["h2d_bytes"] = merged["h2d_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["d2h_bytes"] = merged["d2h_bytes"].fillna(0).astype(np.int64).to_numpy()
    trace["kernel_seconds"] = merged["kernel_ns"].fillna(0).to_numpy() / 1e9
    return trace


def _check_share(gpu_share) -> float:
    try:
        share = float(gpu_share)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"gpu_share must be a number in [0, 1], got {gpu_share!r}") from None
    if not 0.0 <= share <= 1.0:
        raise InvalidParameterError(f"gpu_share must be in [0, 1], got {gpu_share!r}")
    return share


def _check_tasks(tasks) -> int | None:
    """``tasks`` as given (None: the default, resolved once the cluster is known)."""
    if tasks is None:
        return None
    if isinstance(tasks, bool) or not isinstance(tasks, (int, np.integer)):
        raise InvalidParameterError(f"tasks must be an integer, got {tasks!r}")
    if tasks < 1:
        raise InvalidParameterError(f"tasks must be >= 1, got {tasks}")
    if tasks > config.get("max-tasks"):
        raise InvalidParameterError(
            f"tasks = {tasks} is more than a search can use (at most taskbfs.max-tasks = "
            f"{config.get('max-tasks')}: every task costs the runtime a slice and ~1 ms per level; "
            f"a few per core is best)"
        )
    return int(tasks)


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
    strategy = _check_choice("strategy", strategy, STRATEGIES)
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


def _check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise InvalidParameterError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
    return value


def _runtime(runtime):
    """The Runtime a call uses (:func:`~taskbfs.runtime.choice.resolve_runtime`), with the
    live page installed: the page is the BFS's, not the runtime's."""
    from taskbfs.dashboard import install

    return install(resolve_runtime(runtime))


__all__ = ["STRATEGIES", "bfs", "default_tasks", "TOP_DOWN", "BOTTOM_UP", "AUTO"]
