"""Graph files: ``read_graph(path) -> Graph`` and ``save_graph(graph, path)``.

Formats (chosen by the file's suffix, or by ``format=``)
---------------------------------------------------------
``"mtx"`` (``.mtx``, ``.mm``)
    MatrixMarket ``coordinate`` files (``pattern``, ``integer``, ``real`` or ``complex``
    field; values are ignored). Indices are 1-based in the file and 0-based in the graph.
    ``symmetric`` (also ``skew-symmetric``, ``hermitian``) files are undirected;
    ``general`` files are directed unless ``directed=False``.
``"edgelist"`` (``.txt``, ``.el``, ``.csv``, ``.tsv``)
    SNAP-style ``u v`` lines, whitespace or comma separated; columns after the second
    (weights, timestamps) are ignored; ``#`` and ``%`` start comments; one optional header
    line (e.g. ``src,dst``). Ids are 0-based and kept as given: no relabelling, gaps are
    isolated vertices. Undirected unless ``directed=True``.
``"npz"`` (``.npz``)
    taskbfs's own format: the CSR arrays ``indptr``, ``indices`` plus ``num_vertices``,
    ``directed`` and ``taskbfs_version`` (currently 1), written with :func:`numpy.savez`.

Any of these may be compressed (``.gz``, ``.bz2``, ``.xz`` after the suffix) except npz.

Approach
--------
Uncompressed text files are parsed by a compiled parser on every core
(:func:`_compiled_pairs`: the file read 32 MiB of whole lines at a time, each block cut
at line starts into pieces parsed at once), strict about what a line holds: two
unsigned decimal ids, then a blank, the separator or the end of the line (columns after
the second are not read). fast_matrix_market (``scipy.io.mmread``'s parser) and pyarrow's CSV reader
were measured as fast, but take ``17 1.5e2`` for (17, 1) and ``0x1f`` for 31: a silent
wrong graph. A file the compiled parser refuses (comments between the edges, a quoted or
signed id, a compressed file...) is parsed by pandas' C reader (comments, blank lines,
extra columns) in one call. Nothing loops over lines in Python while a file is well
formed. When the fast paths fail, or yield a value that is not a valid vertex id, a
careful line-by-line scan runs over the file to find the first bad line, so that every
error is a :class:`~taskbfs.errors.GraphFormatError` naming the file and the 1-based
line number. MatrixMarket files are written by fast_matrix_market (``scipy.io.mmwrite``'s
writer), edge lists by pyarrow's CSV writer (pandas where pyarrow is not installed).
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import errno
import gzip
import io
import lzma
import mmap
import os
import re
import warnings
import zipfile
from array import array
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from taskbfs.errors import EmptyGraphError, GraphFormatError, InvalidParameterError
from taskbfs.graph._graph import CSR_STEPS, Graph, graph_of_pieces, index_dtype
from taskbfs.graph._progress import BuildProgress
from taskbfs.graph._threads import cores, run

__all__ = ["read_graph", "read_edges", "byte_ranges", "check_entry_count", "save_graph",
           "KNOWN_FORMATS", "GraphFileNotFoundError"]

#: Format names accepted by ``format=``.
KNOWN_FORMATS = ("mtx", "edgelist", "npz")

#: File suffix -> format.
SUFFIX_FORMATS = {
    ".mtx": "mtx",
    ".mm": "mtx",
    ".txt": "edgelist",
    ".el": "edgelist",
    ".csv": "edgelist",
    ".tsv": "edgelist",
    ".npz": "npz",
}

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}

#: Version of the .npz layout written by :func:`save_graph`.
NPZ_VERSION = 1

_INT_RE = re.compile(rb"[+-]?[0-9]+\Z")
_NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INT64_MAX = np.iinfo(np.int64).max


class GraphFileNotFoundError(GraphFormatError, FileNotFoundError):
    """The graph file does not exist (both a ``GraphFormatError`` and a ``FileNotFoundError``)."""

    def __init__(self, path: str):
        super().__init__("no such file", path)
        self.errno = errno.ENOENT
        self.strerror = "no such file"
        self.filename = path

    def __reduce__(self):
        return type(self), (self.filename,)

    def __str__(self) -> str:  # OSError's would be "[Errno 2] None: 'path'"
        return f"no such file: {self.filename}"


# ====================================================================== public API
def read_graph(path, format: str | None = None, directed: bool | None = None,
               progress=None) -> Graph:
    """Read a graph from a MatrixMarket, SNAP edge-list or taskbfs ``.npz`` file.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Its suffix picks the format (``.mtx``/``.mm``; ``.txt``, ``.el``,
        ``.csv``, ``.tsv``; ``.npz``), optionally followed by ``.gz``, ``.bz2`` or ``.xz``.
    format : {"mtx", "edgelist", "npz"}, optional
        Overrides the suffix.
    directed : bool, optional
        Default: edge lists are undirected; MatrixMarket ``general`` files are directed and
        ``symmetric`` ones undirected; ``.npz`` files keep what was saved. ``False``
        symmetrises a directed input. ``True`` keeps arcs as given (a symmetric
        MatrixMarket file then gives both arcs of each entry).
    progress : None, bool or callable
        A bar for a read of more than a few seconds (None: when someone may be watching),
        or a function ``progress(done, total)`` (:mod:`taskbfs.graph._progress`).

    Returns
    -------
    Graph
        Self-loops and duplicate edges dropped. Edge-list ids are kept as given (0-based, no
        relabelling: ids that never appear become isolated vertices, and
        ``num_vertices = max id + 1``). MatrixMarket ids are shifted to 0-based and
        ``num_vertices`` is the declared matrix size.

    Raises
    ------
    GraphFormatError
        The file is malformed; the message names the file and the 1-based line.
    GraphFileNotFoundError
        The file does not exist (a ``GraphFormatError`` and a ``FileNotFoundError``).
    EmptyGraphError
        The file describes no vertices at all (e.g. an empty edge list).
    InvalidParameterError
        Unknown ``format`` or suffix.

    Examples
    --------
    >>> import os, tempfile
    >>> from taskbfs.graph import read_graph
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("# a comment\\n0 1\\n1 2\\n")
    >>> g = read_graph(path)
    >>> g.num_vertices, g.num_edges, g.directed
    (3, 2, False)
    """
    path, fmt, directed = _checked_file(path, format, directed)
    if fmt == "npz":
        return _read_npz(path, directed)
    with BuildProgress(progress, f"reading {os.path.basename(path)}", 1 + CSR_STEPS) as bar:
        if fmt == "mtx":
            return _read_mtx(path, directed, bar)
        return _read_edgelist(path, directed, bar)


def read_edges(path, format: str | None = None, directed: bool | None = None,
               byte_range: tuple[int, int] | None = None):
    """The edges of one MatrixMarket or edge-list file, before any graph is built (a
    graph built in pieces reads its files this way, one per task).

    Parameters are those of :func:`read_graph` (``.npz`` files hold a graph, not edges,
    and are refused), and:

    byte_range : (start, stop), optional
        Read only the lines of an uncompressed edge-list or MatrixMarket file that start
        at a byte offset in ``start .. stop - 1`` (:func:`byte_ranges` cuts a file into
        such ranges; every line falls in exactly one; a MatrixMarket range reads the
        header lines too, and keeps only the entries). Errors still name the file's line;
        that a MatrixMarket file holds the entries it declares is checked over all its
        ranges by :func:`check_entry_count`.

    Returns
    -------
    src, dst : ndarray of int64
        0-based endpoints as the file lists them (a symmetric MatrixMarket file read as
        directed lists both arcs of each entry).
    num_vertices : int or None
        The declared size of a MatrixMarket file; None for an edge list.
    directed : bool
        Whether the edges are arcs (``directed``, or the file's default as in
        :func:`read_graph`).
    """
    path, fmt, directed = _checked_file(path, format, directed)
    if fmt == "npz":
        raise InvalidParameterError(f"{path}: an .npz file holds a graph, not an edge list")
    if byte_range is not None:
        _check_rangeable(path, fmt)
        start, stop = int(byte_range[0]), int(byte_range[1])
        if fmt == "mtx":
            return _mtx_range(path, start, stop, directed)
        src, dst = _edgelist_range(path, start, stop)
        return src, dst, None, bool(directed)
    if fmt == "mtx":
        pieces, n, directed = _mtx_pieces(path, directed)
        return (*_joined(pieces), n, directed)
    src, dst = _joined(_edgelist_pieces(path))
    return src, dst, None, bool(directed)


def byte_ranges(path, size: int, format: str | None = None) -> list[tuple[int, int]] | None:
    """``(start, stop)`` byte ranges of about ``size`` bytes covering an uncompressed
    edge-list or MatrixMarket file (for :func:`read_edges`; from the file's size alone,
    nothing read); None for a file that cannot be read in ranges (compressed, .npz)."""
    path = os.fspath(path)
    fmt = _resolve_format(path, format)
    if fmt == "npz" or os.path.splitext(path)[1].lower() in _COMPRESSED:
        return None
    if not os.path.exists(path):
        raise GraphFileNotFoundError(path)
    total = os.path.getsize(path)
    cuts = list(range(0, total, max(1, int(size)))) + [total]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)] or [(0, 0)]


def _check_rangeable(path: str, fmt: str) -> None:
    if fmt == "npz" or os.path.splitext(path)[1].lower() in _COMPRESSED:
        raise InvalidParameterError(
            f"{path}: only uncompressed edge-list and MatrixMarket files are read in byte "
            f"ranges")


def check_entry_count(path, format: str | None, *counts: int) -> None:
    """Check that the byte ranges of a file (:func:`read_edges` with ``byte_range``)
    read ``counts`` entries in all, as a MatrixMarket file's size line declares (nothing
    to check for an edge list). Otherwise the file is read again, line by line, to raise
    the :class:`~taskbfs.errors.GraphFormatError` naming the line (too few entries, or
    the first one too many)."""
    path = os.fspath(path)
    if _resolve_format(path, format) != "mtx":
        return
    head = _mtx_header(path)
    if sum(int(c) for c in counts) != head.nnz:
        _scan_mtx(path, head)  # raises
        raise GraphFormatError(  # pragma: no cover - the scan finds it
            f"the byte ranges read {sum(counts)} entries, not the {head.nnz} declared", path,
            head.size_line)


def _checked_file(path, format, directed):
    """``(path, format, directed)`` checked: a known format, an existing file."""
    path = os.fspath(path)
    fmt = _resolve_format(path, format)
    if directed is not None and not isinstance(directed, (bool, np.bool_)):
        raise InvalidParameterError(f"directed must be True, False or None, got {directed!r}")
    if not os.path.exists(path):
        raise GraphFileNotFoundError(path)
    if os.path.isdir(path):
        raise GraphFormatError("is a directory, not a graph file", path)
    return path, fmt, None if directed is None else bool(directed)


def save_graph(graph: Graph, path, format: str | None = None) -> None:
    """Write ``graph`` to ``path``; :meth:`Graph.save` calls this.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
        Written exactly as given (no suffix is appended).
    format : {"npz", "mtx", "edgelist"}, optional
        Default from the suffix. ``npz`` keeps everything (the arrays, ``num_vertices``,
        ``directed``, the ``labels`` when they are all strings or all numbers; other
        formats refuse a labelled graph). ``mtx`` writes a ``pattern`` file: ``symmetric`` (lower triangle)
        when undirected, ``general`` when directed. ``edgelist`` writes ``u v`` lines
        (comma separated for ``.csv``, tab otherwise), each undirected edge once with
        ``u < v``; isolated vertices above the largest id are not representable there.

    Examples
    --------
    >>> import os, tempfile
    >>> from taskbfs.graph import Graph, read_graph, save_graph
    >>> g = Graph.from_edges([0, 1], [1, 2])
    >>> path = os.path.join(tempfile.mkdtemp(), "g.npz")
    >>> save_graph(g, path)
    >>> h = read_graph(path)
    >>> (h.indices == g.indices).all(), h.num_vertices
    (np.True_, 3)
    """
    if not isinstance(graph, Graph):
        raise InvalidParameterError(f"save_graph needs a Graph, got {type(graph).__name__}")
    path = os.fspath(path)
    fmt = _resolve_format(path, format)
    if graph.labels is not None and fmt != "npz":
        raise InvalidParameterError(
            f"{path}: a {fmt} file has integer vertex ids only, and this graph's vertices are "
            "labelled (Graph.labels); save it as .npz, which keeps the labels"
        )
    if fmt == "npz":
        _write_npz(graph, path)
    elif fmt == "mtx":
        _write_mtx(graph, path)
    else:
        _write_edgelist(graph, path)


# ====================================================================== formats & files
def _resolve_format(path: str, format: str | None) -> str:
    if format is not None:
        if format not in KNOWN_FORMATS:
            raise InvalidParameterError(
                f"unknown graph format {format!r}; known formats: {', '.join(KNOWN_FORMATS)}"
            )
        return format
    suffix = _base_suffix(path)
    if suffix not in SUFFIX_FORMATS:
        known = ", ".join(SUFFIX_FORMATS)
        raise InvalidParameterError(
            f"cannot tell the format of {path!r} from its suffix {suffix or '(none)'!r}; "
            f"known suffixes: {known} (optionally + .gz/.bz2/.xz), or pass format= one of "
            f"{', '.join(KNOWN_FORMATS)}"
        )
    fmt = SUFFIX_FORMATS[suffix]
    if fmt == "npz" and os.path.splitext(path)[1].lower() in _COMPRESSED:
        raise InvalidParameterError(f"{path!r}: .npz files are zip archives; do not compress them")
    return fmt


def _base_suffix(path: str) -> str:
    """The suffix that names the format, looking through a compression suffix."""
    root, suffix = os.path.splitext(path)
    if suffix.lower() in _COMPRESSED:
        suffix = os.path.splitext(root)[1]
    return suffix.lower()


def _open_binary(path: str):
    suffix = os.path.splitext(path)[1].lower()
    return _COMPRESSED.get(suffix, open)(path, "rb")


def _open_text_for_writing(path: str):
    suffix = os.path.splitext(path)[1].lower()
    opener = _COMPRESSED.get(suffix, open)
    return opener(path, "wt", newline="\n", encoding="utf-8")


def _numbered_lines(path: str):
    """Yield ``(lineno, stripped bytes)`` for every line, 1-based; bad compression or
    decoding becomes a GraphFormatError at the line where it happened."""
    lineno = 0
    try:
        with _open_binary(path) as f:
            for lineno, raw in enumerate(f, 1):  # noqa: B007 (lineno used after the loop)
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                yield lineno, raw.strip()
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise GraphFormatError(f"cannot read the file ({exc})", path, lineno + 1) from None


def _check_text(text: bytes, path: str, lineno: int) -> None:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        raise GraphFormatError("not UTF-8 text (is this a binary file?)", path, lineno) from None


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


# ====================================================================== tokens
def _split(body: bytes, sep: bytes | None) -> list[bytes]:
    if sep is None:
        return body.split()
    return [t.strip().strip(b"\"'") for t in body.split(sep)]


def _strip_comment(text: bytes) -> bytes:
    """Drop everything from the first ``#`` or ``%``."""
    for ch in (b"#", b"%"):
        cut = text.find(ch)
        if cut >= 0:
            text = text[:cut]
    return text.strip()


def _parse_id(token: bytes, path: str, lineno: int, what: str = "vertex id") -> int:
    """A token as a non-negative int, or a GraphFormatError saying what is wrong with it."""
    shown = token.decode("utf-8", "replace")
    if _INT_RE.match(token):
        if len(token.lstrip(b"+-0")) > 19:  # int() refuses over 4,300 digits; 2**63 has 19
            raise GraphFormatError(f"{what} {shown[:20]}... ({len(token)} characters) is too "
                                   f"large (above 2**63 - 1)", path, lineno)
        value = int(token)
        if value < 0:
            raise GraphFormatError(f"negative {what} {shown}", path, lineno)
        if value > _INT64_MAX:
            raise GraphFormatError(f"{what} {shown} is too large (above 2**63 - 1)", path, lineno)
        return value
    if _NUMBER_RE.match(token):
        raise GraphFormatError(f"{what} {shown!r} is not an integer", path, lineno)
    raise GraphFormatError(f"non-numeric token {shown!r} where a {what} was expected", path, lineno)


# ====================================================================== edge lists
@dataclass(frozen=True)
class _EdgeListLayout:
    """What a look at the first lines tells about an edge list."""

    seps: tuple[str, ...]  # pandas separators to try, best first
    split: bytes | None  # separator for the line scan (None: whitespace)
    comment: str  # comment character for pandas
    header_line: int  # 1-based line of the header, 0 if none
    first_line: int = 1  # 1-based line of the first edge
    columns: int = 2  # columns of the first edge's line


def _read_edgelist(path: str, directed: bool | None, bar) -> Graph:
    # the pieces as read, never joined: a joined copy would add the edge list to the peak
    pieces = _edgelist_pieces(path, narrow=True)
    bar.update()
    return graph_of_pieces(pieces, directed=bool(directed), step=bar.update)


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


def _read_block(path: str, start: int, stop: int) -> tuple[int, bytes]:
    """``(begin, block)``: the bytes of the lines of a file that start at an offset in
    ``[start, stop)``, from ``begin``, the first one's offset."""
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            f.readline()  # the rest of a line that started before ``start``
        begin = f.tell()
        block = f.read(max(0, stop - begin)) if begin < stop else b""
        if block and not block.endswith(b"\n"):
            block += f.readline()  # the line that starts before ``stop`` ends after it
    return begin, block


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


def _line_number(path: str, offset: int) -> int:
    """The 1-based number of the line starting at byte ``offset`` (counts the lines
    before it: only on the way to an error)."""
    count = 0
    with open(path, "rb") as f:
        while f.tell() < offset:
            count += f.read(min(1 << 24, offset - f.tell())).count(b"\n")
    return count + 1


# ====================================================================== MatrixMarket
_MTX_FIELDS = ("pattern", "integer", "real", "complex")
_MTX_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


@dataclass(frozen=True)
class _MtxHeader:
    n: int
    nnz: int
    symmetric: bool
    size_line: int  # 1-based line of "rows cols nnz"; data follows it


def _read_mtx(path: str, directed: bool | None, bar) -> Graph:
    pieces, n, directed = _mtx_pieces(path, directed, narrow=True)
    bar.update()
    return graph_of_pieces(pieces, num_vertices=n, directed=directed, step=bar.update)


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


def _offset_of_line(f, line: int) -> int:
    """The byte offset of the 1-based ``line`` of the binary file ``f``."""
    for _ in range(line - 1):
        f.readline()
    return f.tell()


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


# ====================================================================== npz
_NPZ_KEYS = ("taskbfs_version", "indptr", "indices", "num_vertices", "directed")


def _write_npz(graph: Graph, path: str) -> None:
    extra = {} if graph.labels is None else {"labels": _plain_labels(graph.labels, path)}
    with open(path, "wb") as f:
        np.savez(
            f,
            taskbfs_version=np.int64(NPZ_VERSION),
            indptr=graph.indptr,
            indices=graph.indices,
            num_vertices=np.int64(graph.num_vertices),
            directed=np.bool_(graph.directed),
            **extra,
        )


def _plain_labels(labels: np.ndarray, path: str) -> np.ndarray:
    """Labels as an array .npz keeps without pickling (strings or numbers of one kind)."""
    if labels.dtype != object:
        return labels
    kinds = {type(x) for x in labels.tolist()}
    plain = np.asarray(labels.tolist()) if len(kinds) == 1 and kinds <= {str, int, float} else None
    if plain is None or plain.dtype == object or plain.shape != labels.shape:
        raise InvalidParameterError(
            f"{path}: .npz keeps labels that are all strings or all numbers; these are "
            f"{', '.join(sorted(k.__name__ for k in kinds))} (save graph.labels yourself)"
        )
    return plain


def _read_npz(path: str, directed: bool | None) -> Graph:
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in _NPZ_KEYS if k not in z.files]
            if missing:
                raise GraphFormatError(
                    f"not a taskbfs graph file: missing array(s) {', '.join(missing)}", path
                )
            data = {k: z[k] for k in _NPZ_KEYS}
            labels = z["labels"] if "labels" in z.files else None
    except GraphFormatError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise GraphFormatError(f"cannot read as a taskbfs .npz file ({exc})", path) from None
    version = _npz_scalar(data, "taskbfs_version", path)
    if version != NPZ_VERSION:
        raise GraphFormatError(
            f"taskbfs .npz version {version} is not supported (this taskbfs reads version {NPZ_VERSION})",
            path,
        )
    n = _npz_scalar(data, "num_vertices", path)
    if data["directed"].shape != () or data["directed"].dtype != np.bool_:
        raise GraphFormatError("directed must be a boolean scalar", path)
    stored_directed = bool(data["directed"])
    indptr, indices = _check_csr(data["indptr"], data["indices"], n, stored_directed, path)
    if labels is not None and labels.shape != (n,):
        raise GraphFormatError(f"labels must hold one label per vertex ({n}), got shape {labels.shape}", path)
    if directed is None or directed == stored_directed:
        graph = Graph.made_valid(indptr, indices, n, stored_directed)
    elif directed:
        graph = Graph.made_valid(indptr, indices, n, True)  # both arcs of every edge, kept as arcs
    else:
        graph = Graph.from_csr(indptr, indices, directed=False)  # symmetrise
    graph.labels = labels
    return graph


def _npz_scalar(data: dict, key: str, path: str) -> int:
    value = data[key]
    if value.shape != () or not np.issubdtype(value.dtype, np.integer):
        raise GraphFormatError(f"{key} must be an integer scalar", path)
    return int(value)


def _check_csr(indptr, indices, n: int, directed: bool, path: str):
    """Cheap O(arcs) checks that saved CSR arrays obey the Graph invariants."""

    def bad(message):
        return GraphFormatError(f"corrupt taskbfs .npz: {message}", path)

    if n < 1:
        raise bad(f"num_vertices = {n}")
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if arr.ndim != 1 or arr.dtype.kind != "i":
            raise bad(f"{name} must be a 1-D signed integer array")
    if indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        raise bad(f"indptr must have {n + 1} entries from 0 to len(indices) = {indices.size}")
    degrees = np.diff(indptr)
    if degrees.size and degrees.min() < 0:
        raise bad("indptr decreases")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise bad(f"indices name vertices outside 0..{n - 1}")
    problem = _row_problem(indptr, indices)
    if problem == _ROW_UNSORTED:
        raise bad("a row is unsorted or holds a duplicate")
    if problem == _ROW_SELF_LOOP:
        raise bad("self-loops are stored")
    if not directed and not np.array_equal(np.bincount(indices, minlength=n), degrees):
        raise bad("undirected graph whose in-degrees differ from its out-degrees (not symmetric)")
    if not directed:
        u = int(_asymmetric_arc(indptr, indices))
        if u >= 0:
            v = int(indices[indptr[u]:indptr[u + 1]][~_has_arc_back(indptr, indices, u)][0])
            raise bad(f"undirected graph is not symmetric: arc {u}->{v} is stored, {v}->{u} is not")
    return indptr.astype(np.int64, copy=False), indices.astype(index_dtype(n), copy=False)


_ROW_OK, _ROW_UNSORTED, _ROW_SELF_LOOP = 0, 1, 2


@njit(nogil=True, cache=True)
def _asymmetric_arc(indptr, indices):  # pragma: no cover - numba
    """The first vertex u with an arc u->v whose reverse v->u is not stored, or -1; rows
    are sorted (checked before), so each reverse is a binary search."""
    for u in range(indptr.size - 1):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            j = np.searchsorted(indices[indptr[v]:indptr[v + 1]], u)
            if j >= indptr[v + 1] - indptr[v] or indices[indptr[v] + j] != u:
                return u
    return -1


def _has_arc_back(indptr, indices, u: int) -> np.ndarray:
    """For each arc u->v, whether v->u is stored (used once, to name a missing one)."""
    return np.array([u in indices[indptr[v]:indptr[v + 1]]
                     for v in indices[indptr[u]:indptr[u + 1]].tolist()], dtype=bool)


@njit(nogil=True, cache=True)
def _row_problem(indptr, indices):  # pragma: no cover - numba
    """Whether a row of valid CSR arrays is unsorted or holds a repeat, or a self-loop,
    in one pass with no temporary (numpy's diff and repeat cost 9 bytes an arc, several
    times the CSR of a .npz being read)."""
    for v in range(indptr.size - 1):
        for k in range(indptr[v], indptr[v + 1]):
            if k > indptr[v] and indices[k] <= indices[k - 1]:
                return _ROW_UNSORTED
            if indices[k] == v:
                return _ROW_SELF_LOOP
    return _ROW_OK


# ====================================================================== text writers
def _write_mtx(graph: Graph, path: str) -> None:
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


def _write_edgelist(graph: Graph, path: str) -> None:
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


def _open_binary_for_writing(path: str):
    suffix = os.path.splitext(path)[1].lower()
    return _COMPRESSED.get(suffix, open)(path, "wb")


def _arcs(graph: Graph, lower: bool = False, upper: bool = False):
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
