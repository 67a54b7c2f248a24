"""An owner's steps and barrier: a step's pairs split into one piece per owner, and the pieces an owner receives accepted into its state."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from taskbfs.kernels.assembly import result_dtype
from taskbfs.kernels.bitmap import ids_of_words
from taskbfs.kernels.merge import (
    accept_share,
    accept_spans_into_range,
    set_bits_share,
)
from taskbfs.runtime import Task, on_threads, publish
from taskbfs.search.included import BARRIER_NAME
from taskbfs.search.owner_state import (
    NO_VERTICES,
    REPORT,
    OwnerFrontier,
    OwnerState,
    RangeState,
    as_frontier,
    frontier_bits,
    this_worker,
)
from taskbfs.search.state import BOTTOM_UP, TOP_DOWN, Frontier, bucketed
from taskbfs.search.steps import STEP_NAME, step_cuda, step_smp

#: Pairs of a range from which its owner accepts them in shares on the host's threads
#: (fewer cost less than starting the threads).
_PARALLEL_ACCEPT_MIN = 1 << 18


#: Bytes of a top-down level's candidate pairs times its owners up to which every owner
#: reads all of a step's pieces: a getitem task per step and owner costs more than the bytes.
WHOLE_PIECES_BYTES = 1 << 20


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

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.parents.nbytes + self.offsets.nbytes

    def __sizeof__(self) -> int:  # what Dask counts
        return 64 + self.nbytes


def split_for_owners(found, frontier: Frontier, owner_of: np.ndarray, task: int,
                     inbound: int) -> list:
    """A step's raw :class:`~taskbfs.search.state.Discoveries` as one :class:`Piece` per
    owner (``owner_of[t]``: the owner of range t; an owner's ranges in ascending order)."""
    here = this_worker()
    device = (found.h2d_bytes, found.d2h_bytes, round(found.kernel_seconds * 1e9))
    if frontier.direction == TOP_DOWN and found.offsets is None:
        found = bucketed(found, frontier.bounds)  # by task ranges
    pieces = []
    for w in range(int(owner_of.max()) + 1):
        tasks = np.flatnonzero(owner_of == w)
        if frontier.direction == BOTTOM_UP:  # a bottom-up step finds only its own vertices
            sizes = np.where(tasks == task, found.vertices.size, 0)
            vertices, parents = found.vertices, found.parents
        else:
            sizes = np.diff(found.offsets)[tasks]
            vertices, parents = _owned(found, tasks)
        offsets = np.zeros(len(tasks) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        if not offsets[-1]:
            vertices = parents = found.vertices[:0]
        pieces.append(Piece(task, here, vertices, parents, offsets, int(found.edges_examined),
                            int(found.vertices.size), device, inbound))
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
    here = this_worker()
    inbound = 0
    if front.worker != here:  # away from its owner: what it read from other workers
        inbound = front.nbytes + sum(8 * sum(w.size for _, w in spans)
                                     for worker, spans in shares if worker != here)
    bits = frontier_bits(front, level, shares) if shares else None
    frontier = as_frontier(front, level, direction, bits)
    found = step(part, frontier)
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
OWNER_STEP = Task(STEP_NAME, smp=_owner_step_smp, cuda=_owner_step_cuda)


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
    ended = received == 0
    # ranges no piece names keep their state, but their frontier ends
    for i in np.flatnonzero(ended & (front.counts > 0)).tolist():
        front.frontiers[i] = NO_VERTICES
    front.counts[ended] = 0
    state.edges[ended] = 0
    front.bits[:] = 0  # the accepted vertices' bits are set as they are accepted
    for i in np.flatnonzero(received).tolist():
        rs = state.ranges[i]
        starts, stops = spans[:, i], spans[:, i + 1]
        frontier, edges = _accept(
            vertices, parents, starts, stops, rs, front.visited[rs.first_word : rs.stop_word],
            depth, int(received[i]), front.bits)
        front.frontiers[i], front.counts[i], state.edges[i] = frontier, frontier.size, edges
        front.unvisited[i] -= frontier.size
    mine = [p for p in pieces if p.task in state.owns]
    reached, as_words = reached_report(front, state)
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




def _accept(vertices, parents, starts, stops, rs: RangeState, words, depth: int, total: int,
            bits: np.ndarray) -> tuple:
    """The first unvisited occurrence of each vertex of one range's pairs (``starts[j] ..
    stops[j]``, ``total`` of them) accepted into its state, its frontier bit set in
    ``bits``; ``(accepted vertices, edges leaving them)``. From
    :data:`_PARALLEL_ACCEPT_MIN` pairs on, on the host's threads in equal shares
    (:func:`~taskbfs.kernels.merge.accept_share`), each share's vertices then set in
    ``bits`` and moved into one array by its thread."""
    out = np.empty(total, dtype=np.int64)
    cores = os.cpu_count() or 1
    least = _PARALLEL_ACCEPT_MIN
    shares = min(cores, total // max(1, least // 4))
    if total < least or shares < 2:
        n, edges = accept_spans_into_range(vertices, parents, starts, stops, rs.lo, words,
                                           rs.first_word, rs.offsets, depth, rs.distances,
                                           rs.parents, out)
        set_bits_share(out, 0, n, bits)
        return out[:n], edges
    cuts = np.linspace(0, total, shares + 1).astype(np.int64)
    made = [(0, 0)] * shares

    def share(k):
        made[k] = accept_share(vertices, parents, starts, stops, rs.lo, words, rs.first_word,
                               rs.offsets, depth, rs.distances, rs.parents, out,
                               int(cuts[k]), int(cuts[k + 1]))
        set_bits_share(out, int(cuts[k]), int(cuts[k]) + made[k][0], bits)

    on_threads(share, shares, cores)
    counts = np.array([m[0] for m in made], dtype=np.int64)
    edges = sum(e for _, e in made)
    if counts.sum() == total:  # every pair accepted (a bottom-up level's): in place
        return out, edges
    at = np.concatenate([[0], np.cumsum(counts)])
    frontier = np.empty(int(at[-1]), dtype=np.int64)

    def move(k):
        frontier[at[k] : at[k + 1]] = out[cuts[k] : cuts[k] + counts[k]]

    on_threads(move, shares, cores)
    return frontier, edges


def reached_report(front: OwnerFrontier, state: OwnerState) -> tuple[bytes, bool]:
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
    """One owner's new frontier as its ranges' bitmap words (:func:`reached_report`),
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
        return np.concatenate(parts) if parts else NO_VERTICES


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
