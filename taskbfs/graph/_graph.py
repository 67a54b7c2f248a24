"""The ``Graph`` type: a compressed sparse row (CSR) adjacency, directed or undirected.

Encoding
--------
``indptr`` (int64, length n + 1) and ``indices`` (int32 when every vertex id fits in
int32, int64 beyond) hold the out-neighbours of vertex ``v`` in
``indices[indptr[v]:indptr[v + 1]]``, sorted ascending. An undirected graph stores each
edge twice (u→v and v→u). Self-loops and duplicate edges are never stored: BFS gains
nothing from them, and the Graph500 rules are unaffected.
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from taskbfs.errors import (
    EmptyGraphError,
    InsufficientMemoryError,
    InvalidGraphError,
    InvalidParameterError,
    InvalidVertexError,
)
from taskbfs.graph._threads import cores, cuts, run

#: Largest vertex count for which int32 ``indices`` are used.
INT32_VERTEX_LIMIT = np.iinfo(np.int32).max
#: Largest vertex count accepted (2^40: Graph500 scale 40). An edge list naming a huge id
#: would otherwise ask for per-vertex arrays of that size and die of memory exhaustion.
MAX_VERTICES = 1 << 40


#: The attributes of a Graph that cannot be reassigned once it is made.
_DATA_FIELDS = frozenset({"indptr", "indices", "num_vertices", "directed", "token"})


def index_dtype(num_vertices: int) -> np.dtype:
    """Return the dtype of ``indices`` for a graph of ``num_vertices`` vertices."""
    return np.dtype(np.int32) if num_vertices <= INT32_VERTEX_LIMIT else np.dtype(np.int64)


@dataclass(eq=False)
class Graph:
    """A graph in CSR form; build it with :meth:`from_edges`, :func:`read_graph` or
    :func:`kronecker` rather than by hand.

    A graph is immutable: its data attributes (``indptr``, ``indices``, ``num_vertices``,
    ``directed``, ``token``) cannot be reassigned and its arrays are read-only (a search
    places copies of them on the workers once, so a later change would be used by some
    searches and not by others). ``Graph(indptr, indices, n)`` copies an array that could
    still be written through (a writable array, or a view of one), so the caller's arrays
    stay as they were and writing them later changes no graph; that copy costs the
    array's size in memory once. A read-only array that owns its data (or a view of one)
    is kept as it is, without a copy. Build a new graph to change one. :meth:`validate` checks the arrays; :func:`~taskbfs.search` calls it once.

    Attributes
    ----------
    indptr : ndarray of int64, shape (num_vertices + 1,)
    indices : ndarray of int32 or int64, shape (num_arcs,)
        Out-neighbours, sorted within each vertex; no self-loops, no duplicates.
    num_vertices : int
    directed : bool
        False: every edge is stored in both directions.
    token : str
        Identity of this graph's data; workers cache partitions under it.
    labels : ndarray or None
        The user's vertex ids when they were not the integers 0..n-1 (strings, a networkx
        graph's nodes, ...): ``labels[v]`` is vertex ``v``'s id, :meth:`vertex` maps an
        id to its vertex. None: vertex ids are the integers themselves.

    Examples
    --------
    >>> import taskbfs as tb
    >>> g = tb.Graph.from_edges([0, 1, 1], [1, 2, 2])
    >>> g.num_vertices, g.num_edges
    (3, 2)
    >>> g.neighbors(1).tolist()
    [0, 2]
    """

    indptr: np.ndarray
    indices: np.ndarray
    num_vertices: int
    directed: bool = False
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    labels: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        for name in ("indptr", "indices"):
            arr = getattr(self, name)
            if isinstance(arr, np.ndarray):
                if not _frozen(arr):
                    arr = arr.copy()  # the caller may still write the original
                    object.__setattr__(self, name, arr)
                arr.setflags(write=False)

    def __setattr__(self, name, value):
        if name in _DATA_FIELDS and name in self.__dict__:
            raise AttributeError(f"a Graph cannot change: its {name} is fixed once it is made "
                                 f"(build a new graph)")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_edges(cls, src, dst=None, num_vertices: int | None = None, directed: bool = False,
                   relabel: bool | None = None, *, source: str | None = None,
                   target: str | None = None) -> Graph:
        """Build a graph from an edge list.

        Parameters
        ----------
        src, dst : array_like
            Edge endpoints, the same length. Integer ids are kept as given (ids that never
            appear become isolated vertices) unless ``relabel``. ``src`` may also be a
            DataFrame of edges, pandas or dask (``dst`` None), read as
            :meth:`from_pandas` reads it.
        num_vertices : int, optional
            Number of vertices; default ``max(src, dst) + 1``. Must exceed every id.
            Not with relabelled ids.
        directed : bool, default False
            False: the edge list is symmetrised (u–v becomes u→v and v→u).
            True: arcs are kept as given and BFS follows out-edges.
        relabel : bool, optional
            None (default): ids that are not integers (strings, tuples, ...) are numbered
            0..k-1 in sorted order and kept as ``labels``; True: any ids are
            (:func:`~taskbfs.graph.relabel`); False: ids must be integers.
        source, target : str, optional
            Only with a DataFrame: the columns of the edge endpoints (default ``"source"``
            and ``"target"``, as networkx's ``from_pandas_edgelist``).

        Returns
        -------
        Graph
            Self-loops and duplicate edges are dropped.

        Raises
        ------
        InvalidVertexError
            A negative id, or an id ≥ ``num_vertices``.
        EmptyGraphError
            No vertices at all (no edges and no ``num_vertices``).

        Examples
        --------
        >>> g = Graph.from_edges(["a", "b"], ["b", "c"])
        >>> g.labels.tolist(), g.vertex("c")
        (['a', 'b', 'c'], 2)
        >>> import pandas as pd
        >>> df = pd.DataFrame({"u": [0, 1], "v": [1, 2]})
        >>> Graph.from_edges(df, source="u", target="v").neighbors(1).tolist()
        [0, 2]
        """
        if not isinstance(directed, (bool, np.bool_)):
            raise InvalidParameterError(f"directed must be True or False, got {directed!r}")
        if dst is None and hasattr(src, "columns"):
            return cls.from_pandas(src, source=source or "source", target=target or "target",
                                   directed=directed, num_vertices=num_vertices,
                                   relabel=relabel)
        if source is not None or target is not None:
            raise InvalidParameterError(
                "source= and target= name the columns of a DataFrame of edges; got "
                f"{type(src).__name__} as src" + ("" if dst is None else " and dst as well"))
        if dst is None:
            raise InvalidParameterError("from_edges needs dst (or a DataFrame as src)")
        if relabel or (relabel is None and not (_integer_ids(src) and _integer_ids(dst))):
            return _relabelled(src, dst, num_vertices, directed)
        src = _as_vertex_array(src, "src")
        dst = _as_vertex_array(dst, "dst")
        if src.shape != dst.shape:
            raise InvalidParameterError(
                f"src and dst must have the same length, got {src.size} and {dst.size}"
            )
        return graph_of_pieces([(src, dst)], num_vertices, directed)

    @classmethod
    def made_valid(cls, indptr, indices, num_vertices: int, directed: bool) -> Graph:
        """A graph of CSR arrays that a taskbfs builder made or already checked: valid by
        construction, so :meth:`validate` (the first search's O(arcs) pass) has nothing
        to find and is skipped. The arrays are the builder's own: they are made read-only
        in place rather than copied."""
        for arr in (indptr, indices):
            _freeze(arr)
        graph = cls(indptr, indices, num_vertices, directed)
        graph._valid = True
        return graph

    @classmethod
    def from_csr(cls, indptr, indices, directed: bool = False) -> Graph:
        """Build a graph from CSR arrays, cleaning them as :meth:`from_edges` does.

        The arrays are not trusted: they are checked, and rows are sorted with self-loops
        and duplicates removed. Undirected input must already be symmetric or is
        symmetrised.
        """
        for name, arr in (("indptr", indptr), ("indices", indices)):
            kind = np.asarray(arr).dtype.kind
            if np.asarray(arr).size and kind not in "iu":  # a float would be truncated silently
                raise InvalidGraphError(f"{name} must hold integers, got dtype {np.asarray(arr).dtype}")
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices)
        if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise InvalidParameterError("indptr must start at 0 and never decrease")
        if indptr[-1] != indices.size:
            raise InvalidParameterError(
                f"indptr[-1] = {int(indptr[-1])} but indices has {indices.size} entries"
            )
        n = indptr.size - 1
        src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        return cls.from_edges(src, indices, num_vertices=n, directed=directed)

    @classmethod
    def from_scipy(cls, matrix, directed: bool | None = None) -> Graph:
        """Build a graph from a square scipy.sparse matrix or array (entry ``(i, j)``
        stored: arc ``i -> j``). See :func:`taskbfs.graph.from_scipy`."""
        from taskbfs.graph.convert import from_scipy

        return from_scipy(matrix, directed=directed)

    @classmethod
    def from_networkx(cls, G) -> Graph:
        """Build a graph from a networkx graph, keeping non-integer nodes as ``labels``.
        See :func:`taskbfs.graph.from_networkx`."""
        from taskbfs.graph.convert import from_networkx

        return from_networkx(G)

    @classmethod
    def from_pandas(cls, df, source: str = "source", target: str = "target",
                    directed: bool = False, num_vertices: int | None = None,
                    relabel: bool | None = None) -> Graph:
        """Build a graph from a DataFrame of edges (columns ``source`` and ``target``).
        See :func:`taskbfs.graph.from_pandas`."""
        from taskbfs.graph.convert import from_pandas

        return from_pandas(df, source=source, target=target, directed=directed,
                           num_vertices=num_vertices, relabel=relabel)

    def to_networkx(self):
        """This graph as a networkx ``Graph`` or ``DiGraph``; its nodes are the ``labels``
        when it has them, else the vertex numbers. See :func:`taskbfs.graph.to_networkx`."""
        from taskbfs.graph.convert import to_networkx

        return to_networkx(self)

    # ------------------------------------------------------------------ queries
    @property
    def num_arcs(self) -> int:
        """Number of stored arcs (``len(indices)``); twice the edges when undirected."""
        return int(self.indices.size)

    @property
    def num_edges(self) -> int:
        """Number of edges: arcs if directed, arcs / 2 if undirected."""
        return self.num_arcs if self.directed else self.num_arcs // 2

    def degrees(self) -> np.ndarray:
        """Out-degree of every vertex (int64 array)."""
        return np.diff(self.indptr)

    def degree(self, v: int) -> int:
        """Out-degree of vertex ``v``."""
        v = self.check_vertex(v)
        return int(self.indptr[v + 1] - self.indptr[v])

    def neighbors(self, v: int) -> np.ndarray:
        """Out-neighbours of vertex ``v`` (a view, sorted)."""
        v = self.check_vertex(v)
        return self.indices[self.indptr[v] : self.indptr[v + 1]]

    def check_vertex(self, v, name: str = "vertex") -> int:
        """Return ``v`` as an int if it is a vertex of this graph, else raise
        :class:`InvalidVertexError` naming it (an int or numpy integer; never a bool, a
        float or an array)."""
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise InvalidVertexError(
                f"{name} must be an integer vertex id, got {v!r} ({type(v).__name__})"
            )
        iv = int(v)
        if iv < 0 or iv >= self.num_vertices:
            raise InvalidVertexError(
                f"{name} {v!r} is not a vertex of this graph (valid ids: 0..{self.num_vertices - 1})"
            )
        return iv

    def vertex(self, v, name: str = "vertex") -> int:
        """The vertex number of ``v``: a label of a labelled graph (see ``labels``), else
        an integer id as :meth:`check_vertex` takes it."""
        if self.labels is None:
            return self.check_vertex(v, name)
        labels, index = self.__dict__.get("_label_index", (None, None))
        if labels is not self.labels:  # built on first use, again if the labels change
            index = {x: i for i, x in enumerate(self.labels.tolist())}
            self.__dict__["_label_index"] = (self.labels, index)
        try:
            return index[v]
        except (KeyError, TypeError):
            shown = ", ".join(repr(x) for x in self.labels[:3].tolist())
            raise InvalidVertexError(
                f"{name} {v!r} is not a vertex of this graph (its vertices are labelled: "
                f"{shown}{', ...' if self.num_vertices > 3 else ''})"
            ) from None

    def validate(self) -> Graph:
        """Check that the arrays are a CSR graph a search can read; returns the graph.

        ``indptr`` is int64 of ``num_vertices + 1`` entries, starts at 0, never decreases
        and ends at ``len(indices)``; every entry of ``indices`` (int32 or int64) is a
        vertex in ``0..num_vertices - 1``. One compiled O(arcs) pass, made once per graph
        (a graph is immutable). Rows need not be sorted nor free of duplicates for a
        search, and an undirected graph's symmetry is not checked.

        Raises
        ------
        InvalidGraphError
            Naming the first bad position (and vertex) found.
        """
        if self.__dict__.get("_valid"):
            return self
        n = _check_num_vertices(self.num_vertices)
        indptr, indices = self.indptr, self.indices
        for name, arr, dtypes in (("indptr", indptr, (np.int64,)),
                                  ("indices", indices, (np.int32, np.int64))):
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype not in dtypes:
                kind = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
                raise InvalidGraphError(
                    f"graph {name} must be a 1-D {' or '.join(np.dtype(d).name for d in dtypes)} "
                    f"array, got {kind}{'' if not isinstance(arr, np.ndarray) else f' of shape {arr.shape}'}"
                    f"; build graphs with Graph.from_csr or Graph.from_edges"
                )
        if indptr.size != n + 1:
            raise InvalidGraphError(
                f"graph indptr has {indptr.size} entries, but num_vertices = {n} needs {n + 1}"
            )
        code, at = _csr_problem(indptr, indices, np.int64(n))
        if code:
            raise InvalidGraphError(_csr_message(code, int(at), indptr, indices, n))
        self._valid = True
        return self

    def transpose(self) -> Graph:
        """The graph with every arc reversed (itself when undirected)."""
        if not self.directed:
            return self
        src = np.repeat(np.arange(self.num_vertices, dtype=np.int64), self.degrees())
        out = Graph.from_edges(self.indices, src, self.num_vertices, directed=True, relabel=False)
        out.labels = self.labels
        return out

    def to_scipy(self):
        """The adjacency as a ``scipy.sparse.csr_matrix`` of ones (for reference checks)."""
        from scipy.sparse import csr_matrix

        data = np.ones(self.indices.size, dtype=np.int8)
        n = self.num_vertices
        return csr_matrix((data, self.indices, self.indptr), shape=(n, n))

    def save(self, path, format: str | None = None) -> None:
        """Write the graph to ``path``: a ``.npz`` keeps everything (read it back with
        :func:`~taskbfs.graph.read_graph`); ``.mtx`` and edge-list suffixes write text.
        See :func:`taskbfs.graph.save_graph`.
        """
        from taskbfs.graph.io import save_graph  # io imports this module

        save_graph(self, path, format=format)

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"Graph({kind}, num_vertices={self.num_vertices}, num_edges={self.num_edges})"


def _frozen(arr: np.ndarray) -> bool:
    """Whether no one can write ``arr``'s data through numpy: it and every array it views
    are read-only, down to an array that owns its data (or immutable bytes)."""
    while isinstance(arr, np.ndarray):
        if arr.flags.writeable:
            return False
        if arr.base is None:
            return True
        arr = arr.base
    return isinstance(arr, bytes)


def _freeze(arr) -> None:
    """Make an array a builder made, and the arrays it views, read-only in place."""
    while isinstance(arr, np.ndarray):
        arr.setflags(write=False)
        arr = arr.base


def _integer_ids(values) -> bool:
    """Whether ``values`` hold integer vertex ids (integral floats count, as
    :func:`_as_vertex_array` takes them)."""
    if isinstance(values, (list, tuple)) and any(isinstance(v, tuple) for v in values):
        return False  # tuple ids (grid coordinates, ...), not rows of integers
    arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    return arr.dtype.kind in "iuf" or arr.size == 0


def _relabelled(src, dst, num_vertices, directed) -> Graph:
    """:meth:`Graph.from_edges` for ids numbered by :func:`~taskbfs.graph.relabel`."""
    from taskbfs.graph.convert import relabel

    if num_vertices is not None:
        raise InvalidParameterError("num_vertices cannot be given with relabelled vertex ids")
    (src_ids, dst_ids), labels = relabel(src, dst)
    if src_ids.size != dst_ids.size:
        raise InvalidParameterError(
            f"src and dst must have the same length, got {src_ids.size} and {dst_ids.size}"
        )
    graph = Graph.from_edges(src_ids, dst_ids, num_vertices=labels.size or None,
                             directed=directed, relabel=False)
    graph.labels = labels
    return graph


def _as_vertex_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidParameterError(f"{name} must be a 1-D sequence of vertex ids, got an "
                                    f"array of shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        # int64 would wrap such an id round to a negative one
        bad = int(np.flatnonzero(arr > np.iinfo(np.int64).max)[0])
        raise InvalidVertexError(f"{name}[{bad}] = {int(arr[bad])} is beyond the largest "
                                 f"vertex id taskbfs handles ({MAX_VERTICES - 1})")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidVertexError(
                f"{name} must hold integer vertex ids, got dtype {arr.dtype} "
                f"(other ids: relabel=True numbers them and keeps them as labels)"
            )
    if arr.dtype not in (np.int32, np.int64):  # those two are read as they are
        arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        bad = int(np.flatnonzero(arr < 0)[0])
        raise InvalidVertexError(f"{name}[{bad}] = {int(arr[bad])} is a negative vertex id")
    return arr


def _check_num_vertices(num_vertices) -> int:
    try:
        n = int(num_vertices)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"num_vertices must be an integer, got {num_vertices!r}") from None
    if n != num_vertices or isinstance(num_vertices, bool):
        raise InvalidParameterError(f"num_vertices must be an integer, got {num_vertices!r}")
    if n > MAX_VERTICES:
        raise InvalidParameterError(
            f"num_vertices = {n} is beyond what taskbfs handles ({MAX_VERTICES}); "
            f"vertex ids are kept as given, so relabel sparse ids to 0..k-1 first"
        )
    if n < 0:
        raise InvalidParameterError(f"num_vertices must be >= 0, got {n}")
    if n == 0:
        raise EmptyGraphError("the graph has no vertices (no edges and num_vertices=0)")
    return n


#: What :func:`_csr_problem` found: its codes.
_CSR_OK, _CSR_START, _CSR_DECREASES, _CSR_END, _CSR_VERTEX = range(5)


@njit(nogil=True, cache=True)
def _csr_problem(indptr, indices, n):  # pragma: no cover - numba
    """``(code, position)`` of the first way the CSR arrays are broken (``_CSR_OK``, 0
    when they are not): in ``indptr``, or the ``indices`` position of a bad vertex."""
    if indptr[0] != 0:
        return _CSR_START, 0
    for v in range(n):
        if indptr[v + 1] < indptr[v]:
            return _CSR_DECREASES, v + 1
    if indptr[n] != indices.size:
        return _CSR_END, n
    for k in range(indices.size):
        if indices[k] < 0 or indices[k] >= n:
            return _CSR_VERTEX, k
    return _CSR_OK, 0


def _csr_message(code: int, at: int, indptr, indices, n: int) -> str:
    """The message of the problem :func:`_csr_problem` found."""
    if code == _CSR_START:
        return f"graph indptr[0] = {int(indptr[0])}, must be 0"
    if code == _CSR_DECREASES:
        return (f"graph indptr decreases at position {at} (vertex {at - 1}): "
                f"indptr[{at - 1}] = {int(indptr[at - 1])} > indptr[{at}] = {int(indptr[at])}")
    if code == _CSR_END:
        return (f"graph indptr[{n}] = {int(indptr[n])}, but indices has {indices.size} "
                f"entries")
    row = int(np.searchsorted(indptr, at, side="right")) - 1
    return (f"graph indices[{at}] = {int(indices[at])} (a neighbour of vertex {row}) is not "
            f"a vertex: valid ids are 0..{n - 1}")


def _check_fits_in_memory(num_vertices: int, edges: int = 0, directed: bool = False,
                          extra: int = 0) -> None:
    """Refuse a build whose arrays exceed the memory free now (or, for the vertex arrays
    alone, this machine's): the CSR of ``num_vertices`` and up to ``edges`` edges (both
    arcs when undirected) as :func:`_chunks_to_csr` builds it, plus ``extra`` bytes."""
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
    # indptr, the arcs' targets, and the rows within blocks of one pass's arcs (2 bytes each)
    needed = (8 * (num_vertices + 1) + arcs * index_dtype(num_vertices).itemsize
              + 2 * arcs // _ROW_PASSES + extra)
    check_memory(needed, f"building a graph of {num_vertices:,} vertices and {edges:,} edges")


def check_memory(needed: int, what: str) -> None:
    """Raise :class:`InsufficientMemoryError` when ``needed`` bytes exceed the memory
    this machine has free now (``psutil.virtual_memory().available``)."""
    import psutil  # a dependency of distributed

    available = int(psutil.virtual_memory().available)
    if needed > available:
        raise InsufficientMemoryError(
            f"{what} needs {needed / 2**20:,.0f} MiB, but this machine has "
            f"{available / 2**20:,.0f} MiB free", needed, available)


def graph_of_pieces(pieces: list, num_vertices: int | None = None,
                    directed: bool = False, step=None) -> Graph:
    """:meth:`Graph.from_edges` of an edge list held in pieces, without joining them (a
    reader's pieces: joining them would add a copy of the edge list to the build's peak).

    Parameters
    ----------
    pieces : list of (src, dst)
        Pairs of int32 or int64 arrays of ids >= 0, the same length within a pair. The
        list is emptied as the pieces are written into the graph.
    num_vertices : int, optional
        Default: the largest id + 1.
    directed : bool
        As in :meth:`Graph.from_edges`.
    step : callable, optional
        Called with no argument after each of the build's :data:`CSR_STEPS` steps.
    """
    largest = max((int(max(s.max(initial=-1), d.max(initial=-1))) for s, d in pieces),
                  default=-1)
    if num_vertices is None:
        num_vertices = largest + 1
    num_vertices = _check_num_vertices(num_vertices)
    if largest >= num_vertices:
        offset = 0
        for src, dst in pieces:
            outside = np.flatnonzero((src >= num_vertices) | (dst >= num_vertices))
            if outside.size:
                bad = int(outside[0])
                raise InvalidVertexError(
                    f"edge {offset + bad} ({int(src[bad])}, {int(dst[bad])}) names a vertex "
                    f"outside 0..{num_vertices - 1} (num_vertices={num_vertices})"
                )
            offset += src.size
    _check_fits_in_memory(num_vertices, sum(s.size for s, _ in pieces), directed)
    indptr, indices = _chunks_to_csr(pieces, num_vertices, directed, step=step)
    return Graph.made_valid(indptr, indices, num_vertices, bool(directed))


def _chunks_to_csr(chunks: list, n: int, directed: bool, threads: int | None = None,
                   step=None):
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
    count and after each pass (:data:`CSR_STEPS` calls)."""
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
    groups = _block_groups(starts, _ROW_PASSES)
    for _ in range(_ROW_PASSES - len(groups)):
        step()  # (fewer groups than passes: their steps at once)
    rows = np.empty(max(starts[b] - starts[a] for a, b in groups), dtype=np.uint16)
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
