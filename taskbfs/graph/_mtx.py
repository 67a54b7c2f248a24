"""MatrixMarket ``coordinate`` files, read into pieces of 0-based ids and written from a graph.

What it returns
---------------
:func:`_mtx_header` (size, entries, symmetry), :func:`_mtx_pieces`: the ``[rows, cols]``
pieces of a whole file; :func:`_mtx_range`: the entries on the lines that start in a byte
range; :func:`_scan_mtx`, the careful line-by-line scan that names a bad line;
:func:`_write_mtx`. No ``Graph`` is built here (:mod:`taskbfs.graph.io` builds it).

Approach
--------
The compiled parser reads the entries (:mod:`taskbfs.graph._text`), else pandas' reader,
else the scan, which raises the :class:`~taskbfs.errors.GraphFormatError` naming the line.
Files are written by fast_matrix_market (``scipy.io.mmwrite``'s writer) on every core.
"""

from __future__ import annotations

import contextlib
import io
import os
from array import array
from dataclasses import dataclass

import numpy as np

from taskbfs.errors import EmptyGraphError, GraphFormatError
from taskbfs.graph._csr import index_dtype
from taskbfs.graph._files import (
    _COMPRESSED,
    _check_text,
    _line_number,
    _numbered_lines,
    _offset_of_line,
    _open_binary_for_writing,
    _open_text_for_writing,
    _parse_id,
    _read_block,
)
from taskbfs.graph._text import _arcs, _compiled_pairs, _joined, _read_table, _write_pairs

_MTX_FIELDS = ("pattern", "integer", "real", "complex")
_MTX_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


@dataclass(frozen=True)
class _MtxHeader:
    n: int
    nnz: int
    symmetric: bool
    size_line: int  # 1-based line of "rows cols nnz"; data follows it


def _mtx_pieces(path: str, directed: bool | None, narrow: bool = False):
    """``(pieces, n, directed)`` of a MatrixMarket file: ``[src, dst]`` pieces, 0-based
    (``narrow``: int32 where the ids fit; a symmetric file read as directed gives each
    piece twice, the second reversed: both arcs of every entry, with no copy)."""
    head = _mtx_header(path)
    pieces = _compiled_mtx(path, head)  # 0-based already
    if pieces is None:
        pieces = _fast_mtx(path, head, narrow)
        if pieces is None:
            pieces = [list(_scan_mtx(path, head))]  # raises at the first bad line
        for piece in pieces:
            for column in piece:
                np.subtract(column, 1, out=column)  # in place: 1-based to 0-based
    if directed is None:
        directed = not head.symmetric
    if head.symmetric and directed:
        pieces += [[dst, src] for src, dst in pieces]
    return pieces, head.n, bool(directed)


def _mtx_range(path: str, start: int, stop: int, directed: bool | None):
    """:func:`read_edges` of the entries on the lines that start in ``[start, stop)``:
    ``(src, dst, n, directed)``, 0-based (the entry count is checked over all ranges by
    :func:`check_entry_count`)."""
    head = _mtx_header(path)
    with open(path, "rb") as f:
        body = _offset_of_line(f, head.size_line + 1)
    begin, block = _read_block(path, max(start, body), stop) if stop > body else (body, b"")
    pieces = None
    if block.strip():
        pieces = _compiled_pairs(io.BytesIO(block), 1, 0, 1, head.n, index_dtype(head.n))
        if not isinstance(pieces, list):
            first = _line_number(path, begin)
            lines = ((first + i, raw.strip()) for i, raw in enumerate(block.split(b"\n")))
            pieces = [list(_scan_mtx(path, head, lines, counted=False))]
            for piece in pieces:
                for column in piece:
                    np.subtract(column, 1, out=column)
    src, dst = _joined(pieces) if pieces else (np.empty(0, np.int64), np.empty(0, np.int64))
    if directed is None:
        directed = not head.symmetric
    if head.symmetric and directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return src, dst, head.n, bool(directed)


def _mtx_header(path: str) -> _MtxHeader:
    lines = _numbered_lines(path)
    first = next(lines, None)
    if first is None:
        raise GraphFormatError("empty file; expected a '%%MatrixMarket' header line", path, 1)
    lineno, text = first
    _check_text(text, path, lineno)
    symmetric = _mtx_banner(text, path)
    for lineno, text in lines:  # noqa: B007 (lineno used after the loop)
        _check_text(text, path, lineno)
        if text and not text.startswith(b"%"):
            return _mtx_size(text, path, lineno, symmetric)
    raise GraphFormatError("file ends before the size line 'rows cols nnz'", path, lineno + 1)


def _mtx_banner(text: bytes, path: str) -> bool:
    """Check the ``%%MatrixMarket`` line; return True when the matrix is symmetric."""
    words = text.decode("utf-8").lower().split()
    if not words or words[0] != "%%matrixmarket":
        raise GraphFormatError(
            "not a MatrixMarket file: the first line must start with '%%MatrixMarket'", path, 1
        )
    if len(words) != 5:
        raise GraphFormatError(
            "MatrixMarket header must read '%%MatrixMarket matrix coordinate <field> <symmetry>'",
            path,
            1,
        )
    _, obj, layout, field, symmetry = words
    if obj != "matrix":
        raise GraphFormatError(
            f"MatrixMarket object {obj!r} is not supported (only 'matrix')", path, 1
        )
    if layout != "coordinate":
        raise GraphFormatError(
            f"MatrixMarket format {layout!r} is not supported: taskbfs reads sparse "
            f"'coordinate' files only (dense 'array' files hold no graph structure)",
            path,
            1,
        )
    if field not in _MTX_FIELDS:
        raise GraphFormatError(
            f"unknown MatrixMarket field {field!r} (expected one of {', '.join(_MTX_FIELDS)})",
            path,
            1,
        )
    if symmetry not in _MTX_SYMMETRIES:
        raise GraphFormatError(
            f"unknown MatrixMarket symmetry {symmetry!r} (expected one of {', '.join(_MTX_SYMMETRIES)})",
            path,
            1,
        )
    return symmetry != "general"


def _mtx_size(text: bytes, path: str, lineno: int, symmetric: bool) -> _MtxHeader:
    tokens = text.split()
    if len(tokens) != 3:
        raise GraphFormatError(
            f"expected the size line 'rows cols nnz', got {text.decode('utf-8', 'replace')!r}",
            path,
            lineno,
        )
    rows, cols, nnz = (_parse_id(t, path, lineno, "size") for t in tokens)
    if rows != cols:
        raise GraphFormatError(
            f"the matrix is {rows} x {cols}; an adjacency matrix must be square", path, lineno
        )
    if rows == 0:
        raise EmptyGraphError(f"{path}, line {lineno}: the matrix is 0 x 0 (no vertices)")
    return _MtxHeader(rows, nnz, symmetric, lineno)


def _compiled_mtx(path: str, head: _MtxHeader):
    """The entries by the compiled parser (:func:`_compiled_pairs`): ``[rows, cols]``
    pieces, 0-based, int32 below 2^31 vertices; None for a compressed file, a line that
    is not ``row col [values]`` with both in 1..n (a comment, a sign, a decimal point...)
    or a count other than the declared one: the slower paths then read the file or name
    its bad line.

    Not fast_matrix_market (``scipy.io.mmread``'s parser, no faster here): it reads the
    entry ``17 1.5e2`` of a pattern file as (17, 1), a silent wrong graph."""
    if head.nnz == 0 or os.path.splitext(path)[1].lower() in _COMPRESSED:
        return None
    pieces = _compiled_pairs(path, head.size_line + 1, 0, 1, head.n, index_dtype(head.n))
    if not isinstance(pieces, list) or sum(p[0].size for p in pieces) != head.nnz:
        return None
    return pieces


def _fast_mtx(path: str, head: _MtxHeader, narrow: bool = False):
    """pandas' pieces of the entries (see :func:`_read_table`), 1-based; None unless
    every index is in 1..n and the count is the declared one."""
    if head.nnz == 0:
        return None  # nothing to read; the scan checks that no entries follow
    pieces = _read_table(path, r"\s+", "%", head.size_line, narrow)
    if pieces is None or sum(p[0].size for p in pieces) != head.nnz:
        return None
    ok = all(c.size == 0 or (c.min() >= 1 and c.max() <= head.n) for p in pieces for c in p)
    return pieces if ok else None


def _scan_mtx(path: str, head: _MtxHeader, lines=None, counted: bool = True):
    """The careful path over the entries, raising at the first bad line (``lines``:
    ``(lineno, text)`` pairs of the body, by default the file's; ``counted``: check the
    number of entries against the declared one)."""
    src, dst = array("q"), array("q")
    lineno = head.size_line
    for lineno, text in _numbered_lines(path) if lines is None else lines:
        if lineno <= head.size_line:
            continue
        _check_text(text, path, lineno)
        if not text or text.startswith(b"%"):
            continue
        tokens = text.split()
        if len(tokens) < 2:
            raise GraphFormatError(
                f"expected an entry 'row col [value]', found one column: {text.decode('utf-8', 'replace')!r}",
                path,
                lineno,
            )
        if counted and len(src) == head.nnz:
            raise GraphFormatError(
                f"more entries than the {head.nnz} declared on line {head.size_line}", path, lineno
            )
        src.append(_mtx_index(tokens[0], head, path, lineno, "row"))
        dst.append(_mtx_index(tokens[1], head, path, lineno, "column"))
    if counted and len(src) != head.nnz:
        raise GraphFormatError(
            f"file ends after {len(src)} of the {head.nnz} entries declared on line "
            f"{head.size_line} (truncated file?)",
            path,
            lineno,
        )
    return np.frombuffer(src, dtype=np.int64), np.frombuffer(dst, dtype=np.int64)


def _mtx_index(token: bytes, head: _MtxHeader, path: str, lineno: int, what: str) -> int:
    value = _parse_id(token, path, lineno, f"{what} index")
    if not 1 <= value <= head.n:
        raise GraphFormatError(
            f"{what} index {value} is outside 1..{head.n} (MatrixMarket indices are 1-based)",
            path,
            lineno,
        )
    return value


def _write_mtx(graph, path: str) -> None:
    src, dst = _arcs(graph, lower=not graph.directed)
    symmetry = "general" if graph.directed else "symmetric"
    if _fmm_write(path, graph.num_vertices, src, dst, symmetry):
        return
    with _open_text_for_writing(path) as f:  # pragma: no cover - scipy < 1.12
        f.write(f"%%MatrixMarket matrix coordinate pattern {symmetry}\n")
        f.write("% written by taskbfs\n")
        f.write(f"{graph.num_vertices} {graph.num_vertices} {src.size}\n")
        _write_pairs(f, src + 1, dst + 1, " ")


def _fmm_write(path: str, n: int, src: np.ndarray, dst: np.ndarray, symmetry: str) -> bool:
    """Write a ``pattern`` MatrixMarket file of the 0-based arcs ``src -> dst`` by
    fast_matrix_market on every core (the writer of ``scipy.io.mmwrite``); False when it
    is not installed."""
    try:  # scipy >= 1.12
        from scipy.io._fast_matrix_market import _fmm_core, _get_write_cursor
    except ImportError:  # pragma: no cover - older scipy
        return False
    with contextlib.ExitStack() as stack:
        # a path ending in .mtx is written by the C++ side; any other through a stream (its
        # own open would add ".mtx" to the name), compressed ones through Python's codecs
        plain = path.lower().endswith(".mtx")
        target = path if plain else stack.enter_context(_open_binary_for_writing(path))
        cursor = _get_write_cursor(target, comment=" written by taskbfs", symmetry=symmetry)
        _fmm_core.write_body_coo(cursor, (n, n), src, dst, np.zeros(0))  # no values: pattern
        del cursor  # flushed and closed before the stream is
    return True
