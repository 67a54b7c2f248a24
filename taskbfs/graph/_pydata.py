"""The PyData world's objects as edge arrays, and a graph back as networkx: no ``Graph`` here.

Returns
    :func:`relabel` -> ids 0..k-1 and their labels; :func:`scipy_arcs` -> CSR arrays;
    :func:`networkx_edges` and :func:`pandas_edges` -> edge arrays; :func:`to_networkx`
    -> a networkx graph. :class:`~taskbfs.graph.Graph`'s constructors and
    :mod:`taskbfs.graph.convert` build graphs from these.
Approach
    scipy.sparse: every stored entry is an arc ``row -> column`` (its value is ignored;
    explicitly stored zeros are arcs too, as in ``scipy.sparse.csgraph``). networkx:
    nodes in ``G.nodes`` order. networkx, pandas and scipy are imported only when asked for.
"""

from __future__ import annotations

import sys

import numpy as np

from taskbfs.errors import EmptyGraphError, InvalidParameterError, InvalidVertexError

__all__ = ["is_networkx", "networkx_edges", "pandas_edges", "relabel", "scipy_arcs",
           "to_networkx"]


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
def scipy_arcs(matrix, directed: bool | None = None):
    """``(indptr, indices, directed)`` of a square scipy.sparse matrix or array, checked
    (see :func:`taskbfs.graph.from_scipy`; ``directed`` None: whether the pattern is
    not symmetric)."""
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
    return csr.indptr, csr.indices, bool(directed)


def _symmetric_pattern(csr) -> bool:
    import scipy.sparse as sp

    pattern = sp.csr_array((np.ones(csr.indices.size, dtype=np.int8), csr.indices, csr.indptr),
                           shape=csr.shape)
    pattern.sum_duplicates()
    pattern.data[:] = 1
    return (pattern != pattern.T).nnz == 0


# ----------------------------------------------------------------------------- networkx
def networkx_edges(G):
    """``(src, dst, n, directed, labels)`` of a networkx graph (see
    :func:`taskbfs.graph.from_networkx`): int64 endpoints, labels None when the nodes
    are the integers 0..n-1."""
    if not is_networkx(G):
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
    return src, dst, n, G.is_directed(), labels


def to_networkx(graph):
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


def is_networkx(obj) -> bool:
    """Whether ``obj`` is a networkx graph (networkx is not imported to tell)."""
    nx = sys.modules.get("networkx")  # an object cannot be a networkx graph before it is imported
    return nx is not None and isinstance(obj, nx.Graph)


# ----------------------------------------------------------------------------- pandas
def pandas_edges(df, source: str = "source", target: str = "target"):
    """``(src, dst)`` arrays of the ``source`` and ``target`` columns of a pandas or dask
    DataFrame of edges (a dask one computed here), checked for missing vertices (see
    :func:`taskbfs.graph.from_pandas`)."""
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
    return src.to_numpy(), dst.to_numpy()
