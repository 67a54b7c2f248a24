"""The level barrier split per owner worker: a search whose state never sits in one place.

Returns
    ``(summaries, KeptResult, exchange)`` for :meth:`taskbfs.bfs.core._Search.dispatched`
    when the graph lives on the workers (:class:`~taskbfs.bfs.distributed.DistributedGraph`):
    the level summaries the client read, the result left on the owners in one piece per
    vertex range, and the bytes each level moved between workers.
Approach
    Each worker holding slices of the graph *owns* those vertex ranges (T >= W ranges dealt
    out at the build): an :class:`OwnerState` there keeps, per range, its visited words,
    distances, parents, out-degrees and current frontier. A level is

    1. per range with work, a step task (placed by the policy, CPU or GPU, as everywhere)
       reading its slice and a small :class:`StepFrontier` cut from its owner's state (plus,
       bottom-up, the whole frontier as a bitmap assembled on its owner's worker from every
       owner's words); the step splits what it found into one :class:`Piece` per owner
       worker (top-down candidates go to whoever owns them; bottom-up discoveries are the
       step's own vertices, so only its own owner gets any);
    2. per owner worker, one barrier task pinned there: it receives the pieces addressed to
       its ranges and writes their first unvisited occurrences into its state
       (:func:`~taskbfs.kernels.merge.accept_into_range`): visited bits, distance, parent,
       next frontier. Pieces travel step worker to owner worker; the client never sees
       them;
    3. per owner, a report of counts (new frontier vertices, their edges, unvisited
       vertices, per range; what the steps examined): the client sums them and applies
       Beamer's rule (:func:`~taskbfs.kernels.direction.switch_direction`), as the single
       barrier does, then submits the next level.

    Parents and distances are written by the owners level by level, so the result is ready
    where it lives when the last level ends (no assembly from the steps' logs).
Encoding
    Bitmaps are uint64 words over global vertex ids (:mod:`taskbfs.kernels.bitmap`); a
    range's words are ``word_span(lo, hi)``, so neighbouring ranges may share a boundary
    word and bits are ORed. What crosses the network per level is in docs/distributed.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from taskbfs.bfs.result import result_dtype
from taskbfs.bfs.state import BOTTOM_UP, TOP_DOWN, Frontier, LevelSummary, bucketed, step_sizes
from taskbfs.bfs.steps import step_cuda, step_smp
from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.direction import switch_direction
from taskbfs.kernels.merge import accept_into_range, frontier_bitmap, word_span
from taskbfs.runtime import Task

__all__ = ["OwnerState", "Piece", "StepFrontier", "owned_search"]


# ====================================================================== on the workers
@dataclass
class RangeState:
    """The BFS state of one vertex range ``[lo, hi)``, kept by its owner worker."""

    task: int
    lo: int
    hi: int
    first_word: int
    words: np.ndarray  # visited, the range's words of a whole-graph bitmap
    degrees: np.ndarray  # out-degrees, int64, indexed v - lo
    distances: np.ndarray
    parents: np.ndarray
    frontier: np.ndarray  # int64 vertices at the current level
    frontier_edges: int = 0
    unvisited: int = 0


@dataclass
class OwnerState:
    """Everything one owner worker keeps of a search: its ranges' states and the report of
    its last barrier."""

    worker: str
    ranges: list[RangeState]
    num_vertices: int
    report: dict = field(default_factory=dict)


@dataclass
class StepFrontier:
    """What one step reads of its owner's state (cut by :func:`step_frontier`)."""

    task: int
    level: int
    direction: str
    vertices: np.ndarray  # the range's frontier (top-down), else empty
    spans: list  # (first_word, visited words) of each range of the owner
    worker: str  # where the owner state lives

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + sum(w.nbytes for _, w in self.spans)


@dataclass
class FrontierBits:
    """The whole frontier as a bitmap, assembled on one owner's worker (bottom-up)."""

    bits: np.ndarray
    worker: str


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
    inbound: int  # bytes of the step's frontier (and bitmap) that came from another worker

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.parents.nbytes + self.offsets.nbytes


def _here() -> str:
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # outside a worker (a direct call)
        return "local"


def init_owner(*slices, source: int, num_vertices: int) -> OwnerState:
    """The owner state of the ranges of ``slices`` (GraphSlice, this worker's), the
    source visited at distance 0 when it is one of them."""
    dtype = result_dtype(num_vertices)
    ranges = []
    for part in slices:
        first, stop = word_span(part.lo, part.hi)
        rs = RangeState(part.task, part.lo, part.hi, first, np.zeros(stop - first, np.uint64),
                        np.diff(part.out_offsets).astype(np.int64),
                        np.full(part.hi - part.lo, -1, dtype), np.full(part.hi - part.lo, -1, dtype),
                        np.empty(0, np.int64), 0, part.hi - part.lo)
        if part.lo <= source < part.hi:
            rs.words[(source >> 6) - first] |= np.uint64(1) << np.uint64(source & 63)
            rs.distances[source - part.lo] = 0
            rs.parents[source - part.lo] = source
            rs.frontier = np.array([source], dtype=np.int64)
            rs.frontier_edges = int(rs.degrees[source - part.lo])
            rs.unvisited -= 1
        ranges.append(rs)
    return OwnerState(_here(), ranges, int(num_vertices))


def step_frontier(state: OwnerState, task: int, level: int, direction: str) -> StepFrontier:
    """The frontier the step of range ``task`` reads at ``level`` (copies: the owner's
    barrier updates its state in place)."""
    rs = next(r for r in state.ranges if r.task == task)
    vertices = rs.frontier.copy() if direction == TOP_DOWN else np.empty(0, np.int64)
    spans = [(r.first_word, r.words.copy()) for r in state.ranges]
    return StepFrontier(task, level, direction, vertices, spans, state.worker)


def owner_words(state: OwnerState) -> tuple[str, list]:
    """This owner's share of the frontier bitmap: ``(worker, [(first_word, words)])``."""
    spans = []
    for rs in state.ranges:
        words = np.zeros(rs.words.size, np.uint64)
        if rs.frontier.size:
            shifted = rs.frontier - 64 * rs.first_word
            frontier_bitmap(shifted, words)
        spans.append((rs.first_word, words))
    return state.worker, spans


def frontier_bits(*shares, num_vertices: int) -> FrontierBits:
    """The whole frontier bitmap from every owner's :func:`owner_words`."""
    bits = empty_bitmap(num_vertices)
    for _worker, spans in shares:
        for first, words in spans:
            bits[first : first + words.size] |= words
    return FrontierBits(bits, _here())


def as_frontier(front: StepFrontier, bits: FrontierBits | None, bounds: np.ndarray,
                num_vertices: int) -> Frontier:
    """The :class:`~taskbfs.bfs.state.Frontier` the shared step code reads: the visited
    bitmap holds what the owner knows (its own ranges; the owner barrier filters the
    rest)."""
    visited = empty_bitmap(num_vertices)
    for first, words in front.spans:
        visited[first : first + words.size] |= words
    offsets = np.zeros(bounds.size, dtype=np.int64)
    offsets[front.task + 1 :] = front.vertices.size
    return Frontier(front.level, front.direction, front.vertices, offsets,
                    None if bits is None else bits.bits, visited, bounds)


def split_for_owners(found, frontier: Frontier, owners: list, task: int, inbound: int) -> list:
    """A step's :class:`~taskbfs.bfs.state.Discoveries` as one :class:`Piece` per owner
    (``owners[w]``: the ranges owner ``w`` keeps, in its order)."""
    here = _here()
    device = (found.h2d_bytes, found.d2h_bytes, round(found.kernel_seconds * 1e9))
    if frontier.direction == TOP_DOWN and (found.offsets is None or found.ranges is not None):
        found = bucketed(found, frontier.bounds)  # by task ranges, whatever the step grouped by
    pieces = []
    for tasks in owners:
        if frontier.direction == BOTTOM_UP:  # a bottom-up step finds only its own vertices
            sizes = [found.vertices.size if t == task else 0 for t in tasks]
            vertices, parents = found.vertices, found.parents
        else:
            sizes = [int(found.offsets[t + 1] - found.offsets[t]) for t in tasks]
            cuts = [slice(int(found.offsets[t]), int(found.offsets[t + 1])) for t in tasks]
            vertices = _joined([found.vertices[c] for c in cuts], found.vertices)
            parents = _joined([found.parents[c] for c in cuts], found.parents)
        if not sum(sizes):
            vertices = parents = found.vertices[:0]
        offsets = np.zeros(len(tasks) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        pieces.append(Piece(task, here, vertices, parents, offsets, int(found.edges_examined),
                            int(found.vertices.size), device, inbound))
    return pieces


def _joined(parts, like):
    parts = [p for p in parts if p.size]
    if not parts:
        return like[:0]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _owner_step(step, args, owners, bounds, num_vertices):
    part, front, *rest = args
    bits = rest[0] if rest else None
    here = _here()
    inbound = front.nbytes if front.worker != here else 0
    if bits is not None and bits.worker != here:
        inbound += bits.bits.nbytes
    frontier = as_frontier(front, bits, np.asarray(bounds, dtype=np.int64), num_vertices)
    pieces = split_for_owners(step(part, frontier), frontier, owners, part.task, inbound)
    return pieces[0] if len(pieces) == 1 else tuple(pieces)


def _owner_step_smp(*args, owners, bounds, num_vertices):
    return _owner_step(step_smp, args, owners, bounds, num_vertices)


def _owner_step_cuda(*args, owners, bounds, num_vertices):
    return _owner_step(step_cuda, args, owners, bounds, num_vertices)


#: The step of an owned search: ``ins = [slice, StepFrontier (, FrontierBits)]``, one
#: :class:`Piece` out per owner worker. Named as the other step so that traces read alike.
OWNER_STEP = Task("bfs_step", smp=_owner_step_smp, cuda=_owner_step_cuda)


def owner_barrier(state: OwnerState, *pieces, level: int) -> OwnerState:
    """Merge the pieces the steps of ``level`` sent this owner into its state (in place)
    and leave the counts the client needs in ``state.report``."""
    start = time.time()
    depth = level + 1
    remote = local = 0
    for p in pieces:
        if p.worker != state.worker:
            remote += p.nbytes
        else:
            local += p.nbytes
    for i, rs in enumerate(state.ranges):
        total = sum(int(p.offsets[i + 1] - p.offsets[i]) for p in pieces)
        out = np.empty(total, dtype=np.int64)
        n, edges = 0, 0
        for p in pieces:
            if p.offsets[i + 1] > p.offsets[i]:
                n, e = accept_into_range(p.vertices, p.parents, int(p.offsets[i]),
                                         int(p.offsets[i + 1]), rs.lo, rs.words, rs.first_word,
                                         rs.degrees, depth, rs.distances, rs.parents, out, n)
                edges += e
        rs.frontier, rs.frontier_edges = out[:n], int(edges)
        rs.unvisited -= n
    mine = {rs.task for rs in state.ranges}
    steps = [p for p in pieces if p.task in mine]
    state.report = {
        "tasks": [rs.task for rs in state.ranges],
        "counts": [int(rs.frontier.size) for rs in state.ranges],
        "edges": [rs.frontier_edges for rs in state.ranges],
        "unvisited": [rs.unvisited for rs in state.ranges],
        "words": sum(rs.words.nbytes for rs in state.ranges),
        "steps": [(p.task, p.edges_examined, p.found, *p.device) for p in steps],
        "inbound": sum(p.inbound for p in steps),
        "remote": remote, "local": local, "start": start, "stop": time.time(),
    }
    return state


def owner_report(state: OwnerState) -> dict:
    """The counts of the owner's last barrier (small; the client reads them each level)."""
    return state.report


def range_result(state: OwnerState, task: int):
    """``(distances, parents)`` of range ``task`` (the state's own arrays: no barrier
    writes them once the search has ended)."""
    rs = next(r for r in state.ranges if r.task == task)
    return rs.distances, rs.parents


# ====================================================================== the client's loop
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
    """The client side of a search whose barrier is split per owner worker.

    Parameters
    ----------
    program : Program
        The search's program (its policy places the steps).
    placed : PlacedGraph
        The graph's slices on the workers; each worker holding slices owns their ranges.
    slices : list of list of str
        Per range, the data names of its slice (and transposed slice) in ``program``.
    source : int
    first : LevelSummary
        The level-0 summary (``state.first_summary``).
    direction_mode : str
    alpha, beta : float
        Beamer's parameters, as the single barrier reads them.
    wait : callable
        ``wait(futures, workers)`` gathers futures within the call's timeout, failing
        when one of ``workers`` (the owners) left the cluster.
    settle : callable
        ``settle(futures)`` waits until futures are computed (left where they are).
    report : callable
        ``report(summaries) -> bool``: hands summaries on; True once the search ended.
    """

    def __init__(self, program, placed, slices, source: int, first: LevelSummary,
                 direction_mode: str, alpha: float, beta: float, wait, settle, report):
        self.program = program
        self.client = program.client
        self.placed = placed
        self.bounds = placed.parts.bounds
        self.n = int(self.bounds[-1])
        self.mean_degree = placed.num_arcs / max(self.n, 1)
        self.slices = slices
        self.source = source
        self.summaries = [first]
        self.mode, self.alpha, self.beta = direction_mode, alpha, beta
        self.wait, self.settle, self.report = wait, settle, report
        self.exchange: list[dict] = []
        self.workers, self.owner_of = self._owners()
        self.owned = [np.flatnonzero(self.owner_of == w).tolist() for w in range(len(self.workers))]
        self.states: list = []

    def _owners(self):
        """The worker owning each range: one holding its slice (the fewest-loaded of them,
        where Dask made copies), and the list of owners."""
        who = self.client.who_has(self.placed.slices)
        if not all(who.get(f.key) for f in self.placed.slices):  # still being built, or lost
            self.settle(self.placed.slices)
            who = self.client.who_has(self.placed.slices)
        load: dict[str, int] = {}
        holders = []
        for f in self.placed.slices:
            holder = min(sorted(who[f.key]), key=lambda w: load.get(w, 0))
            load[holder] = load.get(holder, 0) + 1
            holders.append(holder)
        workers = sorted(load)
        index = {w: i for i, w in enumerate(workers)}
        return workers, np.array([index[h] for h in holders], dtype=np.int64)

    def _pinned(self, w: int, func, *args, **kwargs):
        return self.client.submit(func, *args, workers=[self.workers[w]],
                                  allow_other_workers=False, pure=False, **kwargs)

    def run(self):
        """Every level; returns ``(summaries, pieces, exchange)``: the result pieces (one
        future of ``(distances, parents)`` per range, in vertex order)."""
        self.states = [self._pinned(w, init_owner, *[self.placed.slices[t] for t in tasks],
                                    source=self.source, num_vertices=self.n)
                       for w, tasks in enumerate(self.owned)]
        summary = self.summaries[0]
        while summary.frontier_size:
            summary = self._level(summary)
            self.summaries.append(summary)
            if self.report([summary]):
                break
        pieces = [self._pinned(int(self.owner_of[t]), range_result, self.states[self.owner_of[t]], t)
                  for t in range(self.bounds.size - 1)]
        return self.summaries, pieces, pd.DataFrame(self.exchange)

    def _level(self, summary: LevelSummary) -> LevelSummary:
        """Submit the level ``summary`` opens, wait for its owners' reports, return the
        next summary."""
        program, level, direction = self.program, summary.level, summary.direction
        working = np.flatnonzero(summary.frontier_counts).tolist()
        bits = {}
        if direction == BOTTOM_UP:
            shares = [self._pinned(w, owner_words, s) for w, s in enumerate(self.states)]
            for w in sorted({int(self.owner_of[t]) for t in working}):
                bits[w] = self._pinned(w, frontier_bits, *shares, num_vertices=self.n)
        outs = []
        kwargs = {"owners": self.owned, "bounds": self.bounds, "num_vertices": self.n}
        with program.batch():
            for t in working:
                w = int(self.owner_of[t])
                program.put_future(f"front/{t}", self._pinned(
                    w, step_frontier, self.states[w], t, level, direction))
                ins = self.slices[t][-1:] if direction == BOTTOM_UP else self.slices[t][:1]
                ins = [*ins, f"front/{t}"]
                if w in bits:
                    program.put_future(f"bits/{w}", bits[w])
                    ins.append(f"bits/{w}")
                names = [f"to/{level}/{t}/{o}" for o in range(len(self.workers))]
                size = int(summary.sizes[t])
                program.submit(OWNER_STEP, ins=ins, outs=names, kwargs=kwargs, task_id=t,
                               size=size, tags={"level": level, "task": t,
                                                "direction": direction, "size": size})
                outs.append(names)
        for w in range(len(self.workers)):
            pieces = [program.future(names[w]) for names in outs]
            self.states[w] = self._pinned(w, owner_barrier, self.states[w], *pieces, level=level)
        reports = self.wait([self._pinned(w, owner_report, s) for w, s in enumerate(self.states)],
                            self.workers)
        for names in outs:
            for name in names:
                program.forget(name)
        merged = self._merged(reports)
        self.exchange.append(self._moved(level, direction, merged, bits))
        return self._next_summary(summary, merged)

    def _merged(self, reports) -> _Level:
        tasks = self.bounds.size - 1
        counts, edges, unvisited = (np.zeros(tasks, np.int64) for _ in range(3))
        examined, found = np.zeros(tasks, np.int64), np.zeros(tasks, np.int64)
        device, words, moved = [], {}, {"remote": 0, "local": 0, "inbound": 0}
        for w, r in enumerate(reports):
            idx = np.asarray(r["tasks"], dtype=np.int64)
            counts[idx], edges[idx], unvisited[idx] = r["counts"], r["edges"], r["unvisited"]
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

    def _moved(self, level: int, direction: str, merged: _Level, bits: dict) -> dict:
        """Bytes the level moved: the steps' pieces (between workers and within one), the
        frontier bitmap's shares (each owner assembling it gets every other owner's words)
        and the step frontiers read on another worker than their owner's (GPU steps)."""
        total_words = sum(merged.words.values())
        return {"level": level, "direction": direction, "owners": len(self.workers),
                "pieces_remote_bytes": merged.moved["remote"],
                "pieces_local_bytes": merged.moved["local"],
                "bitmap_remote_bytes": sum(total_words - merged.words[w] for w in bits),
                "frontier_remote_bytes": merged.moved["inbound"]}

    def _next_summary(self, summary: LevelSummary, merged: _Level) -> LevelSummary:
        """Beamer's rule on the summed counts, as ``state.next_level`` applies it."""
        n_new = int(merged.counts.sum())
        frontier_edges = int(merged.edges.sum())
        unexplored = summary.unexplored_edges - frontier_edges
        direction = switch_direction(self.mode, summary.direction, n_new, frontier_edges,
                                     unexplored, self.n, self.alpha, self.beta,
                                     previous_size=summary.frontier_size)
        bottom_up = direction == BOTTOM_UP and n_new
        counts = merged.unvisited.copy() if bottom_up else merged.counts
        return LevelSummary(
            level=summary.level + 1, direction=direction, frontier_counts=counts,
            step_sizes=step_sizes(direction, counts, None if bottom_up else merged.edges,
                                  self.mean_degree),
            frontier_size=n_new, frontier_edges=frontier_edges,
            edges_examined=merged.examined, unexplored_edges=unexplored, found=merged.found,
            barrier_start=merged.start, barrier_stop=merged.stop, device_stats=merged.device,
            reached=self.n - int(merged.unvisited.sum()))


def owned_search(program, placed, slices, source: int, first: LevelSummary, direction_mode: str,
                 alpha: float, beta: float, wait, settle, report):
    """Run :class:`OwnedSearch`; ``(summaries, pieces, exchange)``."""
    return OwnedSearch(program, placed, slices, source, first, direction_mode, alpha, beta,
                       wait, settle, report).run()
