"""An owner's search state: its ranges' results and frontier, made at level 0 or rebuilt to resume, and its result at the end."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from taskbfs.errors import TaskBFSError
from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.bitmap import empty_bitmap, set_bits
from taskbfs.kernels.merge import (
    frontier_bitmap,
    word_span,
)
from taskbfs.kernels.recovery import parents_from_levels
from taskbfs.runtime import Task, on_threads
from taskbfs.runtime.worker import cores_per_thread
from taskbfs.search.included import RESULT_NAME
from taskbfs.search.state import BOTTOM_UP, TOP_DOWN, Frontier, Progress

#: The key of an owner barrier's message (its report) to the client.
REPORT = "owner_report"
#: No vertices (an empty id array), shared.
NO_VERTICES = np.empty(0, np.int64)


@dataclass
class RangeState:
    """What the barrier and the result read of one vertex range ``[lo, hi)``, kept by its
    owner worker (its visited bits are the owner frontier's ``visited[first_word:stop_word]``)."""

    task: int
    lo: int
    hi: int
    first_word: int
    stop_word: int
    #: the slice's out-adjacency offsets (a view, not a copy: the out-degree of v is
    #: ``offsets[v - lo + 1] - offsets[v - lo]``)
    offsets: np.ndarray
    distances: np.ndarray
    parents: np.ndarray


@dataclass
class OwnerState:
    """What one owner worker keeps of a search for its barriers and the result: per range
    its distances and parents, and its slice's out-adjacency offsets (the degrees). Steps
    never read it (they read the :class:`OwnerFrontier`), so a step that runs on another
    worker copies none of it."""

    worker: str
    ranges: list[RangeState]
    num_vertices: int
    #: Per range, the out-arcs of its current frontier (int64; what the report sends).
    edges: np.ndarray
    #: The search's sources (int64, distinct).
    sources: np.ndarray = field(default_factory=lambda: NO_VERTICES)
    nbytes: int = field(init=False)  # the arrays' bytes (their sizes never change)
    #: The bitmap words of the owner's ranges (their spans summed; the report's ``words``).
    words: int = field(init=False)
    owns: frozenset = field(init=False)  # the owner's ranges

    def __post_init__(self):
        # the arrays the search made (the offsets are the slice's)
        self.nbytes = sum(a.nbytes for r in self.ranges for a in (r.distances, r.parents))
        self.words = sum(r.stop_word - r.first_word for r in self.ranges)
        self.owns = frozenset(r.task for r in self.ranges)

    def range(self, task: int) -> RangeState:
        return next(r for r in self.ranges if r.task == task)

    def __sizeof__(self) -> int:  # what Dask counts
        return 64 + self.nbytes


@dataclass
class OwnerFrontier:
    """What the steps of a level read of one owner: its ranges' current frontiers and
    unvisited counts, the visited bits it knows and its frontier as bits. The owner's
    barrier updates it in place with its :class:`OwnerState`."""

    worker: str
    tasks: np.ndarray  # the owner's ranges (int64, ascending: the owner's order)
    frontiers: list[np.ndarray]  # int64 vertices at the current level, per range
    counts: np.ndarray  # per range, its frontier's vertices (int64)
    unvisited: np.ndarray  # per range (int64)
    visited: np.ndarray  # whole-graph bitmap: the owner's ranges' bits (others unknown, 0)
    bits: np.ndarray  # whole-graph bitmap of the owner's frontier
    bounds: np.ndarray  # every range's bounds (T + 1, int64)
    owner_of: np.ndarray  # per range, its owner's number (int64): where a step's pairs go
    search: str = ""  # names the search
    #: ``(level, direction, bitmap, Frontier)``: the one frontier object the level's steps
    #: share (a GPU worker uploads a level's inputs once per frontier object).
    view: tuple | None = field(default=None, repr=False)
    #: ``(level, bitmap)``: the whole frontier a bottom-up level's steps on this worker
    #: assembled from the owners' shares (:func:`frontier_bits`).
    assembled: tuple | None = field(default=None, repr=False)

    @property
    def nbytes(self) -> int:
        return (self.visited.nbytes + self.bits.nbytes + self.bounds.nbytes
                + self.owner_of.nbytes + 8 * int(self.counts.sum()))

    def current(self) -> np.ndarray:
        """The owner's frontier vertices, range after range (int64)."""
        parts = [self.frontiers[i] for i in np.flatnonzero(self.counts).tolist()]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else NO_VERTICES

    def __sizeof__(self) -> int:  # what Dask counts
        return 64 + self.nbytes


def this_worker() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # outside a worker (a direct call)
        return "local"


def init_owner(*slices, sources, num_vertices: int, search: str,
               bounds: np.ndarray | None = None, owner_of: np.ndarray | None = None) -> tuple:
    """``(OwnerFrontier, OwnerState)`` of the ranges of ``slices`` (GraphSlice, this
    worker's), the ``sources`` (ids, distinct) among their vertices visited at distance 0; ``bounds`` and
    ``owner_of`` (every range's owner) are kept for the steps (default: ``slices`` are
    every range, and this owner the only one)."""
    if bounds is None:
        bounds = [*(p.lo for p in slices), slices[-1].hi]
        owner_of = np.zeros(len(slices), dtype=np.int64)
    dtype = result_dtype(num_vertices)
    here = this_worker()
    count = len(slices)
    front = OwnerFrontier(here, np.array([p.task for p in slices], dtype=np.int64),
                          [NO_VERTICES] * count, np.zeros(count, np.int64),
                          np.array([p.hi - p.lo for p in slices], dtype=np.int64),
                          empty_bitmap(num_vertices), empty_bitmap(num_vertices),
                          np.asarray(bounds, dtype=np.int64), np.asarray(owner_of, dtype=np.int64),
                          search)
    edges = np.zeros(count, np.int64)
    ranges = []
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    for i, part in enumerate(slices):
        first, stop = word_span(part.lo, part.hi)
        size = part.hi - part.lo
        rs = RangeState(part.task, part.lo, part.hi, first, stop, part.out_offsets,
                        unreached(size, dtype), unreached(size, dtype))
        mine = sources[(sources >= part.lo) & (sources < part.hi)]
        if mine.size:
            set_bits(front.visited, mine)
            rs.distances[mine - part.lo] = 0
            rs.parents[mine - part.lo] = mine
            front.frontiers[i] = mine
            front.counts[i] = mine.size
            front.unvisited[i] -= mine.size
            edges[i] = int((rs.offsets[mine - part.lo + 1] - rs.offsets[mine - part.lo]).sum())
        ranges.append(rs)
    frontier_bitmap(front.current(), front.bits)
    return front, OwnerState(here, ranges, int(num_vertices), edges, sources)


#: Vertices from which a range's result arrays are filled on several threads (a fresh
#: array's pages are first touched as it is filled, which one thread does slowly).
PARALLEL_FILL_MIN = 1 << 22


def unreached(size: int, dtype) -> np.ndarray:
    """A new array of ``size`` -1s (a range's distances or parents before the search),
    filled on this worker's spare cores when large."""
    array = np.empty(size, dtype)
    threads = min(cores_per_thread(), max(1, size // PARALLEL_FILL_MIN))
    cuts = np.linspace(0, size, threads + 1).astype(np.int64)

    def fill(k):
        array[cuts[k] : cuts[k + 1]] = -1

    on_threads(fill, threads)
    return array


def owner_words(front: OwnerFrontier) -> tuple[str, list]:
    """This owner's share of the frontier bitmap: ``(worker, [(first_word, words)])``."""
    bounds = front.bounds
    spans = [word_span(int(bounds[t]), int(bounds[t + 1])) for t in front.tasks.tolist()]
    return front.worker, [(first, front.bits[first:stop].copy()) for first, stop in spans]


def frontier_bits(front: OwnerFrontier, level: int, shares) -> np.ndarray:
    """The whole frontier bitmap of ``level`` from every owner's :func:`owner_words`
    (``shares``), made once per level on a worker and kept with ``front`` for the other
    steps there (a bottom-up step reads it)."""
    made = front.assembled
    if made is not None and made[0] == level:
        return made[1]
    bits = np.zeros_like(front.visited)
    for _worker, spans in shares:
        for first, words in spans:
            bits[first : first + words.size] |= words
    front.assembled = (level, bits)  # two steps may both make it: alike
    return bits


def as_frontier(front: OwnerFrontier, level: int, direction: str,
                bits: np.ndarray | None) -> Frontier:
    """The :class:`~taskbfs.search.state.Frontier` the shared step code reads, made once per
    level of the owner's arrays (no copies of the visited bits: the owner's barrier writes
    them once the level's steps are done): its visited bits are what the owner knows (its
    own ranges; each owner's barrier filters the rest), its ``progress`` the unvisited
    vertices of the owner's ranges (others 0) and the search's name; no ``tally``: the
    client applies the switch rule (:meth:`OwnedSearch._next_summary`)."""
    whole = None
    if direction == BOTTOM_UP:
        whole = front.bits if bits is None else bits
    view = front.view
    if view is not None and view[:2] == (level, direction) and view[2] is whole:
        return view[3]
    bounds = front.bounds
    counts = np.zeros(bounds.size - 1, dtype=np.int64)
    unvisited = np.zeros(bounds.size - 1, dtype=np.int64)
    if direction == TOP_DOWN:
        counts[front.tasks] = front.counts
    unvisited[front.tasks] = front.unvisited
    offsets = np.zeros(bounds.size, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    vertices = front.current() if direction == TOP_DOWN else NO_VERTICES
    progress = Progress(unvisited, search=front.search)
    frontier = Frontier(level, direction, vertices, offsets, whole, front.visited, bounds,
                        progress)
    front.view = (level, direction, whole, frontier)  # two steps may both make it: alike
    return frontier


def owner_result(state: OwnerState) -> list:
    """``[(task, distances, parents)]`` of every range of the owner (the state's own
    arrays: no barrier writes them once the search has ended)."""
    return [(r.task, r.distances, r.parents) for r in state.ranges]


def range_result(state: OwnerState, vertex_range: int):
    """``(distances, parents)`` of range number ``vertex_range``."""
    rs = state.range(vertex_range)
    return rs.distances, rs.parents


def resume_owner(*args, sources, level: int, num_vertices: int, search: str,
                 bounds: np.ndarray | None = None, owner_of: np.ndarray | None = None) -> tuple:
    """``(OwnerFrontier, OwnerState)`` of the ranges of ``slices`` rebuilt from the
    distances of a search's completed levels (called as ``resume_owner(*slices,
    levels)``: ``levels`` the whole graph's, -1 beyond ``level``): the frontier is the
    vertices at ``level``, and each reached vertex's parent is found again among its
    in-neighbours (``slices`` hold in-arcs: the transposed ones of a directed graph);
    ``bounds`` and ``owner_of`` as for :func:`init_owner`."""
    *slices, levels = args
    front, state = init_owner(*slices, sources=sources, num_vertices=num_vertices, search=search,
                              bounds=bounds, owner_of=owner_of)
    for i, (part, rs) in enumerate(zip(slices, state.ranges, strict=True)):
        mine = levels[part.lo : part.hi]
        rs.distances[:] = mine
        orphans = parents_from_levels(part.indptr, part.indices, part.lo, levels, rs.parents)
        if orphans:  # the client's levels are a BFS's: never, unless they were corrupted
            raise TaskBFSError(f"cannot resume the search: {orphans} vertices of range {part.task} have no in-neighbour "
                               f"one level nearer the source")
        set_bits(front.visited, np.flatnonzero(mine >= 0) + part.lo)
        frontier = np.flatnonzero(mine == level)
        state.edges[i] = int((rs.offsets[frontier + 1] - rs.offsets[frontier]).sum())
        front.frontiers[i], front.counts[i] = frontier + part.lo, frontier.size
        front.unvisited[i] = np.count_nonzero(mine < 0)
    frontier_bitmap(front.current(), front.bits)
    return front, state


INIT = Task("bfs_init", smp=init_owner)


RESUME = Task("bfs_resume", smp=resume_owner)


BITS_SHARE = Task("bfs_bits_share", smp=owner_words)


RESULT = Task(RESULT_NAME, smp=owner_result)


RANGE = Task(RESULT_NAME, smp=range_result)
