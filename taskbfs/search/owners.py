"""Dispatched levels: every level as step tasks and one barrier per owner worker.

Returns
    :func:`owned_search` → ``(summaries, result, exchange)`` for
    :meth:`taskbfs.search.core._Search.dispatched` (a search whose levels go through the
    Dask scheduler: ``dispatch="tasks"``, or no worker can include the whole search): the
    level summaries the client made, the result (gathered into two arrays for a graph
    the client holds, left on the owners in one piece per vertex range for a
    :class:`~taskbfs.placed.graph.DistributedGraph`), and the bytes each level moved
    between workers.
Approach
    Each worker holding slices of the graph *owns* those vertex ranges (W owners: one on
    the embedded cluster, several when the slices were spread). It keeps two data: an
    :class:`OwnerState` (per range its distances and parents, and its slice's offsets as
    out-degrees: what the barriers and the result read) and an :class:`OwnerFrontier`
    (per range its current frontier and unvisited count, for all its ranges the visited
    bits it knows and its frontier as bits: what the steps read, about n/4 bytes, so that
    a step placed on another worker copies that, not the result arrays). A level is one
    batch of tasks:

    1. per range with work, a step task (placed by the policy, CPU or GPU, as everywhere)
       reading its slice and its owner's frontier (on the owner's worker: no copy); bottom-up
       with several owners also every owner's share of the frontier bits, ORed into the
       whole bitmap once per level on the step's worker. The step splits what it found
       into one :class:`Piece` per owner (top-down candidates go to whoever owns them; bottom-up
       discoveries are the step's own vertices, so only its own owner gets any);
    2. per owner, one barrier task pinned to its worker: it writes the first unvisited
       occurrence of each vertex of its pieces into its frontier and state in place
       (:func:`~taskbfs.kernels.merge.accept_into_range`): visited bit, distance, parent,
       next frontier; then publishes its counts (new frontier vertices, their edges,
       unvisited vertices per range; what the steps examined) to the client as a message
       (no task, no gather). Pieces travel step worker to owner worker;
    3. the client sums the W reports, makes the level's summary as every level does
       (:meth:`~taskbfs.search.state.SwitchRule.summary`: Beamer's rule, the end), keeps
       it for a resume and reports it; the level loop asks for the next level.

    The client side, :class:`OwnedSearch`, is one of the two runners of the one level
    loop (:func:`~taskbfs.search.levels.run_levels`; the other runs a search as one task,
    :class:`~taskbfs.search.included.IncludedLevels`).

    Per level that is T' steps and W barriers (with W > 1, a large top-down level adds a
    getitem per step and owner to split a step's output, where a small one sends every
    owner the step's pieces whole; a bottom-up level adds W tasks that cut each owner's
    share of the frontier bits, and its steps make one piece each, for their owner).
    Parents and distances are written by the owners level by level, so the result is
    ready where it lives when the last level ends.
Encoding
    Bitmaps are uint64 words over global vertex ids (:mod:`taskbfs.kernels.bitmap`); a
    range's words are ``word_span(lo, hi)``, so neighbouring ranges may share a boundary
    word and bits are ORed. What crosses the network per level is in docs/distributed.md.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from taskbfs.errors import TaskBFSError
from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.bitmap import empty_bitmap, ids_of_words, set_bits
from taskbfs.kernels.merge import (
    accept_share,
    accept_spans_into_range,
    frontier_bitmap,
    set_bits_share,
    word_span,
)
from taskbfs.kernels.recovery import parents_from_levels
from taskbfs.runtime import Task, on_threads, publish
from taskbfs.runtime.plugin import CPU_RESOURCE, workers_of, workers_with
from taskbfs.runtime.worker import cores_per_thread
from taskbfs.search.included import BARRIER_NAME, RESULT_NAME
from taskbfs.search.levels import run_levels
from taskbfs.search.state import (
    BOTTOM_UP,
    TOP_DOWN,
    Frontier,
    LevelSummary,
    Progress,
    bucketed,
    search_rule,
)
from taskbfs.search.steps import STEP, step_cuda, step_smp

__all__ = ["KeptLevels", "OwnerFrontier", "OwnerState", "Piece", "ReachedWords", "owned_search"]

#: The key of an owner barrier's message (its report) to the client.
REPORT = "owner_report"
#: Pairs of a range from which its owner accepts them in shares on the host's threads
#: (fewer cost less than starting the threads).
_PARALLEL_ACCEPT_MIN = 1 << 18
#: Bytes of a top-down level's candidate pairs times its owners up to which every owner
#: reads all of a step's pieces: a getitem task per step and owner costs more than the bytes.
_WHOLE_PIECES_BYTES = 1 << 20


# ====================================================================== on the workers
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
    sources: np.ndarray = field(default_factory=lambda: _NO_VERTICES)
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
    search: str = ""  # names the search (a GPU worker chains a sole step's levels by it)
    #: The ranges' distances and parents are on this worker's GPU (a GPU owner of owner
    #: levels, :func:`init_owner`): the state's arrays are empty until the search ends.
    results_on_device: bool = False
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
        """The owner's frontier vertices, range after range (int64); a range whose frontier
        came as bitmap words alone (a GPU step of an owner whose result is on its device)
        has its vertices read off the frontier bits on first use."""
        parts = [self._range_frontier(i) for i in np.flatnonzero(self.counts).tolist()]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else _NO_VERTICES

    def _range_frontier(self, i: int) -> np.ndarray:
        if self.frontiers[i] is None:
            lo, hi = int(self.bounds[self.tasks[i]]), int(self.bounds[self.tasks[i] + 1])
            self.frontiers[i] = vertices_of_bits(self.bits, lo, hi)
        return self.frontiers[i]

    def __sizeof__(self) -> int:  # what Dask counts
        return 64 + self.nbytes


def vertices_of_bits(bits: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The vertices of ``[lo, hi)`` whose bits are set in the whole-graph bitmap ``bits``
    (int64, ascending)."""
    first, stop = word_span(lo, hi)
    found = ids_of_words(bits[first:stop], first)
    return found[(found >= lo) & (found < hi)]


@dataclass
class Piece:
    """What one step sends one owner: its pairs for the owner's ranges, grouped by range
    (``offsets`` over the owner's ranges, in its order), and the step's counts."""

    task: int
    worker: str  # where the step ran
    vertices: np.ndarray
    parents: np.ndarray
    offsets: np.ndarray
    edges_examined: int
    found: int
    device: tuple  # (h2d_bytes, d2h_bytes, kernel_ns)
    inbound: int  # bytes of the owner's frontier (and bitmap) the step read from another worker
    #: A bottom-up GPU step of an owner whose result is on its device: its discoveries as
    #: bits over its range's words (no pairs) and their out-arcs.
    words: np.ndarray | None = None
    frontier_edges: int = 0

    @property
    def nbytes(self) -> int:
        words = 0 if self.words is None else self.words.nbytes
        return self.vertices.nbytes + self.parents.nbytes + self.offsets.nbytes + words

    def __sizeof__(self) -> int:  # what Dask counts
        return 64 + self.nbytes


def _here() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # outside a worker (a direct call)
        return "local"


def init_owner(*slices, sources, num_vertices: int, search: str,
               bounds: np.ndarray | None = None, owner_of: np.ndarray | None = None,
               results_on_device: bool = False) -> tuple:
    """``(OwnerFrontier, OwnerState)`` of the ranges of ``slices`` (GraphSlice, this
    worker's), the ``sources`` (ids, distinct) among their vertices visited at distance 0; ``bounds`` and
    ``owner_of`` (every range's owner) are kept for the steps (default: ``slices`` are
    every range, and this owner the only one). With ``results_on_device`` (an owner that
    runs its levels itself on a GPU worker) and a GPU here, the ranges' distances and
    parents are kept on the GPU (:func:`results_to_host` at the end), so no host arrays
    are made now."""
    if bounds is None:
        bounds = [*(p.lo for p in slices), slices[-1].hi]
        owner_of = np.zeros(len(slices), dtype=np.int64)
    dtype = result_dtype(num_vertices)
    here = _here()
    count = len(slices)
    results_on_device = results_on_device and _has_gpu()
    front = OwnerFrontier(here, np.array([p.task for p in slices], dtype=np.int64),
                          [_NO_VERTICES] * count, np.zeros(count, np.int64),
                          np.array([p.hi - p.lo for p in slices], dtype=np.int64),
                          empty_bitmap(num_vertices), empty_bitmap(num_vertices),
                          np.asarray(bounds, dtype=np.int64), np.asarray(owner_of, dtype=np.int64),
                          search, results_on_device)
    edges = np.zeros(count, np.int64)
    ranges = []
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    for i, part in enumerate(slices):
        first, stop = word_span(part.lo, part.hi)
        size = 0 if results_on_device else part.hi - part.lo
        rs = RangeState(part.task, part.lo, part.hi, first, stop, part.out_offsets,
                        _unreached(size, dtype), _unreached(size, dtype))
        mine = sources[(sources >= part.lo) & (sources < part.hi)]
        if mine.size:
            set_bits(front.visited, mine)
            if not results_on_device:
                rs.distances[mine - part.lo] = 0
                rs.parents[mine - part.lo] = mine
            front.frontiers[i] = mine
            front.counts[i] = mine.size
            front.unvisited[i] -= mine.size
            edges[i] = int((rs.offsets[mine - part.lo + 1] - rs.offsets[mine - part.lo]).sum())
        ranges.append(rs)
    frontier_bitmap(front.current(), front.bits)
    return front, OwnerState(here, ranges, int(num_vertices), edges, sources)


def _has_gpu() -> bool:
    """Whether this process can run GPU kernels (a GPU, or the CUDA simulator)."""
    from taskbfs.kernels.gpu import gpu_available

    return gpu_available()


def results_to_host(front: OwnerFrontier, state: OwnerState) -> None:
    """Fill the state's result arrays from the owner's GPU at the end of a search whose
    results were kept there (``front.results_on_device``): each range's distances and
    parents copied into new host arrays, the sources' written (they are not on the device)."""
    if not front.results_on_device:
        return
    from taskbfs.search.device_cache import device_cache

    cache = device_cache()
    with cache.lock:
        for rs in state.ranges:
            rs.distances, rs.parents = cache.result_range(*_device_result(front, state),
                                                          rs.lo, rs.hi)
            mine = state.sources[(state.sources >= rs.lo) & (state.sources < rs.hi)]
            rs.distances[mine - rs.lo] = 0
            rs.parents[mine - rs.lo] = mine
    state.nbytes = sum(a.nbytes for r in state.ranges for a in (r.distances, r.parents))
    front.results_on_device = False


def _record_on_device(front: OwnerFrontier, state: OwnerState, vertices: np.ndarray,
                      parents: np.ndarray, depth: int) -> None:
    """Pairs the owner's barrier accepted on the host written into its result on its GPU."""
    from taskbfs.search.device_cache import device_cache

    cache = device_cache()
    with cache.lock:
        cache.record_host_pairs(*_device_result(front, state), vertices, parents, depth)


def _device_result(front: OwnerFrontier, state: OwnerState) -> tuple:
    """``(search, entries, dtype)`` naming the search's result on the owner's GPU
    (:meth:`~taskbfs.search.device_cache.DeviceCache.result_arrays`): an entry per vertex id
    the bitmaps cover."""
    return front.search, 64 * int(front.visited.size), result_dtype(state.num_vertices)


#: Vertices from which a range's result arrays are filled on several threads (a fresh
#: array's pages are first touched as it is filled, which one thread does slowly).
PARALLEL_FILL_MIN = 1 << 22


def _unreached(size: int, dtype) -> np.ndarray:
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
    vertices = front.current() if direction == TOP_DOWN else _NO_VERTICES
    # a GPU owner's bottom-up steps write their pairs into its result on the device
    progress = Progress(unvisited, search=front.search,
                        result_on_device=front.results_on_device and direction == BOTTOM_UP)
    frontier = Frontier(level, direction, vertices, offsets, whole, front.visited, bounds,
                        progress)
    front.view = (level, direction, whole, frontier)  # two steps may both make it: alike
    return frontier


def split_for_owners(found, frontier: Frontier, owner_of: np.ndarray, task: int,
                     inbound: int) -> list:
    """A step's raw :class:`~taskbfs.search.state.Discoveries` as one :class:`Piece` per
    owner (``owner_of[t]``: the owner of range t; an owner's ranges in ascending order)."""
    here = _here()
    device = (found.h2d_bytes, found.d2h_bytes, round(found.kernel_seconds * 1e9))
    if frontier.direction == TOP_DOWN and found.offsets is None:
        found = bucketed(found, frontier.bounds)  # by task ranges
    pieces = []
    for w in range(int(owner_of.max()) + 1):
        tasks = np.flatnonzero(owner_of == w)
        if frontier.direction == BOTTOM_UP:  # a bottom-up step finds only its own vertices
            sizes = np.where(tasks == task, found.vertices.size, 0)
            vertices, parents = found.vertices, found.parents
            if parents is None:  # words alone (see Piece.words): no pairs here
                if found.words is None:
                    raise TaskBFSError(f"range {task}'s step returned vertices without parents "
                                       "and without words: its owner cannot accept them")
                parents = vertices
        else:
            sizes = np.diff(found.offsets)[tasks]
            vertices, parents = _owned(found, tasks)
        offsets = np.zeros(len(tasks) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        if not offsets[-1]:
            vertices = parents = found.vertices[:0]
        words = found.words if found.parents is None and (tasks == task).any() else None
        count = found.words_count if found.parents is None else found.vertices.size
        pieces.append(Piece(task, here, vertices, parents, offsets, int(found.edges_examined),
                            int(count), device, inbound, words, int(found.frontier_edges)))
    return pieces


def _owned(found, tasks: np.ndarray):
    """A bucketed step output's pairs of ``tasks`` (ascending), one after another: a view
    when the tasks are consecutive (always with one owner), else a copy."""
    offsets = found.offsets
    if tasks[-1] - tasks[0] + 1 == len(tasks):
        cut = slice(int(offsets[tasks[0]]), int(offsets[tasks[-1] + 1]))
        return found.vertices[cut], found.parents[cut]
    cuts = [slice(int(offsets[t]), int(offsets[t + 1])) for t in tasks.tolist()]
    return (np.concatenate([found.vertices[c] for c in cuts]),
            np.concatenate([found.parents[c] for c in cuts]))


def _owner_step(step, args, level, direction):
    part, front, *shares = args
    here = _here()
    inbound = 0
    if front.worker != here:  # away from its owner: what it read from other workers
        inbound = front.nbytes + sum(8 * sum(w.size for _, w in spans)
                                     for worker, spans in shares if worker != here)
    bits = frontier_bits(front, level, shares) if shares else None
    frontier = as_frontier(front, level, direction, bits)
    found = step(part, frontier, barrier_form=False)  # the barriers read the pairs alone
    pieces = split_for_owners(found, frontier, front.owner_of, part.task, inbound)
    if direction == BOTTOM_UP:  # its own vertices: only its owner gets a piece
        return pieces[int(front.owner_of[part.task])]
    return pieces[0] if len(pieces) == 1 else tuple(pieces)


def _owner_step_smp(*args, level, direction):
    return _owner_step(step_smp, args, level, direction)


def _owner_step_cuda(*args, level, direction):
    return _owner_step(step_cuda, args, level, direction)


#: The step: ``ins = [slice, OwnerFrontier (, every owner's share of the frontier bits:
#: bottom-up, several owners)]``, one :class:`Piece` out per owner worker (bottom-up: one,
#: for its owner). Named as the one-task search's steps, so that traces read alike.
OWNER_STEP = Task(STEP.name, smp=_owner_step_smp, cuda=_owner_step_cuda)


def owner_barrier(*args, level: int, owner: int) -> tuple:
    """Merge the pieces the steps of ``level`` sent this owner into its frontier and state
    (in place; called as ``owner_barrier(*pieces, front, state)``, a piece being a
    :class:`Piece` or a step's tuple of one piece per owner, of which ``owner``'s is read;
    returns ``(front, state)``) and publish the counts the client needs (:data:`REPORT`)."""
    *inputs, front, state = args
    publish({REPORT: accept_pieces(inputs, front, state, level, owner)})
    return front, state


def accept_pieces(inputs, front: OwnerFrontier, state: OwnerState, level: int,
                  owner: int) -> dict:
    """The owner barrier's work (see :func:`owner_barrier`): ``inputs`` merged into
    ``front`` and ``state``; the owner's report of the level (what the client, and with
    :mod:`taskbfs.search.owner_levels` every other owner, sums into the next summary)."""
    start = time.time()
    front.view = front.assembled = None
    depth = level + 1
    remote = local = 0
    pieces = []
    for p in inputs:  # a Piece, or every owner's pieces of a small top-down level's step
        whole = p if isinstance(p, tuple) else (p,)
        nbytes = sum(q.nbytes for q in whole)
        if whole[0].worker != state.worker:
            remote += nbytes
        else:
            local += nbytes
        pieces.append(whole[owner] if isinstance(p, tuple) else p)
    vertices, parents, spans = _joined_pieces(pieces, len(state.ranges))
    received = (spans[:, 1:] - spans[:, :-1]).sum(axis=0)
    position = {t: i for i, t in enumerate(front.tasks.tolist())}
    worded = {position[p.task]: p for p in pieces if p.words is not None}
    ended = received == 0
    ended[list(worded)] = False
    # ranges no piece names keep their state, but their frontier ends
    for i in np.flatnonzero(ended & (front.counts > 0)).tolist():
        front.frontiers[i] = _NO_VERTICES
    front.counts[ended] = 0
    state.edges[ended] = 0
    front.bits[:] = 0  # the accepted vertices' bits are set as they are accepted
    for i, piece in worded.items():
        _take_words(front, state, i, piece)
    for i in np.flatnonzero(received).tolist():
        rs = state.ranges[i]
        starts, stops = spans[:, i], spans[:, i + 1]
        frontier, edges, accepted_parents = _accept(
            vertices, parents, starts, stops, rs, front.visited[rs.first_word : rs.stop_word],
            depth, int(received[i]), front.bits, front.results_on_device)
        if front.results_on_device:
            _record_on_device(front, state, frontier, accepted_parents, depth)
        front.frontiers[i], front.counts[i], state.edges[i] = frontier, frontier.size, edges
        front.unvisited[i] -= frontier.size
    mine = [p for p in pieces if p.task in state.owns]
    reached, as_words = _reached_report(front, state)
    return {
        "reached": reached, "reached_words": as_words,
        "level": level, "owner": owner,
        # per range (the owner's, in its order): new frontier vertices, their edges, unvisited
        "ranges": np.stack([front.counts, state.edges, front.unvisited]).tobytes(),
        "words": 8 * state.words,
        "steps": [[p.task, p.edges_examined, p.found, *p.device] for p in mine],
        "inbound": sum(p.inbound for p in mine),
        "remote": remote, "local": local, "start": start, "stop": time.time(),
    }


_NO_VERTICES = np.empty(0, np.int64)


def _take_words(front: OwnerFrontier, state: OwnerState, i: int, piece: Piece) -> None:
    """Range ``i``'s discoveries given as bitmap words (:attr:`Piece.words`: their pairs
    are in the result on the owner's GPU): visited and frontier bits ORed in, counts
    taken; its frontier vertices are read off the bits when first needed."""
    rs = state.ranges[i]
    front.visited[rs.first_word : rs.stop_word] |= piece.words
    front.bits[rs.first_word : rs.stop_word] |= piece.words
    front.frontiers[i] = None  # see OwnerFrontier.current
    front.counts[i] = piece.found
    state.edges[i] = piece.frontier_edges
    front.unvisited[i] -= piece.found


def _accept(vertices, parents, starts, stops, rs: RangeState, words, depth: int, total: int,
            bits: np.ndarray, elsewhere: bool = False) -> tuple:
    """The first unvisited occurrence of each vertex of one range's pairs (``starts[j] ..
    stops[j]``, ``total`` of them) accepted into its state, its frontier bit set in
    ``bits``; ``(accepted vertices, edges leaving them, their parents)``: the parents only
    when the result is kept ``elsewhere`` (the owner's GPU: the range's arrays are empty
    and the caller writes them there), else None. From
    :data:`_PARALLEL_ACCEPT_MIN` pairs on, on the host's threads in equal shares
    (:func:`~taskbfs.kernels.merge.accept_share`), each share's vertices then set in
    ``bits`` and moved into one array by its thread."""
    out = np.empty(total, dtype=np.int64)
    out_parents = np.empty(total if elsewhere else 0, dtype=np.int64)
    cores = os.cpu_count() or 1
    least = _PARALLEL_ACCEPT_MIN
    shares = min(cores, total // max(1, least // 4))
    if total < least or shares < 2:
        n, edges = accept_spans_into_range(vertices, parents, starts, stops, rs.lo, words,
                                           rs.first_word, rs.offsets, depth, rs.distances,
                                           rs.parents, out, out_parents)
        set_bits_share(out, 0, n, bits)
        return out[:n], edges, out_parents[:n] if elsewhere else None
    cuts = np.linspace(0, total, shares + 1).astype(np.int64)
    made = [(0, 0)] * shares

    def share(k):
        made[k] = accept_share(vertices, parents, starts, stops, rs.lo, words, rs.first_word,
                               rs.offsets, depth, rs.distances, rs.parents, out, out_parents,
                               int(cuts[k]), int(cuts[k + 1]))
        set_bits_share(out, int(cuts[k]), int(cuts[k]) + made[k][0], bits)

    on_threads(share, shares, cores)
    counts = np.array([m[0] for m in made], dtype=np.int64)
    edges = sum(e for _, e in made)
    if counts.sum() == total:  # every pair accepted (a bottom-up level's): in place
        return out, edges, out_parents if elsewhere else None
    at = np.concatenate([[0], np.cumsum(counts)])
    frontier = np.empty(int(at[-1]), dtype=np.int64)
    frontier_parents = np.empty(frontier.size if elsewhere else 0, dtype=np.int64)

    def move(k):
        frontier[at[k] : at[k + 1]] = out[cuts[k] : cuts[k] + counts[k]]
        if elsewhere:
            frontier_parents[at[k] : at[k + 1]] = out_parents[cuts[k] : cuts[k] + counts[k]]

    on_threads(move, shares, cores)
    return frontier, edges, frontier_parents if elsewhere else None


def _reached_report(front: OwnerFrontier, state: OwnerState) -> tuple[bytes, bool]:
    """The owner's new frontier (the vertices its barrier just reached) for the client's
    :class:`KeptLevels`, in the fewer bytes of two forms: its vertex ids (the result's
    dtype), or its ranges' words of the frontier bitmap one after another (in the owner's
    order, ``word_span`` of each); ``(bytes, whether words)``. A large level's ids would
    be up to 32 times the words, and they travel through the scheduler."""
    dtype = result_dtype(state.num_vertices)
    if int(front.counts.sum()) * dtype.itemsize <= 8 * state.words:
        return front.current().astype(dtype, copy=False).tobytes(), False
    words = [front.bits[r.first_word : r.stop_word] for r in state.ranges]
    return (words[0] if len(words) == 1 else np.concatenate(words)).tobytes(), True


@dataclass(frozen=True)
class ReachedWords:
    """One owner's new frontier as its ranges' bitmap words (:func:`_reached_report`),
    decoded only when a resume reads the kept levels."""

    spans: tuple  # (first_word, stop_word) of each of the owner's ranges, in its order
    data: bytes

    def ids(self) -> np.ndarray:
        """The vertex ids whose bits are set (int64; a word two of the owner's ranges
        share names its vertices twice)."""
        words = np.frombuffer(self.data, dtype=np.uint64)
        parts, at = [], 0
        for first, stop in self.spans:
            parts.append(ids_of_words(words[at : at + stop - first], first))
            at += stop - first
        return np.concatenate(parts) if parts else _NO_VERTICES


def _joined_pieces(pieces, ranges: int):
    """The pieces' pairs one after another, and per piece the spans of each range in them
    (``spans[j, i] .. spans[j, i + 1]``: piece j's pairs of the owner's range i)."""
    if not pieces:
        empty = np.empty(0, np.int64)
        return empty, empty, np.zeros((0, ranges + 1), np.int64)
    vertices = np.concatenate([p.vertices for p in pieces]) if len(pieces) > 1 else pieces[0].vertices
    parents = np.concatenate([p.parents for p in pieces]) if len(pieces) > 1 else pieces[0].parents
    base = np.cumsum([0] + [p.vertices.size for p in pieces[:-1]])
    spans = np.array([p.offsets for p in pieces], dtype=np.int64) + base[:, None]
    return vertices, parents, spans


#: The per-owner barrier, pinned to its owner's worker (``ins`` = the pieces addressed to
#: it, ``inouts`` = its frontier and state, updated in place).
OWNER_BARRIER = Task(BARRIER_NAME, smp=owner_barrier)


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


# ====================================================================== the client's runner
class KeptLevels:
    """What the client keeps of a dispatched search so that a later attempt can resume it
    from the last completed level instead of level 0 (docs/resume.md): the distance of
    every vertex the completed levels reached (one array of n, ``int8`` widened to
    ``int16``/``int32`` as the search gets deeper), the levels' summaries and bytes moved,
    and which attempt ran which levels (for the trace).

    Parameters
    ----------
    num_vertices : int
    sources : ndarray of int64
        The search's sources (distinct).
    """

    def __init__(self, num_vertices: int, sources):
        self.num_vertices, self.sources = num_vertices, sources
        self._levels = None  # made when first read (a resume reads it)
        #: ``(level, reached)`` of the levels completed since :attr:`levels` was last read
        self._pending: list[tuple[int, list]] = []
        self.summaries: list[LevelSummary] = []
        self.exchange: list[dict] = []
        #: ``(attempt, program id, first level)`` of each attempt that ran levels, in order
        self.attempts: list[tuple[int, str, int]] = []
        self.num_tasks = 0  # of the attempts that ran levels (a resume keeps their ranges)

    @property
    def level(self) -> int:
        """The last completed level (its frontier is known): where a resume starts."""
        return len(self.summaries) - 1

    @property
    def levels(self) -> np.ndarray:
        """The distance of every vertex the completed levels reached (-1 elsewhere),
        written from the kept levels when read (a resume reads it; a search that ends
        without one never pays for it, not even the array of n bytes)."""
        if self._levels is None:
            self._levels = np.full(self.num_vertices, -1, dtype=np.int8)
            self._levels[self.sources] = 0
        if self._pending:
            deepest = self._pending[-1][0]
            if deepest > np.iinfo(self._levels.dtype).max:
                self._levels = self._levels.astype(np.int16 if deepest < 2**15 else np.int32)
            for level, reached in self._pending:
                for ids in reached:
                    self._levels[ids.ids() if isinstance(ids, ReachedWords) else ids] = level
            self._pending = []
        return self._levels

    def complete(self, summary: LevelSummary, reached, exchange: dict | None = None) -> None:
        """Keep ``summary`` (which opens level L) and the vertices at distance L
        (``reached``: arrays of vertex ids, or :class:`ReachedWords`)."""
        self._pending.append((summary.level, reached))
        self.summaries.append(summary)
        if exchange is not None:
            self.exchange.append(exchange)

    def start(self, attempt: int, program: str, first: LevelSummary, num_tasks: int) -> int:
        """Note that ``attempt`` (its program ``program``) runs the search's levels, cut
        into ``num_tasks`` ranges, from the last completed one (from ``first``, level 0,
        when none completed); returns that level."""
        if self.level < 1:  # nothing to resume from: start again
            self.summaries, self.exchange, self.attempts = [first], [], []
            self.num_tasks = num_tasks
            self._pending = []
            self._levels = None
        self.attempts.append((attempt, program, self.level))
        return self.level


@dataclass
class _Level:
    """What the client sums from the owners' reports after one barrier."""

    counts: np.ndarray
    edges: np.ndarray
    unvisited: np.ndarray
    examined: np.ndarray
    found: np.ndarray
    device: np.ndarray
    words: dict
    moved: dict
    start: float
    stop: float


class OwnedSearch:
    """The client side of a dispatched search: the runner of its levels
    (:func:`~taskbfs.search.levels.run_levels`: :meth:`level`, :meth:`announce`).

    Parameters
    ----------
    program : Program
        The search's program (its policy places the steps).
    placed : PlacedGraph
        The graph's slices on the workers; each worker holding slices owns their ranges.
    slices : list of list of str
        Per range, the data names of its slice (and transposed slice) in ``program``.
    sources : ndarray of int64
        The search's sources (distinct).
    first : LevelSummary
        The level-0 summary (``state.first_summary``).
    direction_mode : str
    alpha, beta : float
        Beamer's parameters.
    depth_limit : int or None
        The last level searched (:class:`~taskbfs.search.state.SwitchRule`).
    waits : object
        Which attempt of the search this is (``attempt``), and how the client waits,
        within the call's timeout, failing when an owner left the
        cluster: ``listen(watch, workers)`` → the program's next message (raising the
        error of the task writing a datum of ``watch``); ``settle(futures, workers)``
        waits until futures are computed (left where they are); ``gather(names)`` →
        their values; ``report(summaries) -> bool`` hands summaries on (True once the
        search ended).
    tags : dict
        The search's tags (vertices, arcs, directed), on its first task.
    keep : bool
        The graph was built on the workers: the result stays there, one piece per range.
    kept : KeptLevels
        What earlier attempts of the search completed: the loop resumes from its last
        completed level (level 0 when none), and keeps each level it completes there.
    """

    def __init__(self, program, placed, slices, sources, first: LevelSummary,
                 direction_mode: str, alpha: float, beta: float, depth_limit, waits,
                 tags: dict, keep: bool, kept: KeptLevels):
        self.program = program
        self.client = program.client
        self.placed = placed
        self.bounds = placed.parts.bounds
        self.n = int(self.bounds[-1])
        self.slices = slices
        self.sources = sources
        self.kept = kept
        self.resumed_from = kept.start(waits.attempt, program.id, first, placed.parts.num_tasks)
        self.summaries = kept.summaries
        self.started = False
        self.rule = search_rule(self.bounds, placed.num_arcs, direction_mode, alpha, beta,
                                depth_limit)
        self.waits = waits
        self.keep = keep
        self.tags = tags
        self.exchange = kept.exchange
        self.workers, self.owner_of = self._owners(keep)
        self.owned = [np.flatnonzero(self.owner_of == w) for w in range(len(self.workers))]
        self.states = [f"owner/{w}" for w in range(len(self.workers))]
        self.fronts = [f"front/{w}" for w in range(len(self.workers))]
        self._made = None  # (reached, moved) of the level run last, until announced
        self._ahead: dict[int, dict] = {}  # level -> {owner: report} heard before their turn

    def _owners(self, keep: bool):
        """The worker owning each range, and the list of owners: a worker holding its
        slice that runs host tasks (a ``CPU`` resource) when one does, the fewest-loaded
        of them where Dask made copies. A slice held only by other workers (a GPU worker
        of the embedded cluster) is owned by the fewest-loaded host worker, unless the
        graph was built on the workers (``keep``): its ranges stay where they are."""
        left = self.waits.clock.left  # each round trip within the call's timeout
        who = _who_has(self.client, self.placed.slices, left())
        if not all(who.get(f.key) for f in self.placed.slices):  # still being built, or lost
            self.waits.settle(self.placed.slices)
            who = _who_has(self.client, self.placed.slices, left())
        workers = workers_of(self.client, left())
        load: dict[str, int] = {}
        holders = []
        for f in self.placed.slices:
            candidates = self._may_own(sorted(who[f.key]), workers, keep)
            holder = min(candidates, key=lambda w: load.get(w, 0))
            load[holder] = load.get(holder, 0) + 1
            holders.append(holder)
        owners = sorted(load)
        index = {w: i for i, w in enumerate(owners)}
        return owners, np.array([index[h] for h in holders], dtype=np.int64)

    def _may_own(self, held: list, workers: dict, keep: bool) -> list:
        """The workers that may own a range whose slice ``held`` hold (see
        :meth:`_owners`)."""
        hosts = workers_with(workers, CPU_RESOURCE)
        return [w for w in held if w in hosts] or (held if keep or not hosts else hosts)

    def run(self):
        """Every level (:func:`~taskbfs.search.levels.run_levels`, this object its runner);
        ``(summaries, result, exchange)``: the result as ``(distances, parents)`` arrays,
        or with ``keep`` one future of ``(distances, parents)`` per range (in vertex
        order) left on its owner."""
        opening = self.summaries[-1]
        if self.resumed_from:
            self.program.put("levels", self.kept.levels)
        last = run_levels(self, opening, announce_opening=not self.resumed_from)
        if not self.started:  # resumed once every level had completed: only the result
            with self.program.batch():
                self._start(last.level)
        self.program.forget("levels")
        result = self._kept() if self.keep else self._gathered()
        return self.summaries, result, pd.DataFrame(self.exchange)

    def _start(self, level: int) -> None:
        """The owners' frontiers and states, for ``level`` (submitted with its batch):
        new at level 0, else rebuilt from the completed levels."""
        self.started = True
        if level == 0:
            self._init()
        else:
            self._resume(level)

    def _resume(self, level: int) -> None:
        """The owners' frontiers and states rebuilt from the client's
        :class:`KeptLevels` (the data ``levels``) at ``level``: each owner reads its
        ranges' in-arcs (the transposed slices of a directed graph)."""
        for w, tasks in enumerate(self.owned):
            self.program.submit(RESUME, ins=[*(self.slices[t][-1] for t in tasks), "levels"],
                                outs=[self.fronts[w], self.states[w]],
                                kwargs={"sources": self.sources, "level": level,
                                        "num_vertices": self.n, "search": self.program.id,
                                        "bounds": self.bounds, "owner_of": self.owner_of},
                                worker=self.workers[w],
                                tags={**(self.tags if w == 0 else {}), "resumed_from": level})

    def _init(self) -> None:
        """The owners' frontiers and states (submitted with level 0)."""
        for w, tasks in enumerate(self.owned):
            self.program.submit(INIT, ins=[self.slices[t][0] for t in tasks],
                                outs=[self.fronts[w], self.states[w]],
                                kwargs=self._init_keywords(w),
                                worker=self.workers[w], tags=self.tags if w == 0 else {})

    def _init_keywords(self, owner: int) -> dict:
        """The keywords of owner ``owner``'s :func:`init_owner` (its result on the host,
        where any worker's steps send their pairs)."""
        return {"sources": self.sources, "num_vertices": self.n, "search": self.program.id,
                "bounds": self.bounds, "owner_of": self.owner_of}

    def level(self, summary: LevelSummary) -> LevelSummary:
        """Submit the level ``summary`` opens as one batch, read its owners' reports,
        return the next summary (what the level reached and moved is kept for
        :meth:`announce`)."""
        program, level, direction = self.program, summary.level, summary.direction
        working = np.flatnonzero(summary.frontier_counts).tolist()
        owners = len(self.workers)
        readers, shares = set(), []  # bottom-up, several owners: who reads the shares
        outs, made = [], []  # per step, its output's name for each owner; every name
        whole = direction == TOP_DOWN and owners > 1 and (
            2 * result_dtype(self.n).itemsize * owners * summary.frontier_edges
            <= _WHOLE_PIECES_BYTES)
        kwargs = {"level": level, "direction": direction}
        with program.batch():
            if not self.started:
                self._start(level)
            if direction == BOTTOM_UP and owners > 1:
                shares = self._shares()
                readers = {int(self.owner_of[t]) for t in working}
            for t in working:
                w = int(self.owner_of[t])
                ins = self.slices[t][-1:] if direction == BOTTOM_UP else self.slices[t][:1]
                names, step_outs = _step_outputs(level, t, w, owners, direction, whole)
                size = int(summary.sizes[t])
                # the live page (taskbfs.dashboard) reads these tags as they are placed
                program.submit(OWNER_STEP, ins=[*ins, self.fronts[w], *shares], outs=step_outs,
                               kwargs=kwargs, task_id=t, size=size,
                               tags={"level": level, "task": t, "direction": direction,
                                     "size": size})
                outs.append(names)
                made += step_outs
            for w in range(owners):
                tags = {"level": level, "owner": w}
                if w == 0:  # the level's frontier, once
                    tags.update(frontier=summary.frontier_size,
                                frontier_edges=summary.frontier_edges)
                program.submit(OWNER_BARRIER, ins=[names[w] for names in outs if names[w]],
                               inouts=[self.fronts[w], self.states[w]], in_place=True,
                               worker=self.workers[w],
                               kwargs={"level": level, "owner": w}, tags=tags)
        for name in [*made, *shares]:
            program.forget(name)
        reports = self._reports(level)
        merged = self._merged(reports)
        self._made = ([self._reached(w, r) for w, r in enumerate(reports)],
                      self._moved(level, direction, merged, readers))
        return self._next_summary(summary, merged)

    def announce(self, summary: LevelSummary) -> tuple[LevelSummary, bool]:
        """Keep the level ``summary`` opens for a later attempt (:class:`KeptLevels`:
        ``summary`` and the vertices its level reached, unless it is the first one,
        kept when the attempt started) and hand it to the client (``waits.report``:
        ``progress``, the level an error names); ``(summary, whether the search
        ended)``."""
        if self._made is not None:
            self.kept.complete(summary, *self._made)
            self._made = None
        return summary, self.waits.report([summary])

    def _reached(self, owner: int, report: dict):
        """What owner ``owner``'s barrier reached, as its report sent it: vertex ids, or
        :class:`ReachedWords` over its ranges' spans (:func:`_reached_report`)."""
        if not report["reached_words"]:
            return np.frombuffer(report["reached"], result_dtype(self.n))
        spans = tuple(word_span(int(self.bounds[t]), int(self.bounds[t + 1]))
                      for t in self.owned[owner].tolist())
        return ReachedWords(spans, report["reached"])

    def _shares(self) -> list[str]:
        """Every owner's share of the frontier bitmap (data names, in owner order): what a
        bottom-up step reads beside its owner's frontier, assembled on its worker."""
        shares = [f"share/{w}" for w in range(len(self.workers))]
        for w, front in enumerate(self.fronts):
            self.program.submit(BITS_SHARE, ins=[front], outs=[shares[w]], worker=self.workers[w])
        return shares

    def _reports(self, level: int) -> list[dict]:
        """The W owners' reports of ``level``, in owner order. Reports of later levels that
        come first are kept for their turn (owners that run their levels themselves,
        :mod:`taskbfs.search.owner_levels`, go on before the client has heard every owner of
        a level: their messages reach it through the scheduler in no set order)."""
        reports = self._ahead.pop(level, {})
        while len(reports) < len(self.workers):
            message = self.waits.listen(self.states, self.workers)
            report = message.get(REPORT) if isinstance(message, dict) else None
            if report is None or report["level"] < level:
                continue
            if report["level"] == level:
                reports[report["owner"]] = report
            else:
                self._ahead.setdefault(report["level"], {})[report["owner"]] = report
        return [reports[w] for w in range(len(self.workers))]

    def _gathered(self):
        """The owners' ranges gathered into two arrays (one task per owner)."""
        program = self.program
        names = [f"result/{w}" for w in range(len(self.workers))]
        with program.batch():
            for w, state in enumerate(self.states):
                program.submit(RESULT, ins=[state], outs=[names[w]], worker=self.workers[w],
                               tags={"done": True, "owner": w})
        return self._joined([p for ranges in self.waits.gather(names) for p in ranges])

    def _joined(self, pieces):
        """``(distances, parents)`` of every vertex from the owners' ``(task, distances,
        parents)`` pieces (:func:`owner_result`)."""
        if len(pieces) == 1:
            return pieces[0][1:]
        dtype = result_dtype(self.n)
        distances, parents = np.empty(self.n, dtype), np.empty(self.n, dtype)
        for task, d, p in pieces:
            lo, hi = self.bounds[task], self.bounds[task + 1]
            distances[lo:hi], parents[lo:hi] = d, p
        return distances, parents

    def _kept(self) -> list:
        """One future of ``(distances, parents)`` per range, left on its owner."""
        program = self.program
        names = [f"range/{t}" for t in range(self.bounds.size - 1)]
        with program.batch():
            for t, name in enumerate(names):
                w = int(self.owner_of[t])
                program.submit(RANGE, ins=[self.states[w]], outs=[name], worker=self.workers[w],
                               kwargs={"vertex_range": t}, tags={"done": True, "owner": w})
        futures = [program.future(name) for name in names]
        self.waits.settle(futures, self.workers)
        return futures

    def _merged(self, reports) -> _Level:
        return merged_reports(reports, self.owned)

    def _moved(self, level: int, direction: str, merged: _Level, readers: set) -> dict:
        """Bytes the level moved: the steps' pieces (between workers and within one), the
        frontier bitmap's shares (each owner assembling it gets every other owner's words)
        and the step frontiers read on another worker than their owner's (GPU steps)."""
        total_words = sum(merged.words.values())
        return {"level": level, "direction": direction, "owners": len(self.workers),
                "pieces_remote_bytes": merged.moved["remote"],
                "pieces_local_bytes": merged.moved["local"],
                "bitmap_remote_bytes": sum(total_words - merged.words[w] for w in readers),
                "frontier_remote_bytes": merged.moved["inbound"]}

    def _next_summary(self, summary: LevelSummary, merged: _Level) -> LevelSummary:
        return next_summary(self.rule, summary, merged)


def _who_has(client, futures, timeout: float | None) -> dict:
    """``{key: [worker, ...]}`` of ``futures``, asked of the scheduler within ``timeout``
    seconds, else ``TimeoutError`` (``Client.who_has`` takes no timeout)."""
    return client.sync(client.scheduler.who_has, keys=[f.key for f in futures],
                       callback_timeout=timeout)


def merged_reports(reports, owned: list) -> _Level:
    """The W owners' reports of a level (in owner order; ``owned[w]``: owner w's ranges)
    summed over the graph's ranges."""
    tasks = sum(len(o) for o in owned)
    counts, edges, unvisited = (np.zeros(tasks, np.int64) for _ in range(3))
    examined, found = np.zeros(tasks, np.int64), np.zeros(tasks, np.int64)
    device, words, moved = [], {}, {"remote": 0, "local": 0, "inbound": 0}
    for w, r in enumerate(reports):
        idx = owned[w]
        counts[idx], edges[idx], unvisited[idx] = np.frombuffer(r["ranges"], np.int64).reshape(3, -1)
        for t, e, f, h2d, d2h, ns in r["steps"]:
            examined[t], found[t] = e, f
            if h2d or d2h or ns:
                device.append((t, h2d, d2h, ns))
        words[w] = r["words"]
        for k in moved:
            moved[k] += r[k]
    return _Level(counts, edges, unvisited, examined, found,
                  np.array(device, dtype=np.int64).reshape(-1, 4), words, moved,
                  min(r["start"] for r in reports), max(r["stop"] for r in reports))


def next_summary(rule, summary: LevelSummary, merged: _Level) -> LevelSummary:
    """The summary of the level after ``summary``'s, from the summed counts
    (:meth:`~taskbfs.search.state.SwitchRule.summary`, as every runner makes it)."""
    return rule.summary(
        summary.level + 1, summary.direction, summary.frontier_size,
        summary.unexplored_edges, merged.counts, merged.edges, merged.unvisited,
        edges_examined=merged.examined, found=merged.found, start=merged.start,
        stop=merged.stop, device_stats=merged.device)


def _step_outputs(level: int, task: int, owner: int, owners: int, direction: str,
                  whole: bool) -> tuple[list, list]:
    """A level's step of range ``task`` (owned by ``owner``): the name of the datum each
    owner's barrier reads of it (None: nothing for that owner), and the step's outputs.
    Top-down: one piece per owner, each its own output (a getitem splits them), or with
    ``whole`` one output every owner reads; bottom-up: one piece, for its owner (the
    step finds its own vertices)."""
    if whole:
        name = f"to/{level}/{task}"
        return [name] * owners, [name]
    names = [f"to/{level}/{task}/{o}" if direction == TOP_DOWN or o == owner else None
             for o in range(owners)]
    return names, [n for n in names if n]


def owned_search(program, placed, slices, sources, first: LevelSummary, direction_mode: str,
                 alpha: float, beta: float, depth_limit, waits, tags: dict, keep: bool,
                 kept: KeptLevels):
    """Run :class:`OwnedSearch`; ``(summaries, result, exchange)``."""
    return OwnedSearch(program, placed, slices, sources, first, direction_mode, alpha, beta,
                       depth_limit, waits, tags, keep, kept).run()
