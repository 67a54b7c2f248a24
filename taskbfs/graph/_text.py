"""Vertex ids from text at speed, and pairs of ids written as text.

What it returns
---------------
:func:`_compiled_pairs`: the pairs ``a b [anything]`` of a file's lines as pieces of
int32 or int64 arrays, by a compiled parser on every core (None at a line that is not
such a pair, so that a slower path reads the file or names the line);
:func:`_read_table`: pandas' C reader on a file's first two columns, in pieces;
:func:`_joined`: pieces as one pair of arrays; :func:`_arcs` and :func:`_write_pairs`:
a graph's arcs, and pairs written as text lines.

Approach
--------
The compiled parser maps a file :data:`_WINDOW_BYTES` of whole lines at a time, cuts each
window at line starts into pieces of about :data:`_PARSE_BYTES` and parses them at once
(the loops release the GIL). It is strict: two unsigned decimal ids, then a blank, the
separator or the end of the line. fast_matrix_market and pyarrow's CSV reader were as
fast, but take ``17 1.5e2`` for (17, 1) and ``0x1f`` for 31: a silent wrong graph.
"""

from __future__ import annotations

import contextlib
import io
import lzma
import mmap
import os
import warnings

import numpy as np
from numba import njit

from taskbfs.graph._files import _offset_of_line
from taskbfs.graph._threads import cores, run

#: Rows pandas parses at a time (a piece's columns are narrowed before the next is read).
#: pandas' own buffers for a piece are tens of bytes a row, so small pieces keep a read's
#: peak near the CSR's size at no cost in time (benchmarks/build.py's read_el).
_TABLE_ROWS = 1 << 16


def _read_table(path: str, sep: str, comment: str, skip: int, narrow: bool = False):
    """pandas' C reader on the first two columns: a list of ``[src, dst]`` pieces of
    :data:`_TABLE_ROWS` rows, or ``None`` when it cannot parse the file into two int64
    columns (the caller then scans line by line). ``narrow``: a piece's columns int32
    when its ids fit (half the memory for the graph build that follows), copied into
    large blocks (:func:`_append_narrowed`)."""
    import pandas as pd

    pieces, spare = [], []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. DtypeWarning: the scan reports the problem
            for df in pd.read_csv(path, sep=sep, header=None, comment=comment, usecols=[0, 1],
                                  skiprows=skip, skip_blank_lines=True, engine="c",
                                  encoding="utf-8", compression="infer", chunksize=_TABLE_ROWS):
                if df.shape[1] != 2 or any(dt != np.dtype(np.int64) for dt in df.dtypes):
                    return None
                columns = [df[c].to_numpy(dtype=np.int64) for c in (0, 1)]
                del df
                if narrow and columns[0].size and max(c.max() for c in columns) < 2**31:
                    _append_narrowed(pieces, spare, columns)
                else:  # writable: a MatrixMarket reader shifts the ids in place
                    pieces.append([np.require(c, requirements="W") for c in columns])
    except (ValueError, OverflowError, OSError, EOFError, lzma.LZMAError):
        return None  # pandas' ParserError, EmptyDataError, UnicodeDecodeError are ValueErrors
    return pieces or None


#: Rows of the int32 blocks that narrowed pieces are copied into.
_BLOCK_ROWS = 1 << 22


def _append_narrowed(pieces: list, spare: list, columns) -> None:
    """Append int64 ``columns`` (ids below 2^31) to ``pieces`` as int32 views of a block
    of :data:`_BLOCK_ROWS` rows (``spare``: ``[src block, dst block, rows used]``, a new
    one when full). A block's pages count only once written. Many small int32 pieces
    instead sat between the freed int64 ones on the heap, which stayed resident: +0.6x
    the CSR at scale 18 (glibc raises its mmap threshold to the size of freed arrays)."""
    rows = columns[0].size
    if not spare or spare[2] + rows > spare[0].size:
        size = max(_BLOCK_ROWS, rows)
        spare[:] = [np.empty(size, np.int32), np.empty(size, np.int32), 0]
    lo, hi = spare[2], spare[2] + rows
    for block, column in zip(spare[:2], columns, strict=True):
        block[lo:hi] = column
    spare[2] = hi
    pieces.append([spare[0][lo:hi], spare[1][lo:hi]])


def _joined(pieces: list) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` of an edge list's pieces, as one pair of arrays (int64)."""
    if len(pieces) == 1:
        return tuple(np.asarray(c, dtype=np.int64) for c in pieces[0])
    return tuple(np.concatenate([p[side] for p in pieces]).astype(np.int64, copy=False)
                 for side in (0, 1))


#: Bytes per piece of a file the compiled parser reads (at least; more pieces than threads).
_PARSE_BYTES = 1 << 22
#: :func:`_compiled_pairs`' answer when an id is above ``high``.
_OUT_OF_RANGE = object()
_BAD_LINE, _BAD_ID = -1, -2


def _compiled_pairs(source, first_line: int, sep: int, base: int, high: int, dtype):
    """The pairs of ids ``a b [anything]`` on the lines of a file (a path, or a
    ``BytesIO``) from its 1-based ``first_line`` on, parsed by :func:`_parse_pairs`
    on every core (pieces of about equal bytes cut at line starts; the loops release the
    GIL): a list of ``[a - base, b - base]`` pieces of ``dtype``; None at a line that is
    not such a pair (blank lines are skipped), :data:`_OUT_OF_RANGE` at an id outside
    ``base .. high``. ``sep``: a separator byte (``,``) or 0 for spaces and tabs. A file
    is mapped :data:`_WINDOW_BYTES` at a time (whole lines), each window unmapped once
    parsed: mapped pages count in the process's memory, a Dask worker's too (reading
    the blocks into memory instead took 1.8x as long at scale 18)."""
    if isinstance(source, io.BytesIO):
        data = np.frombuffer(source.getvalue(), dtype=np.uint8)
        return _parsed_span(data, int(_line_start(data, np.int64(first_line))), data.size,
                            sep, base, high, dtype)
    pieces = []
    with open(source, "rb") as f:
        pos = _offset_of_line(f, first_line)
        size = os.fstat(f.fileno()).st_size
        while pos < size:
            low = pos - pos % mmap.ALLOCATIONGRANULARITY
            length = min(size - low, _WINDOW_BYTES)
            mm = mmap.mmap(f.fileno(), length, offset=low, access=mmap.ACCESS_READ)
            try:
                end = length if low + length == size else mm.rfind(b"\n", pos - low) + 1
                if end <= 0:
                    return None  # a line longer than the window: pandas reads the file
                data = np.frombuffer(mm, dtype=np.uint8)
                parsed = _parsed_span(data, pos - low, end, sep, base, high, dtype)
                del data
            finally:
                with contextlib.suppress(BufferError):  # a traceback's frame views it: it
                    mm.close()                           # is unmapped once collected
            if not isinstance(parsed, list):
                return parsed
            pieces += parsed
            pos = low + end
    return pieces or None


#: Bytes of a file :func:`_compiled_pairs` maps and parses at once.
_WINDOW_BYTES = 1 << 25


def _parsed_span(data: np.ndarray, start: int, stop: int, sep: int, base: int, high: int,
                 dtype):
    """:func:`_compiled_pairs` of the whole lines ``data[start:stop]``."""
    threads = cores()
    parts = max(1, min(4 * threads, (stop - start) // _PARSE_BYTES))
    cuts = [start] + [int(_line_start_after(data, np.int64(start + (stop - start) * k // parts)))
                      for k in range(1, parts)] + [stop]
    spans = [(a, min(b, stop)) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]

    def parse(span):
        a, b = span
        # at most a pair per 4 bytes ("1 2\n"; the last line may lack its newline): no
        # pass to count the lines; the pages past the pairs are never touched, and given
        # back by the resize
        most = (b - a + 1) // 4 + 1
        left, right = np.empty(most, dtype), np.empty(most, dtype)
        count = _parse_pairs(data, a, b, sep, base, high, left, right)
        if count < 0:
            return count
        left.resize(count, refcheck=False)
        right.resize(count, refcheck=False)
        return [left, right]

    pieces = run(parse, spans, threads)
    if any(isinstance(p, int) and p == _BAD_ID for p in pieces):
        return _OUT_OF_RANGE
    if any(isinstance(p, int) for p in pieces):
        return None
    return pieces


@njit(nogil=True, cache=True)
def _line_start(data, line):  # pragma: no cover - numba
    """The offset of the 1-based ``line`` (the size of ``data`` if it has fewer)."""
    i = 0
    for _ in range(line - 1):
        while i < data.size and data[i] != 10:
            i += 1
        if i >= data.size:
            return data.size
        i += 1
    return i


@njit(nogil=True, cache=True)
def _line_start_after(data, at):  # pragma: no cover - numba
    """The offset of the first line that starts after byte ``at - 1``."""
    i = max(at, 1) - 1
    while i < data.size and data[i] != 10:
        i += 1
    return min(i + 1, data.size)


@njit(nogil=True, cache=True)
def _is_blank(c):  # pragma: no cover - numba
    return c == 32 or c == 9


@njit(nogil=True, cache=True)
def _digits(data, i, stop, base, high):  # pragma: no cover - numba
    """``(id - base, position after it, status)`` of the digits at ``i``: status 0, or
    ``_BAD_LINE`` (no digits, more than 18) or ``_BAD_ID`` (outside ``base .. high``)."""
    value = 0
    j = i
    while j < stop and 48 <= data[j] <= 57:
        value = value * 10 + (data[j] - 48)
        j += 1
        if j - i > 18:
            return 0, j, -1
    if j == i:
        return 0, j, -1
    if value < base or value > high:
        return 0, j, -2
    return value - base, j, 0


@njit(nogil=True, cache=True)
def _parse_pairs(data, start, stop, sep, base, high, left, right):  # pragma: no cover - numba
    """Parse the whole lines of ``data[start:stop]`` as ``a b [anything]`` (``a, b``
    separated by spaces and tabs, or by ``sep`` with optional blanks around it, and
    followed by a blank, ``sep`` or the end of the line) into ``left`` / ``right``; the
    count, or ``_BAD_LINE`` / ``_BAD_ID`` at the first line that is not blank and not
    such a pair."""
    count = 0
    i = start
    while i < stop:
        while i < stop and _is_blank(data[i]):
            i += 1
        if i >= stop:
            break
        if data[i] == 10 or data[i] == 13:  # a blank line
            i += 1
            continue
        a, i, status = _digits(data, i, stop, base, high)
        if status != 0:
            return status
        gap = i
        while i < stop and _is_blank(data[i]):
            i += 1
        if sep != 0:
            if i >= stop or data[i] != sep:
                return -1
            i += 1
            while i < stop and _is_blank(data[i]):
                i += 1
        elif i == gap:
            return -1
        b, i, status = _digits(data, i, stop, base, high)
        if status != 0:
            return status
        if i < stop and not (_is_blank(data[i]) or data[i] == 10 or data[i] == 13
                             or (sep != 0 and data[i] == sep)):
            return -1
        left[count] = a
        right[count] = b
        count += 1
        while i < stop and data[i] != 10:  # more columns, if any, are not read
            i += 1
    return count


def _arcs(graph, lower: bool = False, upper: bool = False):
    """Every arc ``(src, dst)`` of the graph in row order (ids of the graph's index dtype),
    or those with ``src > dst`` (``lower``) or ``src < dst`` (``upper``) only."""
    src = np.repeat(np.arange(graph.num_vertices, dtype=graph.indices.dtype), graph.degrees())
    dst = graph.indices
    if lower or upper:
        keep = src > dst if lower else src < dst
        src, dst = src[keep], dst[keep]
    return src, dst


def _write_pairs(f, src: np.ndarray, dst: np.ndarray, sep: str) -> None:
    import pandas as pd

    pd.DataFrame({"u": src, "v": dst}).to_csv(
        f, sep=sep, header=False, index=False, lineterminator="\n"
    )
