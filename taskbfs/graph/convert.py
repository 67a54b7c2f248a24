"""Graphs from and to the PyData world: scipy.sparse, networkx, pandas, arbitrary vertex ids.

Returns
    :func:`from_scipy`, :func:`from_networkx`, :func:`from_pandas` -> :class:`Graph`;
    :func:`to_networkx` -> a networkx graph; :func:`relabel` -> ids 0..k-1 and the labels;
    :func:`as_graph`: what :func:`taskbfs.search` calls on its ``graph`` argument.
Encoding
    A graph built from vertex ids that are not the integers 0..n-1 (strings, tuples, a
    networkx graph's nodes) numbers its vertices 0..k-1 and keeps the original ids in
    ``Graph.labels`` (``labels[v]`` is vertex ``v``'s id); ``Graph.vertex(label)`` maps
    back, and a search's result keeps the labels (``BFSResult.distance_dict``).
Approach
    scipy.sparse: every stored entry is an arc ``row -> column`` (its value is ignored;
    explicitly stored zeros are arcs too, as in ``scipy.sparse.csgraph``). networkx:
    nodes in ``G.nodes`` order. :func:`as_graph` converts a scipy matrix or networkx
    graph once and keeps the result with the object: a networkx graph in its
    ``__networkx_cache__`` (which networkx empties whenever the graph is changed through
    its methods), a scipy matrix in a table keyed by the object and checked against a
    CRC-32 of its structure arrays at every call (so an edited matrix is converted again).
    A cached graph keeps its ``token``, so its partitions stay placed on the workers.

No Dask here; networkx and pandas are imported only when asked for.
"""

from __future__ import annotations

import sys
import weakref
import zlib

import numpy as np

from taskbfs.errors import EmptyGraphError, InvalidParameterError, InvalidVertexError
from taskbfs.graph._graph import Graph

#: Key of the converted graph in a networkx graph's ``__networkx_cache__``.
NX_CACHE_KEY = "taskbfs"


# ----------------------------------------------------------------------------- relabelling
def relabel(*columns):
    """Number arbitrary vertex ids 0..k-1.

    Parameters
    ----------
    *columns : array_like
        Vertex ids (strings, integers, tuples, any hashable), e.g. an edge list's source
        and target columns.

    Returns
    -------
    ids : list of ndarray of int64
        One array per column: the vertex number of each id.
    labels : ndarray
        ``labels[v]`` is the id numbered ``v``: the distinct ids in sorted order, or in
        order of first appearance when they cannot be sorted (mixed types).

    Examples
    --------
    >>> from taskbfs.graph import relabel
    >>> (src, dst), labels = relabel(["b", "a"], ["c", "b"])
    >>> src.tolist(), dst.tolist(), labels.tolist()
    ([1, 0], [2, 1], ['a', 'b', 'c'])
    """
    arrays = [_label_array(c) for c in columns]
    lengths = np.cumsum([a.size for a in arrays])[:-1]
    every = np.concatenate(arrays) if arrays else np.empty(0, dtype=object)
    try:
        labels, inverse = np.unique(every, return_inverse=True)
    except TypeError:  # ids of mixed, unorderable types: number them as they come
        index: dict = {}
        inverse = np.fromiter((index.setdefault(v, len(index)) for v in every.tolist()),
                              dtype=np.int64, count=every.size)
        labels = _object_array(list(index))
    ids = np.split(inverse.astype(np.int64).reshape(-1), lengths)
    return ids, labels


def _label_array(values) -> np.ndarray:
    """``values`` as a 1-d array of ids (a tuple stays one id, not a row)."""
    if hasattr(values, "to_numpy"):  # pandas Series / Index
        values = values.to_numpy()
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values
    items = list(values)
    if len({type(v) for v in items}) > 1 or any(isinstance(v, tuple) for v in items):
        return _object_array(items)  # numpy would make 1 and "1" one string, a tuple a row
    arr = np.asarray(items)
    return arr if arr.ndim == 1 else _object_array(items)


def _object_array(items: list) -> np.ndarray:
    return np.fromiter(items, dtype=object, count=len(items))


# ----------------------------------------------------------------------------- scipy
def from_scipy(matrix, directed: bool | None = None) -> Graph:
    """Build a graph from a square scipy.sparse adjacency matrix or array.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array, shape (n, n)
        Any format. Entry ``(i, j)`` stored means an arc ``i -> j``; values are ignored
        (BFS has no weights) and explicitly stored zeros are arcs, as in
        ``scipy.sparse.csgraph``.
    directed : bool, optional
        None (default): undirected when the matrix's pattern is symmetric, else directed
        (either way BFS follows exactly the stored arcs). False: the arcs are symmetrised
        (an edge either way, as ``csgraph``'s ``directed=False``). True: kept as given.

    Returns
    -------
    Graph

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> import taskbfs as tb
    >>> A = sp.csr_array(([1, 1], ([0, 1], [1, 2])), shape=(3, 3))
    >>> tb.Graph.from_scipy(A)
    Graph(directed, num_vertices=3, num_edges=2)
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise InvalidParameterError(
            f"expected a scipy.sparse matrix or array, got {type(matrix).__name__} "
            "(for a dense array use scipy.sparse.csr_array(A))"
        )
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InvalidParameterError(f"an adjacency matrix must be square, got shape {matrix.shape}")
    csr = matrix.tocsr()
    if directed is None:
        directed = not _symmetric_pattern(csr)
    return Graph.from_csr(csr.indptr, csr.indices, directed=bool(directed))


def _symmetric_pattern(csr) -> bool:
    import scipy.sparse as sp

    pattern = sp.csr_array((np.ones(csr.indices.size, dtype=np.int8), csr.indices, csr.indptr),
                           shape=csr.shape)
    pattern.sum_duplicates()
    pattern.data[:] = 1
    return (pattern != pattern.T).nnz == 0


# ----------------------------------------------------------------------------- networkx
def from_networkx(G) -> Graph:
    """Build a graph from a networkx graph (Graph, DiGraph, MultiGraph or MultiDiGraph).

    A DiGraph becomes a directed graph. Nodes that are exactly the integers 0..n-1 keep
    their numbers; any other nodes are numbered in ``G.nodes`` order and kept as
    ``labels`` (``g.labels[v]`` is the node numbered ``v``, ``g.vertex(node)`` its
    number). Edge attributes and parallel edges are dropped; self-loops too.

    Examples
    --------
    >>> import networkx as nx
    >>> import taskbfs as tb
    >>> g = tb.Graph.from_networkx(nx.Graph([("a", "b"), ("b", "c")]))
    >>> g.labels.tolist(), g.vertex("c")
    (['a', 'b', 'c'], 2)
    >>> sorted(g.to_networkx().edges)
    [('a', 'b'), ('b', 'c')]
    """
    if not _is_networkx(G):
        raise InvalidParameterError(f"expected a networkx graph, got {type(G).__name__}")
    nodes = list(G)
    n = len(nodes)
    if n == 0:
        raise EmptyGraphError("the networkx graph has no nodes")
    m = G.number_of_edges()
    if all(type(v) is int or isinstance(v, np.integer) for v in nodes) and \
            min(nodes) == 0 and max(nodes) == n - 1:  # the nodes are 0..n-1 (they are distinct)
        src = np.fromiter((u for u, _ in G.edges()), dtype=np.int64, count=m)
        dst = np.fromiter((v for _, v in G.edges()), dtype=np.int64, count=m)
        labels = None
    else:
        index = {v: i for i, v in enumerate(nodes)}
        src = np.fromiter((index[u] for u, _ in G.edges()), dtype=np.int64, count=m)
        dst = np.fromiter((index[v] for _, v in G.edges()), dtype=np.int64, count=m)
        labels = _object_array(nodes)
    graph = Graph.from_edges(src, dst, num_vertices=n, directed=G.is_directed(), relabel=False)
    graph.labels = labels
    return graph


def to_networkx(graph: Graph):
    """The graph as a networkx ``Graph`` (``DiGraph`` when directed), every vertex a node.

    Nodes are the vertex numbers, or ``graph.labels`` when the graph has them (a graph
    from :func:`from_networkx` comes back with its own nodes).
    """
    import networkx as nx

    out = nx.DiGraph() if graph.directed else nx.Graph()
    names = range(graph.num_vertices) if graph.labels is None else graph.labels.tolist()
    out.add_nodes_from(names)
    src = np.repeat(np.arange(graph.num_vertices, dtype=np.int64), graph.degrees())
    dst = graph.indices.astype(np.int64)
    if not graph.directed:  # each edge is stored both ways: add it once
        keep = src < dst
        src, dst = src[keep], dst[keep]
    if graph.labels is None:
        out.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    else:
        out.add_edges_from(zip(graph.labels[src].tolist(), graph.labels[dst].tolist(), strict=True))
    return out


def _is_networkx(obj) -> bool:
    nx = sys.modules.get("networkx")  # an object cannot be a networkx graph before it is imported
    return nx is not None and isinstance(obj, nx.Graph)


# ----------------------------------------------------------------------------- pandas
def from_pandas(df, source: str = "source", target: str = "target", directed: bool = False,
                num_vertices: int | None = None, relabel: bool | None = None) -> Graph:
    """Build a graph from a pandas DataFrame of edges, one row per edge.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        A dask DataFrame's two columns are computed here (a :class:`Graph` is in this
        process's memory; :meth:`DistributedGraph.from_dask` builds one on the workers).
    source, target : str
        Column names of the edge endpoints (networkx's ``from_pandas_edgelist`` defaults).
    directed : bool, default False
    num_vertices : int, optional
        Only for integer ids kept as given (see :meth:`Graph.from_edges`).
    relabel : bool, optional
        None: integer ids are kept as given, any others (strings, ...) are numbered
        0..k-1 and kept as ``labels``; True: always number them; False: never.

    Examples
    --------
    >>> import pandas as pd
    >>> import taskbfs as tb
    >>> df = pd.DataFrame({"source": ["x", "y"], "target": ["y", "z"]})
    >>> g = tb.Graph.from_pandas(df)
    >>> g.num_vertices, g.labels.tolist()
    (3, ['x', 'y', 'z'])
    """
    columns = list(getattr(df, "columns", ()))
    if not hasattr(df, "columns"):
        raise InvalidParameterError(f"expected a pandas DataFrame of edges, got {type(df).__name__}")
    for role, name in (("source", source), ("target", target)):
        if name not in columns:
            raise InvalidParameterError(
                f"the DataFrame has no {role} column {name!r} (columns: {columns}); "
                f"name it with {role}=..."
            )
    if hasattr(df, "__dask_graph__"):
        df = df[[source, target]].compute()
    src, dst = df[source], df[target]
    missing = src.isna().to_numpy() | dst.isna().to_numpy()
    if missing.any():
        row = df.index[int(np.flatnonzero(missing)[0])]
        row = row.item() if hasattr(row, "item") else row
        raise InvalidVertexError(f"edge at row {row!r} has a missing {source!r} or {target!r} vertex")
    return Graph.from_edges(src.to_numpy(), dst.to_numpy(), num_vertices=num_vertices,
                            directed=directed, relabel=relabel)


# ----------------------------------------------------------------------------- bfs input
_scipy_graphs: dict = {}  # id(matrix) -> (weakref to it, fingerprint, Graph)


def as_graph(obj) -> Graph:
    """``obj`` as a :class:`Graph`: a Graph as it is; a scipy.sparse matrix or a networkx
    graph converted once and kept with the object (see the module docstring)."""
    if isinstance(obj, Graph):
        return obj
    if _is_networkx(obj):
        cache = getattr(obj, "__networkx_cache__", None)
        graph = cache.get(NX_CACHE_KEY) if cache is not None else None
        if graph is None:
            graph = from_networkx(obj)
            if cache is not None:
                cache[NX_CACHE_KEY] = graph
        return graph
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(obj):
        return _cached_scipy(obj)
    raise InvalidParameterError(
        f"graph must be a taskbfs.Graph, a scipy.sparse matrix or a networkx graph, "
        f"got {type(obj).__name__}"
    )


def _cached_scipy(matrix) -> Graph:
    key, stamp = id(matrix), _fingerprint(matrix)
    entry = _scipy_graphs.get(key)
    if entry is not None and entry[0]() is matrix and entry[1] == stamp:
        return entry[2]
    graph = from_scipy(matrix)
    ref = weakref.ref(matrix, lambda _, key=key: _scipy_graphs.pop(key, None))
    _scipy_graphs[key] = (ref, stamp, graph)
    return graph


def _fingerprint(matrix) -> tuple:
    """What a matrix's arcs depend on: its shape, format and a CRC-32 of its structure
    arrays (the values are not arcs' business)."""
    if matrix.format in ("csr", "csc", "bsr"):
        arrays = (matrix.indptr, matrix.indices)
    elif matrix.format == "coo":
        arrays = tuple(matrix.coords)
    else:  # lil, dok, dia: their structure is Python objects; compare its CSR
        csr = matrix.tocsr()
        arrays = (csr.indptr, csr.indices)
    crc = 0
    for arr in arrays:
        crc = zlib.crc32(np.ascontiguousarray(arr), crc)
    return (type(matrix), matrix.format, matrix.shape, tuple(a.size for a in arrays), crc)


__all__ = ["NX_CACHE_KEY", "as_graph", "from_networkx", "from_pandas", "from_scipy", "relabel",
           "to_networkx"]
