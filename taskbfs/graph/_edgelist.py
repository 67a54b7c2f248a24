"""SNAP-style edge lists (``u v`` lines), read into pieces of ids and written from a graph.

What it returns
---------------
:func:`_edgelist_pieces`: the ``[src, dst]`` pieces of a whole file; :func:`_edgelist_range`:
the edges of the lines that start in a byte range; :func:`_write_edgelist`. No ``Graph``
is built here (:mod:`taskbfs.graph.io` builds it).

Approach
--------
A look at the first lines (:func:`_sniff_edgelist`: comment character, separator,
header) picks how to read; then the compiled parser, else pandas' reader
(:mod:`taskbfs.graph._text`); when both fail, or give an id that is not a vertex, the
careful scan (:func:`_scan_edgelist`) reads line by line to raise the
:class:`~taskbfs.errors.GraphFormatError` naming the file and the line.
"""

from __future__ import annotations

import codecs
import io
import os
from array import array
from dataclasses import dataclass, replace

import numpy as np

from taskbfs.errors import EmptyGraphError, GraphFormatError
from taskbfs.graph._files import (
    _COMPRESSED,
    _NUMBER_RE,
    _base_suffix,
    _check_text,
    _line_number,
    _numbered_lines,
    _open_binary_for_writing,
    _open_text_for_writing,
    _parse_id,
    _read_block,
    _split,
    _strip_comment,
)
from taskbfs.graph._text import (
    _OUT_OF_RANGE,
    _arcs,
    _compiled_pairs,
    _joined,
    _read_table,
    _write_pairs,
)


@dataclass(frozen=True)
class _EdgeListLayout:
    """What a look at the first lines tells about an edge list."""

    seps: tuple[str, ...]  # pandas separators to try, best first
    split: bytes | None  # separator for the line scan (None: whitespace)
    comment: str  # comment character for pandas
    header_line: int  # 1-based line of the header, 0 if none
    first_line: int = 1  # 1-based line of the first edge
    columns: int = 2  # columns of the first edge's line


def _edgelist_pieces(path: str, narrow: bool = False) -> list:
    """``[src, dst]`` pieces of an edge-list file (``narrow``: int32 where the ids fit);
    raises if it holds no edge."""
    layout = _sniff_edgelist(path)
    pieces = None
    if layout is not None:
        pieces = _fast_edgelist(path, layout, narrow)
        if pieces is None:
            pieces = [list(_scan_edgelist(path, layout))]  # raises at the first bad line
    if not pieces or sum(p[0].size for p in pieces) == 0:
        raise EmptyGraphError(
            f"{path}: no edges found (the file is empty or holds only comments, blank "
            f"lines or a header), so the graph has no vertices"
        )
    return pieces


def _fast_edgelist(path, layout: _EdgeListLayout, narrow: bool = False):
    """The compiled parser, else pandas with each candidate separator: its pieces (see
    :func:`_read_table`); None unless it gives valid ids throughout (``path`` may be an
    in-memory buffer)."""
    pieces = _compiled_edgelist(path, layout)
    if pieces is not None:
        ok = all(c.size == 0 or c.min() >= 0 for p in pieces for c in p)
        return pieces if ok else None
    for sep in layout.seps:
        if hasattr(path, "seek"):
            path.seek(0)
        pieces = _read_table(path, sep, layout.comment, layout.header_line, narrow)
        if pieces is not None:
            ok = all(c.size == 0 or c.min() >= 0 for p in pieces for c in p)
            return pieces if ok else None
    return None


def _compiled_edgelist(source, layout: _EdgeListLayout):
    """The edges of an uncompressed edge-list file (or an in-memory buffer) from
    ``layout.first_line`` on by the compiled parser: ``[src, dst]`` pieces, int32 when
    every id fits, else int64; None when a line is not ``u v [more columns]`` (a comment
    among the edges, a quoted or signed id, ``0x1f``...; pandas then reads it, or the
    scan names the bad line). Not pyarrow's CSV reader: it takes ``0x1f`` for 31."""
    if isinstance(source, (str, os.PathLike)) and \
            os.path.splitext(os.fspath(source))[1].lower() in _COMPRESSED:
        return None
    comma = ord(",") if layout.seps[0] == "," else 0
    for dtype in (np.int32, np.int64):  # int32 when the ids fit: half the memory
        pieces = _compiled_pairs(source, layout.first_line, comma, 0,
                                 np.iinfo(dtype).max, dtype)
        if pieces is not _OUT_OF_RANGE:
            return pieces
    return None


def _sniff_edgelist(path: str) -> _EdgeListLayout | None:
    """Look at the leading comments and the first data line; None if there is none."""
    comment_chars = set()
    for lineno, text in _numbered_lines(path):
        _check_text(text, path, lineno)
        if not text:
            continue
        if text[:1] in (b"#", b"%"):
            comment_chars.add(text[:1])
            continue
        body = _strip_comment(text)
        comment = "%" if comment_chars == {b"%"} else "#"
        if b"," in body:
            seps, split = (",",), b","
        elif b"\t" in body and b" " not in body:
            seps, split = ("\t", r"\s+"), None
        else:
            seps, split = (r"\s+",), None
        tokens = _split(body, split)
        is_header = len(tokens) >= 2 and not any(_NUMBER_RE.match(t) for t in tokens[:2])
        return _EdgeListLayout(seps, split, comment, lineno if is_header else 0,
                               lineno + 1 if is_header else lineno, max(2, len(tokens)))
    return None


def _scan_edgelist(path: str, layout: _EdgeListLayout, lines=None):
    """The careful path: parse line by line (``lines``: ``(lineno, text)`` pairs, by
    default the file's), raising at the first bad line."""
    src, dst = array("q"), array("q")
    for lineno, text in _numbered_lines(path) if lines is None else lines:
        if lineno == layout.header_line:
            continue
        _check_text(text, path, lineno)
        body = _strip_comment(text)
        if not body:
            continue
        tokens = _split(body, layout.split)
        if len(tokens) < 2 or not tokens[1]:
            raise GraphFormatError(
                f"expected two vertex ids 'u v', found one column: {body.decode('utf-8', 'replace')!r}",
                path,
                lineno,
            )
        src.append(_parse_id(tokens[0], path, lineno))
        dst.append(_parse_id(tokens[1], path, lineno))
    return np.frombuffer(src, dtype=np.int64), np.frombuffer(dst, dtype=np.int64)


def _edgelist_range(path: str, start: int, stop: int):
    """``(src, dst)`` of the lines of an edge-list file that start in ``[start, stop)``."""
    layout = _sniff_edgelist(path)
    if layout is None:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    begin, block = _read_block(path, start, stop)
    if begin == 0 and block.startswith(codecs.BOM_UTF8):
        block = block[len(codecs.BOM_UTF8):]
    if layout.header_line:
        block = _without_header(path, layout, begin, block)
    quiet = replace(layout, header_line=0, first_line=1)
    pieces = _fast_edgelist(io.BytesIO(block), quiet) if block.strip() else None
    pair = _joined(pieces) if pieces else None
    if pair is None and block.strip():
        first = _line_number(path, begin)
        lines = ((first + i, raw.strip()) for i, raw in enumerate(block.split(b"\n")))
        pair = _scan_edgelist(path, quiet, lines)
    if pair is None:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return pair


def _without_header(path: str, layout: _EdgeListLayout, begin: int, block: bytes) -> bytes:
    """``block`` (read from byte ``begin``) with the file's header line made a comment if
    it holds it (not cut, so that line numbers stay)."""
    with open(path, "rb") as f:
        offset = sum(len(f.readline()) for _ in range(layout.header_line - 1))
        length = len(f.readline().rstrip(b"\r\n"))
    if begin <= offset < begin + len(block):
        at = offset - begin
        block = block[:at] + layout.comment.encode() * length + block[at + length:]
    return block


def _write_edgelist(graph, path: str) -> None:
    src, dst = _arcs(graph, upper=not graph.directed)
    sep = "," if _base_suffix(path) == ".csv" else "\t"
    kind = "directed" if graph.directed else "undirected"
    head = f"# taskbfs edge list: {kind}, {graph.num_vertices} vertices, {src.size} edges\n"
    try:
        import pyarrow as pa
        from pyarrow import csv as pa_csv
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        with _open_text_for_writing(path) as f:
            f.write(head)
            _write_pairs(f, src, dst, sep)
        return
    with _open_binary_for_writing(path) as f:
        f.write(head.encode())
        pa_csv.write_csv(pa.table({"u": src, "v": dst}), f,
                         pa_csv.WriteOptions(include_header=False, delimiter=sep,
                                             quoting_style="none"))
