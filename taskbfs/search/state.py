"""BFS state and the level barrier, as they live on the workers.

Returns
    :class:`Frontier` (what the step tasks of a level read: the frontier, the visited set
    and the barrier's small bookkeeping; the one datum a barrier updates), the steps'
    :class:`Discoveries`, :class:`LevelSummary` (the few numbers the client needs per
    level) and, at the end, the search's parents and distances (:func:`assemble_all`).
Approach
    The level barrier of the paper's Algorithm 2, plus the direction-optimizing switch
    rule of Beamer et al. (TOTEM paper, Sec. 2.2) decided here from counts the kernels
    return: go bottom-up when the frontier's edges m_f exceed m_u / α (m_u: edges of
    unvisited vertices); back to top-down when the frontier falls below n / β vertices.
    Each task owns the state of its vertex range (DESIGN.md): the barrier only updates
    the visited bitmap and builds the next frontier (see :mod:`taskbfs.kernels.merge` for
    what is left serial and why); in a search run as one task, parents and distances
    are written once per range at the end from the records the steps returned (the
    dispatched loop's owners write them level by level: :mod:`taskbfs.search.owners`).
Encoding
    Frontiers are per-task vertex lists (top-down) or one bitmap (bottom-up), whichever
    the next level's direction reads; see :mod:`taskbfs.kernels.bitmap`.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from dataclasses import dataclass, field, fields, replace

import numpy as np
from numba.typed import List

from taskbfs import config
from taskbfs.kernels.assembly import assemble_share, result_dtype
from taskbfs.kernels.bitmap import bitmap_from_vertices
from taskbfs.kernels.direction import AUTO, BOTTOM_UP, TOP_DOWN, switch_direction
from taskbfs.kernels.level_tasks import SYNC_SIZE
from taskbfs.kernels.merge import bucket_by_owner
from taskbfs.runtime import on_threads, publish, threads_for

DIRECTIONS = (AUTO, TOP_DOWN, BOTTOM_UP)

#: Seconds between the summaries a one-task search sends the live page: a few a second
#: follow the search, one per level would flood the scheduler on a deep graph.
_SUMMARY_INTERVAL = 0.05


@dataclass
class Progress:
    """What a level's steps read of the search besides the frontier (the barrier's
    bookkeeping is :class:`Tally`, apart: the dispatched owners' steps get none)."""

    #: Per task, its vertices not visited yet (a bottom-up step without any has no work).
    unvisited_per_task: np.ndarray
    #: Names the search (unique per search).
    search: str = ""


@dataclass(frozen=True)
class SwitchRule:
    """How a search decides each next level, fixed for the search: the direction
    ``mode``, Beamer's ``alpha`` and ``beta`` over its ``num_vertices``, and
    ``mean_degree`` and ``task_vertices`` (per task, its range's vertices: the units of
    :func:`step_sizes`)."""

    mode: str
    alpha: float
    beta: float
    num_vertices: int
    mean_degree: float
    task_vertices: tuple[int, ...]
    #: The last level searched (``bfs(depth_limit=...)``): the summary of that level ends
    #: the search; None: no limit.
    depth_limit: int | None = None

    @functools.cached_property
    def range_vertices(self) -> np.ndarray:
        """``task_vertices`` as an array (each at least 1)."""
        return np.maximum(np.array(self.task_vertices, dtype=np.int64), 1)

    def summary(self, level: int, direction: str, previous_size: int, unexplored_before: int,
                counts: np.ndarray, task_edges: np.ndarray, unvisited: np.ndarray, *,
                edges_examined: np.ndarray, found: np.ndarray, start: float,
                stop: float | None = None, device_stats=None) -> LevelSummary:
        """After a level's counts are known: the :class:`LevelSummary` of ``level``, the
        one place every runner of the level loop decides the next level (its direction by
        Beamer's rule, the sizes its steps are placed by, and the end: ``frontier_size`` 0).

        Parameters
        ----------
        level : int
            The level the counts open (one more than the level that found them).
        direction, previous_size, unexplored_before
            Of the level that found them: its direction, frontier vertices and the edges
            still unexplored at its start (frontier excluded).
        counts, task_edges, unvisited : ndarray of int64
            Per task: vertices found, the arcs leaving them, vertices still unvisited.
        edges_examined, found, start, stop, device_stats
            What the level measured (``stop`` None: now).

        At ``depth_limit`` the summary's frontier is empty (its vertices are reached, not
        searched from): every runner ends there, as at the end of the graph.
        """
        if self.depth_limit is not None and level >= self.depth_limit:
            counts, task_edges = np.zeros_like(counts), np.zeros_like(task_edges)
        n_new = int(counts.sum())
        frontier_edges = int(task_edges.sum())
        unexplored = int(unexplored_before) - frontier_edges
        nxt = switch_direction(self.mode, direction, n_new, frontier_edges, unexplored,
                               self.num_vertices, self.alpha, self.beta,
                               previous_size=previous_size)
        bottom_up = nxt == BOTTOM_UP and n_new > 0
        sizes = unvisited.copy() if bottom_up else counts
        return LevelSummary(
            level=level, direction=nxt, frontier_counts=sizes,
            step_sizes=step_sizes(nxt, sizes, None if bottom_up else task_edges, self),
            frontier_size=n_new, frontier_edges=frontier_edges, edges_examined=edges_examined,
            unexplored_edges=unexplored, found=found, barrier_start=start,
            barrier_stop=time.time() if stop is None else stop,
            device_stats=np.zeros((0, 4), np.int64) if device_stats is None else device_stats,
            reached=self.num_vertices - int(unvisited.sum()))


@dataclass(frozen=True)
class Tally:
    """A barrier's bookkeeping between levels, on a worker that runs the barriers (a
    search run as one task): the search's :class:`SwitchRule` and, of the level the
    frontier opens, its vertices and the edges still unexplored (frontier excluded)."""

    rule: SwitchRule
    frontier_size: int
    unexplored_edges: int

    def after(self, summary: LevelSummary) -> Tally:
        """The tally of the level ``summary`` opens."""
        return Tally(self.rule, summary.frontier_size, summary.unexplored_edges)


@dataclass
class Frontier:
    """The frontier of one level, as the step tasks read it and the barrier updates it.

    Attributes
    ----------
    level : int
        Distance of the frontier's vertices from the source.
    direction : str
        ``"top-down"`` or ``"bottom-up"``: how the next step runs.
    vertices : ndarray of int
        Frontier grouped by owning task (top-down levels; empty on bottom-up ones).
    offsets : ndarray of int64
        T + 1 offsets into ``vertices``.
    bits : ndarray of uint64 or None
        The frontier as a bitmap (bottom-up levels only).
    visited_bits : ndarray of uint64
        Visited set at the start of the level (read-only for the steps; the barrier
        updates it in place once they are done).
    bounds : ndarray of int64, optional
        The task ranges (T + 1); None means one range (a step run on its own).
    progress : Progress, optional
        What the steps read besides the frontier (None outside a traversal).
    included : list
        See the attribute's comment.
    tally : Tally, optional
        The barrier's bookkeeping (None where the client applies the rule, or outside a
        traversal).
    """

    level: int
    direction: str
    vertices: np.ndarray
    offsets: np.ndarray
    bits: np.ndarray | None
    visited_bits: np.ndarray
    bounds: np.ndarray | None = None
    progress: Progress | None = None
    #: ``(level, Discoveries)`` of the steps run so far by a search run as one task
    #: (:mod:`taskbfs.search.included`): its result assembly reads them here. One list per search, passed on from level to level and
    #: appended to in place (as the visited bitmap is updated in place).
    included: list = field(default_factory=list)
    #: Per task, the edges leaving its frontier vertices (top-down levels; None: not known).
    task_edges: np.ndarray | None = None
    tally: Tally | None = None

    def of_task(self, t: int) -> np.ndarray:
        """Task ``t``'s frontier vertices."""
        return self.vertices[self.offsets[t] : self.offsets[t + 1]]

    def has_work(self, t: int) -> bool:
        """Whether task ``t`` has anything to do at this level: frontier vertices
        (top-down) or unvisited vertices (bottom-up)."""
        if self.direction == BOTTOM_UP:
            unvisited = self.progress is None or self.progress.unvisited_per_task[t] > 0
            return self.bits is not None and bool(unvisited)
        return bool(self.offsets[t + 1] > self.offsets[t])

    def task_bounds(self) -> np.ndarray:
        """``bounds``, or one range over every vertex id of the bitmap when there is none."""
        if self.bounds is not None:
            return self.bounds
        return np.array([0, 64 * self.visited_bits.size], dtype=np.int64)


@dataclass
class LevelSummary:
    """What the client needs to launch the next level; small, gathered every level."""

    level: int
    direction: str
    frontier_counts: np.ndarray  # per task: frontier vertices (td) or unvisited vertices (bu)
    frontier_size: int
    frontier_edges: int
    edges_examined: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Edges of the vertices still unvisited (frontier excluded): at most what a
    #: bottom-up level reads.
    unexplored_edges: int = 0
    found: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    barrier_start: float = 0.0
    barrier_stop: float = 0.0
    #: One row ``(task, h2d_bytes, d2h_bytes, kernel_ns)`` per step task of the level that
    #: reported device work (GPU tasks); all integers, empty on CPU-only levels.
    device_stats: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    #: Per task, 1 where that task runs this level's step on the GPU (a search run as one
    #: task says so for the live page; empty when the scheduler places the steps).
    gpu_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Vertices reached so far, this summary's frontier included.
    reached: int = 0
    #: Per task, the size the placement policy places its next step by (:func:`step_sizes`);
    #: empty means ``frontier_counts``.
    step_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def sizes(self) -> np.ndarray:
        """Per task, the size its step of the level this summary opens is placed by."""
        return self.step_sizes if self.step_sizes.size else self.frontier_counts

    def to_message(self) -> dict:
        """Plain-data form (lists, numbers) for :func:`taskbfs.runtime.publish`."""
        message = {}
        for name in _SUMMARY_FIELDS:
            value = getattr(self, name)
            message[name] = value.tolist() if isinstance(value, np.ndarray) else value
        return message

    @classmethod
    def from_message(cls, message: dict) -> LevelSummary:
        """Inverse of :meth:`to_message`."""
        kwargs = {}
        for f in fields(cls):
            value = message[f.name]
            # msgpack may turn lists into tuples on the way (across processes)
            is_array = isinstance(value, (list, tuple))
            kwargs[f.name] = np.asarray(value, dtype=np.int64) if is_array else value
        return cls(**kwargs)


_SUMMARY_FIELDS = tuple(f.name for f in fields(LevelSummary))


class SummaryPublisher:
    """Sends the level summaries of a search that runs its levels itself to its program's
    client (:func:`publish`) as messages ``{"summaries": [...]}``, for the live page and
    ``progress`` only (the task runs every level itself and returns every summary at the
    end): the latest once :data:`_SUMMARY_INTERVAL` seconds have passed since the search
    began or since the last message, the rest not at all, and the last (an empty
    frontier: the search ended) at once when one went before it or a client waits for it
    (``waited``: ``progress``). So a deep search sends a few messages a second, not one
    per level, and a search shorter than the interval that no one waits on sends none:
    each message costs the event loop that the embedded cluster shares with the search,
    and the page gets every summary of a finished search from its client when it asks
    (:func:`~taskbfs.finished_runs.keep_finished`). No step of such a search is placed
    by the scheduler plugin, so the messages carry no sizes for it (the page reads the
    summary's own counts)."""

    def __init__(self, waited: bool = False):
        self.sent = time.perf_counter()  # the search's start: its first interval
        self.any_sent = False
        self.waited = waited

    def add(self, summary: LevelSummary) -> None:
        now = time.perf_counter()
        due = now - self.sent >= _SUMMARY_INTERVAL
        if summary.frontier_size == 0:
            due = due or self.any_sent or self.waited
        if due:
            publish({"summaries": [summary.to_message()]})
            self.sent, self.any_sent = now, True


def summaries_of(message: dict) -> list[LevelSummary]:
    """The summaries of a :class:`SummaryPublisher` message, in level order."""
    return [LevelSummary.from_message(m) for m in message["summaries"]]


@dataclass
class Discoveries:
    """Output of one step task: its (vertex, parent) pairs and what the step read.

    A top-down step's pairs are candidates (a vertex of any task, maybe several times),
    bucketed by owning task: owner t's are ``[offsets[t], offsets[t + 1])``. A bottom-up
    step's pairs are its own vertices, each once. The pairs stay on the worker until the
    end of the search, when they become parents.
    """

    task: int
    vertices: np.ndarray
    parents: np.ndarray
    edges_examined: int
    #: Device work of a GPU step (0 on the CPU): bytes host→device and device→host this
    #: task moved, and its kernels' device time (CUDA events).
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    kernel_seconds: float = 0.0
    offsets: np.ndarray | None = None
    #: Per pair, its vertex's distance, when the pairs come from many levels (a block of
    #: compiled levels, :mod:`taskbfs.search.compiled_levels`; ``task`` is then -1).
    depths: np.ndarray | None = None


def one_range(bounds) -> bool:
    """Whether one task owns every vertex (``bounds`` of one range, T = 1): the one test
    for the savings that only a sole owner allows. Its step's candidates are one bucket
    (no bucketing copy: :func:`bucketed`, :class:`~taskbfs.search.level_tasks.LevelTasks`);
    on the GPU its discoveries are the next frontier as they are, so a one-task search
    keeps a GPU level whole on the device (:class:`~taskbfs.search.device_levels.GpuLevels`).
    The general path would give the same result at the price of a copy of every
    candidate."""
    return len(bounds) == 2


def bucketed(d: Discoveries, bounds: np.ndarray) -> Discoveries:
    """A top-down step's raw pairs, bucketed by owning task (what an owner's pieces are cut
    from)."""
    if one_range(bounds):  # one bucket, nothing to move
        return replace(d, offsets=np.array([0, d.vertices.size], dtype=np.int64))
    out_v = np.empty_like(d.vertices)
    out_p = np.empty_like(d.parents)
    offsets = np.empty(bounds.size, dtype=np.int64)
    bucket_by_owner(d.vertices, d.parents, bounds, out_v, out_p, offsets)
    return replace(d, vertices=out_v, parents=out_p, offsets=offsets)


def first_summary(bounds, sources, source_degrees, total_edges: int, direction_mode: str,
                  alpha: float | None = None, beta: float | None = None,
                  depth_limit: int | None = None) -> LevelSummary:
    """The level-0 :class:`LevelSummary`: the one place that decides level 0 (its
    direction by Beamer's rule, per task its frontier or unvisited vertices and the size
    its step is placed by), from what the client has at hand: the ``sources`` (one vertex
    or several, distinct: :func:`as_sources`) and their out-degrees. The dispatched loop
    sends it before any task runs; a search run as one task makes its first frontier from
    it (:func:`first_frontier`)."""
    bounds = np.asarray(bounds, dtype=np.int64)
    num_tasks = bounds.size - 1
    counts, task_edges = _per_task(bounds, sources, source_degrees)
    now = time.time()
    # the sources, found by a level -1 with an empty frontier and every edge unexplored
    return search_rule(bounds, total_edges, direction_mode, alpha, beta, depth_limit).summary(
        0, TOP_DOWN, 0, int(total_edges), counts, task_edges,
        np.diff(bounds) - counts, edges_examined=np.zeros(num_tasks, dtype=np.int64),
        found=np.zeros(num_tasks, dtype=np.int64), start=now, stop=now)


def as_sources(sources) -> np.ndarray:
    """``sources`` (a vertex id or several) as the sorted distinct int64 ids every part of
    a search reads (sorted: grouped by owning task, as a frontier is)."""
    return np.unique(np.asarray(sources, dtype=np.int64).reshape(-1))


def _per_task(bounds: np.ndarray, sources, source_degrees) -> tuple[np.ndarray, np.ndarray]:
    """Per task of ``bounds``: how many of ``sources`` it owns and their out-arcs."""
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    degrees = np.broadcast_to(np.asarray(source_degrees, dtype=np.int64), sources.shape)
    owner = np.searchsorted(bounds, sources, side="right") - 1
    num_tasks = bounds.size - 1
    counts = np.bincount(owner, minlength=num_tasks).astype(np.int64)
    edges = np.zeros(num_tasks, dtype=np.int64)
    np.add.at(edges, owner, degrees)
    return counts, edges


def search_rule(bounds, total_edges: int, direction_mode: str, alpha: float | None = None,
                beta: float | None = None, depth_limit: int | None = None) -> SwitchRule:
    """The :class:`SwitchRule` of a search over ``bounds[-1]`` vertices and
    ``total_edges`` arcs (α and β: :func:`switch_parameters`; ``depth_limit``: the last
    level searched, None: every level)."""
    alpha, beta = switch_parameters(alpha, beta)
    n = int(bounds[-1])
    return SwitchRule(direction_mode, float(alpha), float(beta), n, int(total_edges) / max(n, 1),
                      tuple(np.diff(np.asarray(bounds, dtype=np.int64)).tolist()),
                      None if depth_limit is None else int(depth_limit))


def first_frontier(degrees, bounds, sources, direction_mode: str, alpha: float | None = None,
                   beta: float | None = None, total_edges: int | None = None,
                   depth_limit: int | None = None) -> tuple[Frontier, LevelSummary]:
    """``(level-0 frontier, its summary)`` of a search run as one task: the summary is
    :func:`first_summary`'s, the frontier the sources (one vertex or several, distinct) in
    the form its direction reads (``total_edges``: the degrees' sum, when the caller knows
    it; ``depth_limit``: see :class:`SwitchRule`)."""
    n = degrees.size
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    total_edges = int(degrees.sum()) if total_edges is None else int(total_edges)
    src = as_sources(sources)
    counts, task_edges = _per_task(bounds, src, degrees[src])
    summary = first_summary(bounds, src, degrees[src], total_edges, direction_mode, alpha, beta,
                            depth_limit)
    progress = Progress(unvisited_per_task=np.diff(bounds) - counts, search=uuid.uuid4().hex)
    tally = Tally(search_rule(bounds, total_edges, direction_mode, alpha, beta, depth_limit),
                  int(src.size), summary.unexplored_edges)
    visited = bitmap_from_vertices(src, n)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    if summary.direction == BOTTOM_UP:
        frontier = Frontier(0, BOTTOM_UP, src[:0], offsets, visited.copy(), visited, bounds,
                            progress, tally=tally)
    else:
        np.cumsum(counts, out=offsets[1:])
        frontier = Frontier(0, TOP_DOWN, src, offsets, None, visited, bounds, progress,
                            task_edges=task_edges, tally=tally)
    return frontier, summary


def switch_parameters(alpha: float | None, beta: float | None) -> tuple[float, float]:
    """Beamer's α and β: those given, else ``taskbfs.direction.alpha`` / ``taskbfs.direction.beta`` as they
    are now (read at each search, so that a changed setting reaches the next one)."""
    return (config.get("direction.alpha") if alpha is None else alpha,
            config.get("direction.beta") if beta is None else beta)


def step_sizes(direction: str, counts: np.ndarray, task_edges, rule: SwitchRule,
               tasks=None) -> np.ndarray:
    """Per task, the size a step is placed by (the ``size`` the policy compares with λ):
    its work scaled to the whole graph, so that λ means the same at any number of tasks.
    Its work is, on a top-down level, its frontier vertices, or the out-arcs leaving them
    counted in vertices of the graph's mean degree when that is more (a frontier of a few
    hubs is as much work as many average vertices); on a bottom-up level its unvisited
    vertices. Scaled: times the graph's vertices over its range's (one task: its work).

    Parameters
    ----------
    direction : str
    counts : ndarray of int64
        Per task, frontier vertices (top-down) or unvisited vertices (bottom-up).
    task_edges : ndarray of int64 or None
        Per task, the arcs leaving its frontier vertices (top-down).
    rule : SwitchRule
        The search's (its ``mean_degree``, ``num_vertices`` and ``task_vertices``).
    tasks : ndarray of int64, optional
        The task of each entry (steps of several levels); default: entry ``t`` is task ``t``.
    """
    work = np.asarray(counts, dtype=np.int64)
    if direction != BOTTOM_UP and task_edges is not None:
        in_vertices = np.ceil(np.asarray(task_edges) / max(rule.mean_degree, 1e-300))
        work = np.maximum(work, in_vertices.astype(np.int64))
    ranges = rule.range_vertices if tasks is None else rule.range_vertices[tasks]
    return -(-work * rule.num_vertices // ranges)  # ceil(work * n / range), exactly


def host_threads() -> int:
    return os.cpu_count() or 1


def assemble_all(logs, levels, *, sources, bounds, cuts,
                 threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The result over ``[cuts[0], cuts[-1])``, ``(distances, parents)``, from every step's
    output of a search (a search run as one task assembles inside it): on ``threads``
    threads (default one per core), each filling slices of the range and writing chunks
    of the records as it claims them (:mod:`taskbfs.kernels.assembly`), with no Python
    between pieces and nothing serial over the vertices or the tasks.

    ``bounds`` (the task ranges) only give the dtype; ``levels[i]`` is the level log
    ``i``'s step ran at (its discoveries are at ``level + 1``)."""
    first, stop = int(cuts[0]), int(cuts[-1])
    dtype = result_dtype(int(np.asarray(bounds)[-1]))
    distances = np.empty(stop - first, dtype=dtype)
    parents = np.empty(stop - first, dtype=dtype)
    vertices, parents_of, depths = List(), List(), List()
    distance = np.empty(len(logs), dtype=np.int64)
    sizes = np.empty(len(logs), dtype=np.int64)
    no_depths = np.empty(0, dtype=np.int64)
    for i, (d, level) in enumerate(zip(logs, levels, strict=True)):
        vertices.append(np.asarray(d.vertices, dtype=np.int64))
        parents_of.append(np.asarray(d.parents, dtype=np.int64))
        depths.append(no_depths if d.depths is None else np.asarray(d.depths, dtype=np.int64))
        distance[i] = level + 1
        sizes[i] = d.vertices.size
    chunk_start = np.zeros(len(logs) + 1, dtype=np.int64)
    np.cumsum(-(-sizes // _ASSEMBLY_CHUNK), out=chunk_start[1:])
    if not logs:  # typed lists need a first element to know their type
        vertices.append(no_depths), parents_of.append(no_depths), depths.append(no_depths)
    fill = max(1, (stop - first) // _ASSEMBLY_CHUNK)
    pool_size = threads or host_threads()
    sync = np.zeros(SYNC_SIZE, dtype=np.int64)
    pieces = max(fill, int(chunk_start[-1]))  # slices to fill and chunks to write
    threads = threads_for(stop - first + int(sizes.sum()), min(pool_size, pieces))
    on_threads(lambda _k: assemble_share(sync, first, stop, fill, vertices, parents_of, depths,
                                         distance, chunk_start, _ASSEMBLY_CHUNK, distances,
                                         parents),
               threads, pool_size)
    mine = as_sources(sources)
    mine = mine[(mine >= first) & (mine < stop)]
    distances[mine - first] = 0
    parents[mine - first] = mine
    return distances, parents


#: Vertices per slice of the result's fill, and records per chunk, claimed by its threads.
_ASSEMBLY_CHUNK = 1 << 15
