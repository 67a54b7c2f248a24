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

import uuid
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from taskbfs.errors import (
    EmptyGraphError,
    InvalidGraphError,
    InvalidParameterError,
    InvalidVertexError,
)
from taskbfs.graph import _pydata
from taskbfs.graph._csr import (
    check_fits_in_memory,
    csr_of_pieces,
)
from taskbfs.graph._write import write_graph

#: Largest vertex count accepted (2^40: Graph500 scale 40). An edge list naming a huge id
#: would otherwise ask for per-vertex arrays of that size and die of memory exhaustion.
MAX_VERTICES = 1 << 40


#: The attributes of a Graph that cannot be reassigned once it is made.
_DATA_FIELDS = frozenset({"indptr", "indices", "num_vertices", "directed", "token"})


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
        src = as_vertex_array(src, "src")
        dst = as_vertex_array(dst, "dst")
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
        indptr, indices, directed = _pydata.scipy_arcs(matrix, directed)
        return cls.from_csr(indptr, indices, directed=directed)

    @classmethod
    def from_networkx(cls, G) -> Graph:
        """Build a graph from a networkx graph, keeping non-integer nodes as ``labels``.
        See :func:`taskbfs.graph.from_networkx`."""
        src, dst, n, directed, labels = _pydata.networkx_edges(G)
        graph = cls.from_edges(src, dst, num_vertices=n, directed=directed, relabel=False)
        graph.labels = labels
        return graph

    @classmethod
    def from_pandas(cls, df, source: str = "source", target: str = "target",
                    directed: bool = False, num_vertices: int | None = None,
                    relabel: bool | None = None) -> Graph:
        """Build a graph from a DataFrame of edges (columns ``source`` and ``target``).
        See :func:`taskbfs.graph.from_pandas`."""
        src, dst = _pydata.pandas_edges(df, source, target)
        return cls.from_edges(src, dst, num_vertices=num_vertices, directed=directed,
                              relabel=relabel)

    def to_networkx(self):
        """This graph as a networkx ``Graph`` or ``DiGraph``; its nodes are the ``labels``
        when it has them, else the vertex numbers. See :func:`taskbfs.graph.to_networkx`."""
        return _pydata.to_networkx(self)

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
        n = check_num_vertices(self.num_vertices)
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
        write_graph(self, path, format)

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
    :func:`as_vertex_array` takes them)."""
    if isinstance(values, (list, tuple)) and any(isinstance(v, tuple) for v in values):
        return False  # tuple ids (grid coordinates, ...), not rows of integers
    arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    return arr.dtype.kind in "iuf" or arr.size == 0


def _relabelled(src, dst, num_vertices, directed) -> Graph:
    """:meth:`Graph.from_edges` for ids numbered by :func:`~taskbfs.graph.relabel`."""
    if num_vertices is not None:
        raise InvalidParameterError("num_vertices cannot be given with relabelled vertex ids")
    (src_ids, dst_ids), labels = _pydata.relabel(src, dst)
    if src_ids.size != dst_ids.size:
        raise InvalidParameterError(
            f"src and dst must have the same length, got {src_ids.size} and {dst_ids.size}"
        )
    graph = Graph.from_edges(src_ids, dst_ids, num_vertices=labels.size or None,
                             directed=directed, relabel=False)
    graph.labels = labels
    return graph


def as_vertex_array(values, name: str) -> np.ndarray:
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


def check_num_vertices(num_vertices) -> int:
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


def graph_of_pieces(pieces: list, num_vertices: int | None = None,
                    directed: bool = False, step=None, owned: bool = False) -> Graph:
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
    owned : bool
        Nothing but ``pieces`` holds the arrays (a reader's): each is given back once
        written (``csr_of_pieces``' ``owned``).
    """
    largest = max((int(max(s.max(initial=-1), d.max(initial=-1))) for s, d in pieces),
                  default=-1)
    if num_vertices is None:
        num_vertices = largest + 1
    num_vertices = check_num_vertices(num_vertices)
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
    check_fits_in_memory(num_vertices, sum(s.size for s, _ in pieces), directed, owned=owned)
    indptr, indices = csr_of_pieces(pieces, num_vertices, directed, step=step, owned=owned)
    return Graph.made_valid(indptr, indices, num_vertices, bool(directed))


