"""CSR arrays from an edge list: ``csr_of_pieces`` (the sort every in-client build shares),
``index_dtype`` and the memory checks a build makes before it allocates.

Approach
--------
A two-level counting sort by source on every core (:func:`csr_of_pieces`); see its
docstring for the passes and the memory each holds. No ``Graph`` here: the builders
(:mod:`taskbfs.graph._graph`, :mod:`taskbfs.graph.kronecker`, the readers) wrap the arrays.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os

import numpy as np
from numba import njit

from taskbfs.errors import InsufficientMemoryError, InvalidParameterError
from taskbfs.graph._threads import cores, cuts, run

__all__ = ["CSR_STEPS", "INT32_VERTEX_LIMIT", "check_fits_in_memory", "check_memory",
           "csr_of_pieces", "index_dtype"]

#: Largest vertex count for which int32 ``indices`` are used.
INT32_VERTEX_LIMIT = np.iinfo(np.int32).max


def index_dtype(num_vertices: int) -> np.dtype:
    """Return the dtype of ``indices`` for a graph of ``num_vertices`` vertices."""
    return np.dtype(np.int32) if num_vertices <= INT32_VERTEX_LIMIT else np.dtype(np.int64)


def check_fits_in_memory(num_vertices: int, edges: int = 0, directed: bool = False,
                         extra: int = 0, owned: bool = False) -> None:
    """Refuse a build whose arrays exceed the memory free now (or, for the vertex arrays
    alone, this machine's): the CSR of ``num_vertices`` and up to ``edges`` edges (both
    arcs when undirected) as :func:`csr_of_pieces` builds it, plus ``extra`` bytes (with
    ``owned``, the build's own edge pieces: given back as the arcs are written, so the
    peak is the larger of the two)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not available on this platform
        return
    needed = 16 * (num_vertices + 1)  # indptr plus the degree count, int64 each
    if needed > physical:
        raise InvalidParameterError(
            f"a graph of {num_vertices:,} vertices needs {needed / 2**30:,.1f} GiB for its "
            f"vertex arrays alone, more than this machine has ({physical / 2**30:,.1f} GiB); "
            f"vertex ids are kept as given, so relabel sparse ids to 0..k-1 first"
        )
    arcs = edges * (1 if directed else 2)
    # the arcs' targets and their rows within blocks (2 bytes each, one pass's arcs)
    arrays = arcs * index_dtype(num_vertices).itemsize + 2 * arcs // _passes(owned)
    held = max(arrays, extra) if owned else arrays + extra
    check_memory(8 * (num_vertices + 1) + held,
                 f"building a graph of {num_vertices:,} vertices and {edges:,} edges")


def check_memory(needed: int, what: str) -> None:
    """Raise :class:`InsufficientMemoryError` when ``needed`` bytes exceed the memory
    this machine has free now (``psutil.virtual_memory().available``)."""
    import psutil  # a dependency of distributed

    available = int(psutil.virtual_memory().available)
    if needed > available:
        raise InsufficientMemoryError(
            f"{what} needs {needed / 2**20:,.0f} MiB, but this machine has "
            f"{available / 2**20:,.0f} MiB free", needed, available)


def csr_of_pieces(chunks: list, n: int, directed: bool, threads: int | None = None,
                  step=None, owned: bool = False):
    """Sort, deduplicate and drop self-loops: ``(indptr int64, indices)`` of the edges of
    every ``(src, dst)`` pair in ``chunks`` (ids below ``n``, any integer dtype), on
    ``threads`` threads (default: one per core).

    A two-level counting sort by source, with no atomics: the rows are cut into blocks of
    ``2**shift`` consecutive vertices (:func:`_block_shift`); each range of edges counts
    its arcs per block (:func:`_count_block_arcs`), and the prefix sums over blocks, then
    ranges, give every range its own place in every block. Then, in
    :data:`_ROW_PASSES` passes over groups of blocks of about equal arcs, the ranges write
    the group's arcs there, their targets and their rows within the block
    (:func:`_scatter_arcs`; a pair is dropped from ``chunks`` once written in the last
    pass), and each block, on its own, sorts its arcs by row and target and drops the
    repeats (:func:`_sort_block`). Last, the blocks' kept arcs are moved together
    (:func:`_close_gaps`). Beyond the edge list it allocates the CSR, the repeats, two
    bytes an arc of a group for the rows within blocks and, per thread, 16 bytes an arc
    of the block it sorts (at most :data:`_IN_PLACE_ARCS` arcs: a larger block is sorted
    in place, :func:`_sort_block_in_place`). ``step``, if given, is called after the
    count and after each pass (:data:`CSR_STEPS` calls).

    ``owned``: nothing but ``chunks`` holds the pairs (a reader's or the generator's
    pieces), so each is given back as soon as it is written; then one pass writes every
    arc, and the edge list shrinks while the CSR grows (the rows within blocks, two
    bytes an arc, are then held for every arc, less than the edge list that the passes
    would hold to the last one)."""
    step = step or _no_step
    threads = threads or cores()
    units = _edge_ranges(chunks, threads)
    arcs = sum(hi - lo for _, lo, hi in units) * (1 if directed else 2)
    shift = _block_shift(n, arcs, threads)
    starts, cursors = _block_places(chunks, units, -(-n // (1 << shift)), directed, shift,
                                    threads)
    step()
    indices = np.empty(int(starts[-1]), dtype=index_dtype(n))
    indptr = np.zeros(n + 1, dtype=np.int64)
    kept = np.zeros(starts.size - 1, dtype=np.int64)
    groups = _block_groups(starts, _passes(owned))
    for _ in range(_ROW_PASSES - len(groups)):
        step()  # (fewer groups than passes: their steps at once)
    rows = np.empty(max(starts[b] - starts[a] for a, b in groups), dtype=np.uint16)
    if owned:  # every block is written from the start: only the pages written count
        _small_pages(indices)
        _small_pages(rows)
    for a, b in groups:
        _scatter_all(chunks, units, cursors, directed, shift, (a, b, starts[a]), indices,
                     rows, threads, drop=b == starts.size - 1)
        kept[a:b] = _sort_blocks(indices, rows, starts, (a, b), shift, indptr, threads)
        step()
    del rows
    total = _close_gaps(indices, starts, kept)
    indices.resize(total, refcheck=False)  # gives the repeats' memory back in place
    np.cumsum(indptr, out=indptr)
    return indptr, indices


def _no_step() -> None:
    pass


def _small_pages(arr: np.ndarray) -> None:
    """Ask the system to back ``arr`` (not written yet) with small pages: numpy asks for
    huge ones (2 MiB, where transparent huge pages are on), and a pass that writes every
    block from the start would then make each block's first 2 MiB resident at once, the
    whole array when blocks are smaller. Nothing is done where madvise is not at hand."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        page = mmap.PAGESIZE
        start = -(-arr.ctypes.data // page) * page
        end = (arr.ctypes.data + arr.nbytes) // page * page
        if end > start:
            libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), _MADV_NOHUGEPAGE)
    except (OSError, AttributeError):
        pass


#: Linux's ``MADV_NOHUGEPAGE`` (the mmap module names it where the system has it).
_MADV_NOHUGEPAGE = getattr(mmap, "MADV_NOHUGEPAGE", 15)


def _passes(owned: bool) -> int:
    """Passes that write the arcs: one when the edge pieces are the build's own."""
    return 1 if owned else _ROW_PASSES


#: Arcs a block of rows aims at: few enough that a block's sort keys stay in the caches,
#: many enough that a range writes its arcs to few blocks at once.
_BLOCK_ARCS = 1 << 19
#: Fewest blocks a thread sorts: the threads' sort keys (16 bytes an arc of a block) then
#: add at most a sixteenth of int32 indices' bytes, and a block of heavy rows is a small
#: part of a thread's work.
_BLOCKS_PER_THREAD = 64
#: Most arcs of a block sorted with a scratch copy of its keys; a larger one (a hub's rows)
#: is sorted in place, more slowly, so that the scratch stays small beside the CSR.
_IN_PLACE_ARCS = 4 * _BLOCK_ARCS
#: Passes that write the arcs, each for the blocks of about an equal share of them: the
#: rows within blocks (two bytes an arc) are held for one pass's arcs, an eighth of the
#: bytes of int32 indices, for one more read of the edge list a pass.
_ROW_PASSES = 4
#: Steps a CSR build reports to its ``step`` callback: the count, then each pass.
CSR_STEPS = 1 + _ROW_PASSES
#: Most rows in a block: a row's place within its block is kept in 16 bits.
_MAX_BLOCK_SHIFT = 16
#: Fewest edges a range of the edge list holds (a thread's start costs more than fewer).
_MIN_RANGE = 1 << 20


def _block_shift(n: int, arcs: int, threads: int) -> int:
    """``log2`` of the rows in a block: about :data:`_BLOCK_ARCS` arcs a block, at most
    ``2**16`` rows, and at least :data:`_BLOCKS_PER_THREAD` blocks a thread where there
    are rows enough."""
    rows = min(n * _BLOCK_ARCS // max(arcs, 1), -(-n // (_BLOCKS_PER_THREAD * threads)))
    return int(min(max(rows, 1).bit_length() - 1, _MAX_BLOCK_SHIFT))


def _edge_ranges(chunks: list, threads: int) -> list[tuple[int, int, int]]:
    """``(pair, lo, hi)``: each non-empty pair of ``chunks`` cut into up to ``threads``
    ranges of at least :data:`_MIN_RANGE` edges."""
    units = []
    for p, (src, _) in enumerate(chunks):
        parts = max(1, min(threads, src.size // _MIN_RANGE))
        bounds = cuts(src.size, parts) if src.size else np.zeros(1, dtype=np.int64)
        units.extend((p, int(bounds[i]), int(bounds[i + 1])) for i in range(bounds.size - 1))
    return units


def _block_groups(starts: np.ndarray, passes: int) -> list[tuple[int, int]]:
    """Up to ``passes`` ranges ``(a, b)`` of consecutive blocks, non-empty, covering every
    block, cut where the arcs before a block (``starts``) cross k / passes of them."""
    cut = np.searchsorted(starts, np.arange(1, passes) * (starts[-1] / passes))
    bounds = np.unique(np.concatenate([[0], np.clip(cut, 0, starts.size - 1),
                                       [starts.size - 1]]))
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


def _block_places(chunks, units, blocks, directed, shift, threads):
    """``(starts, cursors)``: block ``b``'s arcs go to ``starts[b] .. starts[b + 1] - 1``,
    and range ``j`` writes its arcs of block ``b`` from ``cursors[j, b]`` on, after those
    of the ranges before it (:func:`_count_block_arcs` of every range, then prefix sums)."""
    counts = np.zeros((len(units), blocks), dtype=np.int64)

    def count(j: int) -> None:
        p, lo, hi = units[j]
        src, dst = chunks[p]
        _count_block_arcs(src[lo:hi], dst[lo:hi], directed, shift, counts[j])

    run(count, range(len(units)), threads)
    starts = np.zeros(blocks + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    return starts, starts[:-1] + np.cumsum(counts, axis=0) - counts


def _sort_blocks(indices, rows, starts, group, shift: int, degrees, threads: int):
    """:func:`_sort_block` of blocks ``a .. b - 1`` (``group``; their rows within blocks
    in ``rows`` from ``starts[a]`` on) on ``threads`` threads: the arcs kept per row
    into ``degrees[u + 1]``; returns the arcs kept per block."""
    n = degrees.size - 1
    target_bits = max(n - 1, 1).bit_length()
    a, b = group

    def sort(k: int) -> int:
        lo, hi = k << shift, min(n, (k + 1) << shift)
        s, e = starts[k], starts[k + 1]
        here = rows[s - starts[a] : e - starts[a]]
        if e - s > _IN_PLACE_ARCS:  # a hub's block: no scratch the size of its arcs
            return _sort_block_in_place(indices[s:e], here, degrees[lo + 1 : hi + 1])
        return _sort_block(indices[s:e], here, degrees[lo + 1 : hi + 1], shift, target_bits)

    return run(sort, range(a, b), threads)


def _scatter_all(chunks, units, cursors, directed, shift, group, indices, rows, threads,
                 drop: bool) -> None:
    """:func:`_scatter_arcs` of every range for the blocks of ``group`` (``(a, b, base)``:
    blocks ``a .. b - 1``, whose first arc goes to ``base``), a batch of about ``threads``
    ranges at a time; with ``drop``, each pair of ``chunks`` dropped once its ranges are
    written (the list is emptied)."""
    j = 0
    while j < len(units):
        batch = [j]
        while len(batch) < threads and batch[-1] + 1 < len(units):
            batch.append(batch[-1] + 1)
        last = units[batch[-1]][0]
        while batch[-1] + 1 < len(units) and units[batch[-1] + 1][0] == last:
            batch.append(batch[-1] + 1)  # the rest of the last pair's ranges

        def scatter(i: int) -> None:
            p, lo, hi = units[i]
            src, dst = chunks[p]
            _scatter_arcs(src[lo:hi], dst[lo:hi], directed, shift, *group, cursors[i],
                          indices, rows)

        run(scatter, batch, threads)
        for p in range(units[j][0], last + 1) if drop else ():
            chunks[p] = None
        j = batch[-1] + 1
    if drop:
        chunks.clear()


@njit(nogil=True, cache=True)
def _count_block_arcs(src, dst, directed, shift, counts):  # pragma: no cover - numba
    """``counts[u >> shift] += 1`` for every arc u→v that is not a self-loop (both ways
    when undirected)."""
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        counts[u >> shift] += 1
        if not directed:
            counts[v >> shift] += 1


@njit(nogil=True, cache=True)
def _scatter_arcs(src, dst, directed, shift, a, b, base, cursor, indices,
                  rows):  # pragma: no cover - numba
    """Every arc u→v of blocks ``a .. b - 1`` written at its block's ``cursor`` (then
    moved on by one): ``v`` into ``indices``, u's row within the block into ``rows``
    (``base`` places earlier)."""
    low = (1 << shift) - 1
    for i in range(src.size):
        u, v = src[i], dst[i]
        if u == v:
            continue
        k = u >> shift
        if a <= k < b:
            indices[cursor[k]] = v
            rows[cursor[k] - base] = u & low
            cursor[k] += 1
        k = v >> shift
        if not directed and a <= k < b:
            indices[cursor[k]] = u
            rows[cursor[k] - base] = v & low
            cursor[k] += 1


#: Bits of a key that one pass of :func:`_sort_block`'s radix sort orders (2048 counters:
#: they stay in the first-level cache).
_RADIX_BITS = 11


@njit(nogil=True, cache=True)
def _sort_block(targets, rows, degrees, row_bits, target_bits):  # pragma: no cover - numba
    """One block's arcs (``targets[i]`` in the block's row ``rows[i]``) put in row order,
    each row sorted and its repeats dropped, at the front of ``targets``; the arcs kept
    per row into ``degrees``. Returns the number kept.

    A least-significant-digit radix sort of the keys ``row << target_bits | target`` (rows
    below ``2**row_bits``, targets below ``2**target_bits``)
    (passes of at most :data:`_RADIX_BITS` bits, a pass skipped when every key has the
    same digit), then one pass over the sorted keys."""
    m = targets.size
    keys = np.empty(m, dtype=np.int64)
    for i in range(m):
        keys[i] = (np.int64(rows[i]) << target_bits) | np.int64(targets[i])
    bits = row_bits + target_bits
    passes = max(1, -(-bits // _RADIX_BITS))
    width = -(-bits // passes)
    keys = _radix_sort(keys, np.empty(m, dtype=np.int64), passes, width)
    low = (np.int64(1) << target_bits) - 1
    degrees[:] = 0
    kept = 0
    for i in range(m):
        if i == 0 or keys[i] != keys[i - 1]:
            targets[kept] = keys[i] & low
            degrees[keys[i] >> target_bits] += 1
            kept += 1
    return kept


@njit(nogil=True, cache=True)
def _radix_sort(keys, spare, passes, width):  # pragma: no cover - numba
    """``keys`` (non-negative) sorted by their low ``passes * width`` bits, one stable
    counting pass a digit; returns whichever of ``keys`` and ``spare`` holds the result."""
    mask = (np.int64(1) << width) - 1
    counts = np.empty(np.int64(1) << width, dtype=np.int64)
    for p in range(passes):
        shift = p * width
        counts[:] = 0
        for i in range(keys.size):
            counts[(keys[i] >> shift) & mask] += 1
        if keys.size and counts[(keys[0] >> shift) & mask] == keys.size:
            continue  # every key has this digit: the order stands
        total = 0
        for d in range(counts.size):
            c = counts[d]
            counts[d] = total
            total += c
        for i in range(keys.size):
            d = (keys[i] >> shift) & mask
            spare[counts[d]] = keys[i]
            counts[d] += 1
        keys, spare = spare, keys
    return keys


@njit(nogil=True, cache=True)
def _sort_block_in_place(targets, rows, degrees):  # pragma: no cover - numba
    """:func:`_sort_block` with no scratch beyond a count per row: the arcs swapped into
    their rows' places (the cycles of an in-place counting sort), then each row sorted
    and its repeats dropped."""
    starts = np.zeros(degrees.size + 1, dtype=np.int64)
    for i in range(rows.size):
        starts[rows[i] + 1] += 1
    for r in range(degrees.size):
        starts[r + 1] += starts[r]
    cursor = starts[:-1].copy()
    for r in range(degrees.size):
        while cursor[r] < starts[r + 1]:
            i = cursor[r]
            home = rows[i]
            if home == r:
                cursor[r] += 1
                continue
            j = cursor[home]  # the arc at i belongs in row home: swap it there
            targets[i], targets[j] = targets[j], targets[i]
            rows[i], rows[j] = rows[j], rows[i]
            cursor[home] += 1
    kept = 0
    for r in range(degrees.size):
        row = targets[starts[r] : starts[r + 1]]
        row.sort()
        first = kept
        for i in range(row.size):
            if kept == first or row[i] != targets[kept - 1]:
                targets[kept] = row[i]
                kept += 1
        degrees[r] = kept - first
    return kept


@njit(nogil=True, cache=True)
def _close_gaps(indices, starts, kept):  # pragma: no cover - numba
    """Block ``b``'s ``kept[b]`` arcs, at ``indices[starts[b]:]``, moved to follow those of
    the blocks before it; returns the arcs in all. In block order: a block moves only
    onto arcs already moved or dropped."""
    out = 0
    for b in range(kept.size):
        s = starts[b]
        if s != out:
            for i in range(kept[b]):
                indices[out + i] = indices[s + i]
        out += kept[b]
    return out


@njit(nogil=True, cache=True)
def _drop_repeats(keys):  # pragma: no cover - numba
    """Move the distinct values of sorted ``keys`` to its front; returns their number."""
    m = 0
    for i in range(keys.size):
        if i == 0 or keys[i] != keys[m - 1]:
            keys[m] = keys[i]
            m += 1
    return m
