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

This module is the face: each format reads into pieces of ids in a module of its own
(``_edgelist``, ``_mtx``, ``_npz``; the shared parsers in ``_text``, what every file
needs in ``_files``), and the graph is built here from the pieces without joining them.
"""

from __future__ import annotations

import os

from taskbfs.errors import GraphFormatError, InvalidParameterError
from taskbfs.graph._csr import CSR_STEPS
from taskbfs.graph._edgelist import _edgelist_pieces, _edgelist_range
from taskbfs.graph._files import (
    _COMPRESSED,
    KNOWN_FORMATS,
    GraphFileNotFoundError,
    _checked_file,
    _resolve_format,
)
from taskbfs.graph._graph import Graph, graph_of_pieces
from taskbfs.graph._mtx import _mtx_header, _mtx_pieces, _mtx_range, _scan_mtx
from taskbfs.graph._npz import NPZ_VERSION, _npz_arrays
from taskbfs.graph._progress import BuildProgress
from taskbfs.graph._text import _joined
from taskbfs.graph._write import write_graph

__all__ = ["read_graph", "read_edges", "byte_ranges", "check_entry_count", "file_arcs",
           "save_graph",
           "KNOWN_FORMATS", "NPZ_VERSION", "GraphFileNotFoundError"]


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


def file_arcs(path, format: str | None = None, directed: bool | None = None) -> int | None:
    """The arcs a build from an uncompressed edge-list or MatrixMarket file will write
    (self-loops and repeats aside: they only lower it), from the file's size before it is
    read, for a memory check before the reading: a MatrixMarket file's declared entries
    (both arcs when symmetric or ``directed`` is False), exactly; an edge list's bytes
    over its mean bytes per line in :data:`_SAMPLES` samples spread over the file (both
    arcs unless ``directed``), an estimate. None for a file whose size tells nothing
    (compressed, .npz)."""
    path, fmt, directed = _checked_file(path, format, directed)
    if fmt == "npz" or os.path.splitext(path)[1].lower() in _COMPRESSED:
        return None
    if fmt == "mtx":
        head = _mtx_header(path)
        return head.nnz * (1 if directed or (directed is None and not head.symmetric) else 2)
    size = os.path.getsize(path)
    lines = sampled = 0
    with open(path, "rb") as f:
        for k in range(_SAMPLES):
            f.seek(size * k // _SAMPLES)
            block = f.read(_SAMPLE_BYTES)
            lines, sampled = lines + block.count(b"\n"), sampled + len(block)
    edges = -(-size * max(lines, 1) // max(sampled, 1))
    return edges * (1 if directed else 2)


#: Places :func:`file_arcs` reads an edge list's line lengths at, and the bytes read at each.
_SAMPLES, _SAMPLE_BYTES = 8, 1 << 16


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
    write_graph(graph, path, format)


def _read_edgelist(path: str, directed: bool | None, bar) -> Graph:
    # the pieces as read, never joined: a joined copy would add the edge list to the peak
    pieces = _edgelist_pieces(path, narrow=True)
    bar.update()
    return graph_of_pieces(pieces, directed=bool(directed), step=bar.update, owned=True)


def _read_mtx(path: str, directed: bool | None, bar) -> Graph:
    pieces, n, directed = _mtx_pieces(path, directed, narrow=True)
    bar.update()
    return graph_of_pieces(pieces, num_vertices=n, directed=directed, step=bar.update,
                           owned=True)


def _read_npz(path: str, directed: bool | None) -> Graph:
    indptr, indices, n, stored, labels = _npz_arrays(path)
    if directed is None or directed == stored:
        graph = Graph.made_valid(indptr, indices, n, stored)
    elif directed:
        graph = Graph.made_valid(indptr, indices, n, True)  # both arcs of every edge, kept as arcs
    else:
        graph = Graph.from_csr(indptr, indices, directed=False)  # symmetrise
    graph.labels = labels
    return graph
