"""Graph data: the CSR ``Graph``, readers and writers, the Kronecker generator, partitions.

No Dask and no kernels here.

=====================  ===============================================================
``Graph``              CSR adjacency (``indptr`` int64, ``indices`` int32/int64);
                       ``Graph.from_edges``, ``Graph.from_csr``, ``Graph.save``
``index_dtype``        dtype of ``indices`` for a vertex count
``read_graph``         MatrixMarket (.mtx), SNAP edge lists (.txt/.el/.csv/.tsv), .npz
``save_graph``         write .npz (or .mtx / edge-list text)
``from_scipy``         a square scipy.sparse matrix (``Graph.from_scipy``)
``from_networkx``      a networkx graph, non-integer nodes kept as ``labels``;
                       ``to_networkx`` back
``from_pandas``        a DataFrame of edges (``source`` / ``target`` columns)
``relabel``            arbitrary vertex ids numbered 0..k-1, and their labels
``as_graph``           a Graph, scipy matrix or networkx graph as a Graph (cached)
``kronecker``          Graph500 Kronecker graph (undirected ``Graph``)
``kronecker_edges``    its edge list, whole or one independently generated chunk
``num_chunks``         number of such chunks
``Partition``          T contiguous non-empty vertex ranges (``bounds`` int64[T + 1])
``partition``          cut a graph into T ranges, balanced by edges or by vertices
=====================  ===============================================================
"""

from taskbfs.graph._csr import index_dtype
from taskbfs.graph._graph import Graph
from taskbfs.graph.convert import (
    as_graph,
    from_networkx,
    from_pandas,
    from_scipy,
    relabel,
    to_networkx,
)
from taskbfs.graph.io import read_graph, save_graph
from taskbfs.graph.kronecker import kronecker, kronecker_edges, num_chunks
from taskbfs.graph.partition import Partition, partition

__all__ = [
    "Graph",
    "index_dtype",
    "as_graph",
    "from_networkx",
    "from_pandas",
    "from_scipy",
    "relabel",
    "to_networkx",
    "read_graph",
    "save_graph",
    "kronecker",
    "kronecker_edges",
    "num_chunks",
    "Partition",
    "partition",
]
