"""Graph data: the CSR ``Graph``, readers and writers, the Kronecker generator, partitions.

No Dask and no kernels here.
"""

from taskbfs.graph._graph import Graph, index_dtype

__all__ = ["Graph", "index_dtype"]
