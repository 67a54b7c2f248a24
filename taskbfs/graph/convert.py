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
    These functions call :class:`Graph`'s own constructors, which take their edge
    arrays from :mod:`taskbfs.graph._pydata`. scipy.sparse: every stored entry is an arc
    ``row -> column`` (its value is ignored; explicitly stored zeros are arcs too, as in
    ``scipy.sparse.csgraph``). networkx: nodes in ``G.nodes`` order. :func:`as_graph` converts a scipy matrix or networkx
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

from taskbfs.errors import InvalidParameterError
from taskbfs.graph._graph import Graph
from taskbfs.graph._pydata import is_networkx, relabel, to_networkx

#: Key of the converted graph in a networkx graph's ``__networkx_cache__``.
NX_CACHE_KEY = "taskbfs"


# ----------------------------------------------------------------------------- builders
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
    return Graph.from_scipy(matrix, directed=directed)


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
    return Graph.from_networkx(G)


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
    return Graph.from_pandas(df, source=source, target=target, directed=directed,
                             num_vertices=num_vertices, relabel=relabel)


# ----------------------------------------------------------------------------- bfs input
_scipy_graphs: dict = {}  # id(matrix) -> (weakref to it, fingerprint, Graph)


def as_graph(obj) -> Graph:
    """``obj`` as a :class:`Graph`: a Graph as it is; a scipy.sparse matrix or a networkx
    graph converted once and kept with the object (see the module docstring)."""
    if isinstance(obj, Graph):
        return obj
    if is_networkx(obj):
        cache = getattr(obj, "__networkx_cache__", None)
        graph = cache.get(NX_CACHE_KEY) if cache is not None else None
        if graph is None:
            graph = Graph.from_networkx(obj)
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
    graph = Graph.from_scipy(matrix)
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
