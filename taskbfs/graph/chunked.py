"""A graph built piece by piece: edge chunks in, one CSR slice per vertex range out.

What it returns
---------------
The chunk-level steps of a build that never holds the whole edge list in one place
(the Dask side, :mod:`taskbfs.search.distributed`, runs each as a task on the workers):

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

import numpy as np
from numba import njit

from taskbfs.errors import InvalidParameterError
from taskbfs.graph._graph import _drop_repeats, index_dtype
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
    "arc_histogram",
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
               directed: bool):
    """The arcs of one edge chunk grouped by the range owning their source.

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
    counts = np.zeros(bounds.size - 1, dtype=np.int64)
    _count_owners(src, dst, bounds, table, np.int64(width), directed, counts)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    keys = np.empty(offsets[-1], dtype=np.int64)
    _fill_keys(src, dst, bounds, table, np.int64(width), np.int64(num_vertices), directed,
               offsets[:-1].copy(), keys)
    return keys, offsets


def range_csr(pieces, lo: int, hi: int, num_vertices: int, threads: int = 1):
    """Rows ``[lo, hi)`` of the graph from the key arrays (:func:`split_arcs`) every
    chunk sent to this range: ``(indptr_local int64[hi - lo + 1], indices)``, rows
    sorted, duplicates dropped, ``indices`` of the graph's index dtype.

    A bucket sort on ``threads`` threads: every key is moved into the block of rows it
    belongs to (blocks of consecutive rows, :data:`BLOCKS_PER_THREAD` per thread), then
    each block is sorted and its repeats dropped on its own, and written out as its rows.
    """
    rows = hi - lo
    n = np.int64(num_vertices)
    pieces = [np.asarray(p, dtype=np.int64) for p in pieces] or [np.empty(0, dtype=np.int64)]
    width = max(1, -(-rows // (BLOCKS_PER_THREAD * threads)))
    blocks = max(1, -(-rows // width))
    span = np.int64(width) * n  # block b's keys: [b * span, (b + 1) * span)
    counts = np.zeros((len(pieces), blocks), dtype=np.int64)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: _count_blocks(pieces[i], span, counts[i]), range(len(pieces))))
        ends = np.cumsum(counts.T).reshape(blocks, len(pieces)).T  # block by block
        cursors = ends - counts
        starts, stops = cursors[0].copy(), ends[-1]  # (the scatter moves the cursors on)
        keys = np.empty(int(stops[-1]), dtype=np.int64)
        list(pool.map(lambda i: _scatter_blocks(pieces[i], span, cursors[i], keys),
                      range(len(pieces))))
        kept = np.fromiter(pool.map(lambda b: _sorted_distinct(keys[starts[b] : stops[b]]),
                                    range(blocks)), dtype=np.int64, count=blocks)
        out = np.zeros(blocks + 1, dtype=np.int64)
        np.cumsum(kept, out=out[1:])
        indptr = np.zeros(rows + 1, dtype=np.int64)
        indices = np.empty(int(out[-1]), dtype=index_dtype(num_vertices))
        list(pool.map(lambda b: _keys_to_rows(keys[starts[b] : starts[b] + kept[b]], n,
                                              indptr, indices[out[b] : out[b + 1]]),
                      range(blocks)))
    np.cumsum(indptr, out=indptr)
    return indptr, indices


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
def _count_owners(src, dst, bounds, table, width, directed, counts):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        counts[_owner(bounds, table, width, u)] += 1
        if not directed:
            counts[_owner(bounds, table, width, v)] += 1


@njit(nogil=True, cache=True)
def _fill_keys(src, dst, bounds, table, width, n, directed, cursor, keys):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        r = _owner(bounds, table, width, u)
        keys[cursor[r]] = (u - bounds[r]) * n + v
        cursor[r] += 1
        if not directed:
            r = _owner(bounds, table, width, v)
            keys[cursor[r]] = (v - bounds[r]) * n + u
            cursor[r] += 1


@njit(nogil=True, cache=True)
def _count_blocks(keys, span, counts):  # pragma: no cover - numba
    for i in range(keys.size):
        counts[keys[i] // span] += 1


@njit(nogil=True, cache=True)
def _scatter_blocks(keys, span, cursor, out):  # pragma: no cover - numba
    """Every key written at its block's ``cursor`` (then moved on by one)."""
    for i in range(keys.size):
        b = keys[i] // span
        out[cursor[b]] = keys[i]
        cursor[b] += 1


@njit(nogil=True, cache=True)
def _keys_to_rows(keys, n, counts, indices):  # pragma: no cover - numba
    """Sorted distinct local keys of whole rows: their targets into ``indices``, one more
    arc counted at ``counts[u + 1]`` per key of row ``u`` (no other block has row ``u``)."""
    for i in range(keys.size):
        u = keys[i] // n
        indices[i] = keys[i] - u * n
        counts[u + 1] += 1
