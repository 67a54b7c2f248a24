"""A graph built piece by piece: edge chunks in, one CSR slice per vertex range out.

What it returns
---------------
The chunk-level steps of a build that never holds the whole edge list in one place
(the Dask side, :mod:`taskbfs.bfs.distributed`, runs each as a task on the workers):

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

import numpy as np
from numba import njit

from taskbfs.errors import InvalidParameterError
from taskbfs.graph._graph import _drop_repeats, index_dtype
from taskbfs.graph.kronecker import (
    _check_edgefactor,
    _check_scale,
    _check_seed,
    _chunk_edges,
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


# ====================================================================== Kronecker chunks
def kronecker_chunk_count(scale: int, edgefactor: int, seed: int, chunk_edges: int) -> int:
    """Number of chunks of ``chunk_edges`` edges in the Kronecker edge list (the
    arguments checked as :func:`~taskbfs.graph.kronecker_edges` checks them)."""
    _check_seed(seed)
    total = _num_edges(_check_scale(scale), _check_edgefactor(edgefactor))
    return max(1, -(-total // int(chunk_edges)))


def kronecker_chunk(scale: int, edgefactor: int, seed: int, chunk: int, chunk_edges: int):
    """Chunk ``chunk`` of the Kronecker edge list cut into chunks of ``chunk_edges``:
    what :func:`~taskbfs.graph.kronecker_edges` gives for that chunk when
    the setting ``kronecker.chunk-edges`` is ``chunk_edges`` (passed explicitly, so that a worker
    process generates the chunk the client asked for whatever its own settings)."""
    scale, edgefactor, seed = _check_scale(scale), _check_edgefactor(edgefactor), _check_seed(seed)
    total = _num_edges(scale, edgefactor)
    lo, hi = chunk * chunk_edges, min(total, (chunk + 1) * chunk_edges)
    return _chunk_edges(scale, seed, chunk, (lo, hi))


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
    counts = np.zeros(bounds.size - 1, dtype=np.int64)
    _count_owners(src, dst, bounds, directed, counts)
    offsets = np.zeros(bounds.size, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    keys = np.empty(offsets[-1], dtype=np.int64)
    _fill_keys(src, dst, bounds, np.int64(num_vertices), directed, offsets[:-1].copy(), keys)
    return keys, offsets


def range_csr(pieces, lo: int, hi: int, num_vertices: int):
    """Rows ``[lo, hi)`` of the graph from the key arrays (:func:`split_arcs`) every
    chunk sent to this range: ``(indptr_local int64[hi - lo + 1], indices)``, rows
    sorted, duplicates dropped, ``indices`` of the graph's index dtype."""
    keys = np.concatenate([np.asarray(p, dtype=np.int64) for p in pieces]) if len(pieces) \
        else np.empty(0, dtype=np.int64)
    keys.sort()
    keys = keys[: _drop_repeats(keys)]
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    indices = np.empty(keys.size, dtype=index_dtype(num_vertices))
    _local_keys_to_csr(keys, np.int64(num_vertices), indptr, indices)
    return indptr, indices


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
def _owner(bounds, v):  # pragma: no cover - numba
    return np.searchsorted(bounds, v, side="right") - 1


@njit(nogil=True, cache=True)
def _count_owners(src, dst, bounds, directed, counts):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        counts[_owner(bounds, u)] += 1
        if not directed:
            counts[_owner(bounds, v)] += 1


@njit(nogil=True, cache=True)
def _fill_keys(src, dst, bounds, n, directed, cursor, keys):  # pragma: no cover - numba
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        r = _owner(bounds, u)
        keys[cursor[r]] = (u - bounds[r]) * n + v
        cursor[r] += 1
        if not directed:
            r = _owner(bounds, v)
            keys[cursor[r]] = (v - bounds[r]) * n + u
            cursor[r] += 1


@njit(nogil=True, cache=True)
def _local_keys_to_csr(keys, n, indptr, indices):  # pragma: no cover - numba
    """Sorted distinct local keys to the range's CSR (``indptr`` zeroed on entry)."""
    for i in range(keys.size):
        u = keys[i] // n
        indices[i] = keys[i] - u * n
        indptr[u + 1] += 1
    for u in range(indptr.size - 1):
        indptr[u + 1] += indptr[u]
