"""A graph built piece by piece: edge chunks in, one CSR slice per vertex range out.

What it returns
---------------
The chunk-level steps of a build that never holds the whole edge list in one place
(the Dask side, :mod:`taskbfs.placed.graph`, runs each as a task on the workers):

1. per edge chunk, :func:`arc_histogram`: its arcs counted per bin of vertex ids;
2. once, :func:`range_bounds`: vertex ranges of about equal arc counts, from the summed
   histograms;
3. per edge chunk, :func:`split_arcs`: its arcs grouped by the range that owns their
   source, as local keys (the send side of an all-to-all);
4. per range, :func:`range_csr`: the keys every chunk sent it, turned into the range's
   CSR rows (the receive side).

:func:`join_rows` cuts a new range out of built ones (another partition of the same
graph) and :func:`piece_arcs` lists a built range's arcs again (to build its transpose).

Encoding
--------
An arc ``u → v`` owned by the range ``[lo, hi)`` travels as the int64 key
``(u - lo) * n + v``. The rows of a range are built exactly as
:meth:`Graph.from_edges <taskbfs.graph.Graph.from_edges>` builds the whole graph's:
self-loops dropped, both directions when undirected, sorted, duplicates dropped; so the
ranges, side by side, are that graph's CSR.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from taskbfs.errors import InsufficientMemoryError, InvalidParameterError
from taskbfs.graph._csr import _drop_repeats, index_dtype
from taskbfs.graph.kronecker import (
    _check_edgefactor,
    _check_scale,
    _check_seed,
    _edges,
    _num_edges,
)
from taskbfs.graph.partition import _edge_balanced_bounds, _spread

__all__ = [
    "MAX_BUILD_VERTICES",
    "BuildPlan",
    "arc_histogram",
    "build_plan",
    "join_rows",
    "kronecker_chunk",
    "kronecker_chunk_count",
    "piece_arcs",
    "range_bounds",
    "range_csr",
    "split_arcs",
]

#: Largest vertex count a chunked build takes: a range's local key ``(u - lo) * n + v``
#: must fit int64.
MAX_BUILD_VERTICES = 1 << 31

#: Bins of the vertex ids whose owning range :func:`split_arcs` looks up in a table (then
#: steps over the ranges that start inside the bin), instead of a binary search per arc.
OWNER_TABLE_BINS = 1 << 16

#: Row blocks per thread in :func:`range_csr`: more blocks than threads, so that a block
#: of heavy rows does not leave the other threads idle.
BLOCKS_PER_THREAD = 16


# ====================================================================== Kronecker chunks
def kronecker_chunk_count(scale: int, edgefactor: int, seed: int, chunk_edges: int) -> int:
    """Number of chunks of ``chunk_edges`` edges in the Kronecker edge list (the
    arguments checked as :func:`~taskbfs.graph.kronecker_edges` checks them)."""
    _check_seed(seed)
    total = _num_edges(_check_scale(scale), _check_edgefactor(edgefactor))
    return max(1, -(-total // int(chunk_edges)))


def kronecker_chunk(scale: int, edgefactor: int, seed: int, chunk: int, chunk_edges: int):
    """Chunk ``chunk`` of the Kronecker edge list cut into chunks of ``chunk_edges``:
    what :func:`~taskbfs.graph.kronecker_edges` gives for that chunk when its chunks
    have ``chunk_edges`` edges (the edges from ``chunk * chunk_edges`` on). On this
    thread alone: a worker runs chunks on its other threads at the same time."""
    scale, edgefactor, seed = _check_scale(scale), _check_edgefactor(edgefactor), _check_seed(seed)
    total = _num_edges(scale, edgefactor)
    lo, hi = chunk * chunk_edges, min(total, (chunk + 1) * chunk_edges)
    return _edges(scale, seed, lo, hi, np.int64, threads=1)


# ====================================================================== the partition
def arc_histogram(src: np.ndarray, dst: np.ndarray, num_vertices: int, bins: int,
                  directed: bool) -> np.ndarray:
    """Arcs per bin of ``ceil(num_vertices / bins)`` consecutive source ids (self-loops
    left out, both directions counted when undirected); int64 of length ``bins``."""
    width = -(-num_vertices // bins)
    counts = np.zeros(bins, dtype=np.int64)
    _count_bins(src, dst, np.int64(width), directed, counts)
    return counts


def range_bounds(histogram: np.ndarray, num_vertices: int, ranges: int) -> np.ndarray:
    """``ranges`` + 1 strictly increasing vertex ids from 0 to ``num_vertices``: cuts at
    bin edges where the cumulative arc count of ``histogram`` (from
    :func:`arc_histogram`) crosses k * arcs / ranges, as ``balance="edges"`` cuts."""
    if not 1 <= ranges <= min(num_vertices, histogram.size):
        raise InvalidParameterError(
            f"ranges must be in 1..{min(num_vertices, histogram.size)}, got {ranges}")
    width = -(-num_vertices // histogram.size)
    cumulative = np.concatenate([[0], np.cumsum(histogram)])
    bounds = np.minimum(_edge_balanced_bounds(cumulative, ranges) * width, num_vertices)
    bounds[0], bounds[-1] = 0, num_vertices
    return _spread(bounds, num_vertices)


# ====================================================================== the all-to-all
def split_arcs(src: np.ndarray, dst: np.ndarray, bounds: np.ndarray, num_vertices: int,
               directed: bool, wanted: np.ndarray | None = None):
    """The arcs of one edge chunk grouped by the range owning their source (``wanted``:
    a bool per range, the arcs of the other ranges left out: a build in passes,
    :func:`build_plan`).

    Returns
    -------
    keys : ndarray of int64
        ``(u - lo) * n + v`` for every arc ``u → v`` (no self-loops; both directions
        when undirected), range by range.
    offsets : ndarray of int64, shape (ranges + 1,)
        Range ``r``'s keys are ``keys[offsets[r]:offsets[r + 1]]``.
    """
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    width = -(-num_vertices // min(num_vertices, OWNER_TABLE_BINS))
    table = np.searchsorted(bounds, np.arange(0, num_vertices, width), side="right") - 1
    wanted = np.ones(bounds.size - 1, dtype=np.bool_) if wanted is None \
        else np.asarray(wanted, dtype=np.bool_)
    counts = np.zeros(bounds.size - 1, dtype=np.int64)
    _count_owners(src, dst, bounds, table, np.int64(width), directed, wanted, counts)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    keys = np.empty(offsets[-1], dtype=np.int64)
    _fill_keys(src, dst, bounds, table, np.int64(width), np.int64(num_vertices), directed,
               wanted, offsets[:-1].copy(), keys)
    return keys, offsets


# ====================================================================== memory
#: Bytes a build on the workers holds per arc of the ranges a worker builds in one pass,
#: beyond their CSR: the keys sent to the worker that owns them (8) and
#: :func:`range_csr`'s buffer of a group of them (8 / RANGE_GROUPS, rounded up) (the
#: splits' keys wait on the chunk tasks' workers a chunk at a time:
#: :data:`CHUNK_BYTES_PER_EDGE`). Measured: scale 20 on 3 workers in 2 passes peaked
#: 125-156 MiB above idle for 43 MiB of CSR each, with 24 here predicting 198.
PASS_BYTES_PER_ARC = 10
#: Bytes a running chunk task holds per edge of its chunk: the pair of int64 ids (16)
#: and its split's keys (16, both arcs of an undirected edge; in a build in P passes,
#: 16 / P: a pass keeps the keys of its ranges only).
CHUNK_BYTES_PER_EDGE = 16
SPLIT_BYTES_PER_EDGE = 16
#: Most passes a build is cut into (each generates or reads every chunk again).
MAX_PASSES = 64
#: Most passes a build takes to keep within ``peak_over_csr`` (:func:`build_plan`), and
#: the least share of the CSR a worker holds for it to (below, a worker's peak is mostly
#: its process and its chunk tasks: passes would add time, not save memory).
MAX_CAPPED_PASSES = 4
MIN_CAPPED_CSR = 64 << 20


@dataclass(frozen=True)
class BuildPlan:
    """How a build on the workers fits their memory (:func:`build_plan`).

    Attributes
    ----------
    passes : int
        The ranges are built in this many passes, each over ``1 / passes`` of every
        worker's ranges; a pass's keys are made, sent and turned into rows before the
        next pass's are made.
    ranges : int
        Vertex ranges to build (the ranges asked for, more where the passes need them:
        at least one range of every worker in each pass).
    need : int
        Bytes the busiest worker is expected to hold at the build's peak, beyond what it
        holds now: its share of the CSR, one pass's keys, its running chunk tasks and
        its share of the edge chunks held through the build.
    csr : int
        That worker's share of the CSR.
    """

    passes: int
    ranges: int
    need: int
    csr: int


def build_plan(arcs: int, num_vertices: int, ranges: int, free: list, threads: list | None = None,
               chunk_edges: int = 0, held: int = 0, what: str = "building this graph",
               peak_over_csr: float | None = None) -> BuildPlan:
    """The fewest passes that fit every worker's memory: a :class:`BuildPlan`, or
    :class:`~taskbfs.errors.InsufficientMemoryError` before any work when even
    :data:`MAX_PASSES` passes would not fit. With ``peak_over_csr``, the fewest that
    also keep each worker's estimated peak (less its running chunk tasks) within that
    multiple of its share of the CSR, where at most :data:`MAX_CAPPED_PASSES` passes can
    and the share is at least :data:`MIN_CAPPED_CSR` (memory left for the search that
    follows; more passes than that would slow every build down for it).

    Parameters
    ----------
    arcs, num_vertices : int
        The graph's arcs (an estimate before they are counted) and vertices.
    ranges : int
        Vertex ranges asked for; range ``r`` goes to worker ``r * W // ranges`` (in the
        order of ``free``), each range with about ``arcs / ranges`` arcs.
    free : list of (int or None)
        Per worker, the bytes it can still take before Dask pauses it (None: no limit).
    threads : list of int, optional
        Per worker, the chunk tasks it runs at once (default 1 each).
    chunk_edges : int
        Edges per chunk task (its working memory: :data:`CHUNK_BYTES_PER_EDGE` an edge,
        and its split's keys).
    held : int
        Bytes of edge chunks held on the workers through the build (spread by threads).
    peak_over_csr : float, optional
        See above (``distributed._PEAK_OVER_CSR`` in taskbfs.search).
    """
    workers = len(free)
    threads = [1] * workers if threads is None else [max(1, int(t)) for t in threads]
    itemsize = 4 if num_vertices <= np.iinfo(np.int32).max else 8
    total_threads = sum(threads) or 1
    fitting = None  # the fewest passes that fit the free memory, above peak_over_csr
    for passes in range(1, MAX_PASSES + 1):
        count = max(1, min(max(ranges, passes * workers), num_vertices))
        per_worker = np.bincount(np.arange(count) * workers // count, minlength=workers)
        needs, csrs, over = [], [], []
        for w in range(workers):
            mine = int(per_worker[w])
            share = arcs * mine / count
            csrs.append(itemsize * share + 8 * num_vertices * mine / count)
            per_pass = share * -(-mine // passes) / max(1, mine)  # its largest pass
            chunk = threads[w] * chunk_edges * (CHUNK_BYTES_PER_EDGE
                                                + SPLIT_BYTES_PER_EDGE / passes)
            needs.append(csrs[w] + PASS_BYTES_PER_ARC * per_pass + chunk
                         + held * threads[w] / total_threads)
            over.append(needs[w] - chunk - peak_over_csr * csrs[w]
                        if peak_over_csr and csrs[w] >= MIN_CAPPED_CSR else 0)
        short = [n - f for n, f in zip(needs, free, strict=True) if f is not None]
        w = int(np.argmax(needs))
        if not short or max(short) <= 0:
            plan = BuildPlan(passes, count, int(needs[w]), int(csrs[w]))
            if max(over) <= 0:
                return plan
            fitting = fitting or plan
            if passes >= MAX_CAPPED_PASSES:
                return fitting
        if count >= num_vertices:
            break
    if fitting is not None:
        return fitting
    w = max((w for w in range(workers) if free[w] is not None), key=lambda w: needs[w] - free[w])
    raise InsufficientMemoryError(
        f"{what} on the workers needs about {_mib(needs[w])} more on a worker that can take "
        f"{_mib(free[w])} (memory_limit x distributed.worker.memory.pause, less what its "
        f"process uses now), even built in {passes} passes: {_mib(csrs[w])} of it is the "
        f"worker's share of the CSR ({_mib(arcs * itemsize + 8 * num_vertices)} in all over "
        f"{workers} workers, which can take {', '.join(_mib(f) for f in free if f is not None)})"
        f"{f', {_mib(held * threads[w] / total_threads)} edge chunks held' if held else ''}; "
        f"add workers or memory", int(needs[w]), int(free[w]))


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def range_csr(pieces, lo: int, hi: int, num_vertices: int, threads: int = 1,
              groups: int | None = None):
    """Rows ``[lo, hi)`` of the graph from the key arrays (:func:`split_arcs`) every
    chunk sent to this range: ``(indptr_local int64[hi - lo + 1], indices)``, rows
    sorted, duplicates dropped, ``indices`` of the graph's index dtype.

    A bucket sort on ``threads`` threads: the rows are cut into blocks of consecutive rows
    (:data:`BLOCKS_PER_THREAD` per thread), the blocks into ``groups`` (default
    :data:`RANGE_GROUPS`) of about equal keys; group by group, every key of the group is
    moved into its block's place in a buffer, then each block is sorted and its repeats
    dropped on its own, and written out as its rows. Beyond the pieces and the CSR it
    holds the keys of one group (8 bytes a key): a group at a time, not the whole range.
    """
    rows = hi - lo
    n = np.int64(num_vertices)
    pieces = [np.asarray(p, dtype=np.int64) for p in pieces] or [np.empty(0, dtype=np.int64)]
    width = max(1, -(-rows // (BLOCKS_PER_THREAD * threads)))
    blocks = max(1, -(-rows // width))
    span = np.int64(width) * n  # block b's keys: [b * span, (b + 1) * span)
    counts = np.zeros((len(pieces), blocks), dtype=np.int64)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: _count_blocks(pieces[i], span, counts[i]), range(len(pieces))))
        per_block = counts.sum(axis=0)
        total = int(per_block.sum())
        # (pages of the tail that repeats leave unwritten are never touched)
        indices = np.empty(total, dtype=index_dtype(num_vertices))
        buffer = np.empty(_largest_group(per_block, groups), dtype=np.int64)
        written = 0
        for b0, b1 in _block_groups(per_block, groups or RANGE_GROUPS):
            written = _group_rows(pool, pieces, counts[:, b0:b1], span, b0, b1, buffer, n,
                                  indptr, indices, written)
    np.cumsum(indptr, out=indptr)
    return indptr, indices[:written]


def _group_rows(pool, pieces, part, span, b0: int, b1: int, keys, n, indptr, indices,
                written: int) -> int:
    """:func:`range_csr`'s work on blocks ``b0 .. b1 - 1`` (``part``: each piece's keys
    per block), their rows written from ``indices[written]`` on; returns the new end."""
    ends = np.cumsum(part.T).reshape(b1 - b0, len(pieces)).T  # block by block
    cursors = ends - part
    starts, stops = cursors[0].copy(), ends[-1]  # (the scatter moves the cursors on)
    list(pool.map(lambda i: _scatter_blocks(pieces[i], span, np.int64(b0), np.int64(b1),
                                            cursors[i], keys), range(len(pieces))))
    kept = np.fromiter(pool.map(lambda b: _sorted_distinct(keys[starts[b]:stops[b]]),
                                range(b1 - b0)), dtype=np.int64, count=b1 - b0)
    out = np.full(b1 - b0 + 1, written, dtype=np.int64)
    out[1:] += np.cumsum(kept)
    list(pool.map(lambda b: _keys_to_rows(keys[starts[b]:starts[b] + kept[b]], n, indptr,
                                          indices[out[b]:out[b + 1]]), range(b1 - b0)))
    return int(out[-1])


#: Groups of blocks :func:`range_csr` sorts one after the other (its buffer holds one
#: group's keys: a quarter of the range's).
RANGE_GROUPS = 4


def _block_groups(per_block: np.ndarray, groups: int) -> list[tuple[int, int]]:
    """``(first, stop)`` blocks of up to ``groups`` runs of consecutive blocks of about
    equal keys."""
    cumulative = np.concatenate([[0], np.cumsum(per_block)])
    cuts = np.searchsorted(cumulative, np.arange(1, groups) * cumulative[-1] / groups)
    cuts = np.unique(np.clip(np.concatenate([[0], cuts, [per_block.size]]), 0, per_block.size))
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def _largest_group(per_block: np.ndarray, groups: int | None) -> int:
    return max(int(per_block[a:b].sum())
               for a, b in _block_groups(per_block, groups or RANGE_GROUPS))


def _sorted_distinct(keys: np.ndarray) -> int:
    """Sort ``keys`` in place (numpy's sort, which releases the GIL) and move its distinct
    values to the front; returns their number."""
    keys.sort()
    return _drop_repeats(keys)


def piece_arcs(indptr: np.ndarray, indices: np.ndarray, lo: int):
    """Every arc of a built range as ``(src, dst)`` int64 arrays (global ids)."""
    src = np.repeat(np.arange(lo, lo + indptr.size - 1, dtype=np.int64), np.diff(indptr))
    return src, indices.astype(np.int64)


def join_rows(lo: int, hi: int, pieces):
    """Rows ``[lo, hi)`` taken from built ranges ``pieces``, a sequence of
    ``(piece_lo, indptr_local, indices)`` in vertex order that covers ``[lo, hi)``;
    returns ``(indptr_local, indices)``."""
    indptrs, parts = [], []
    start = 0
    for plo, indptr, indices in pieces:
        a, b = max(lo, plo) - plo, min(hi, plo + indptr.size - 1) - plo
        if a >= b:
            continue
        local = indptr[a : b + 1]
        indptrs.append(local[1:] - local[0] + start)
        parts.append(indices[local[0] : local[-1]])
        start += int(local[-1] - local[0])
    indptr = np.concatenate([np.zeros(1, dtype=np.int64), *indptrs])
    if indptr.size != hi - lo + 1:
        raise InvalidParameterError(f"the pieces do not cover rows {lo}..{hi - 1}")
    return indptr, np.concatenate(parts)


# ====================================================================== compiled loops
@njit(nogil=True, cache=True)
def _count_bins(src, dst, width, directed, counts):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        counts[u // width] += 1
        if not directed:
            counts[v // width] += 1


@njit(nogil=True, cache=True)
def _owner(bounds, table, width, v):  # pragma: no cover - numba
    """The range of ``v``: the one holding the first vertex of ``v``'s table bin, or one
    of the (few) ranges that start later in that bin."""
    r = table[v // width]
    while bounds[r + 1] <= v:
        r += 1
    return r


@njit(nogil=True, cache=True)
def _count_owners(src, dst, bounds, table, width, directed, wanted, counts):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        r = _owner(bounds, table, width, u)
        if wanted[r]:
            counts[r] += 1
        if not directed:
            r = _owner(bounds, table, width, v)
            if wanted[r]:
                counts[r] += 1


@njit(nogil=True, cache=True)
def _fill_keys(src, dst, bounds, table, width, n, directed, wanted, cursor, keys):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        r = _owner(bounds, table, width, u)
        if wanted[r]:
            keys[cursor[r]] = (u - bounds[r]) * n + v
            cursor[r] += 1
        if not directed:
            r = _owner(bounds, table, width, v)
            if wanted[r]:
                keys[cursor[r]] = (v - bounds[r]) * n + u
                cursor[r] += 1


@njit(nogil=True, cache=True)
def _count_blocks(keys, span, counts):  # pragma: no cover - numba
    for i in range(keys.size):
        counts[keys[i] // span] += 1


@njit(nogil=True, cache=True)
def _scatter_blocks(keys, span, first, stop, cursor, out):  # pragma: no cover - numba
    """Every key of blocks ``first .. stop - 1`` written at its block's ``cursor`` (then
    moved on by one); the other keys left out."""
    for i in range(keys.size):
        b = keys[i] // span
        if first <= b < stop:
            out[cursor[b - first]] = keys[i]
            cursor[b - first] += 1


@njit(nogil=True, cache=True)
def _keys_to_rows(keys, n, counts, indices):  # pragma: no cover - numba
    """Sorted distinct local keys of whole rows: their targets into ``indices``, one more
    arc counted at ``counts[u + 1]`` per key of row ``u`` (no other block has row ``u``)."""
    for i in range(keys.size):
        u = keys[i] // n
        indices[i] = keys[i] - u * n
        counts[u + 1] += 1
