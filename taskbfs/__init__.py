"""taskbfs — task-based heterogeneous (CPU + GPU) breadth-first search on Dask.

After Munguía, Bader & Ayguadé, "Task-based Parallel Breadth-First Search in
Heterogeneous Environments" (HiPC 2012): the graph is cut into T vertex-range tasks; every
BFS level runs one task per range with work, each on a CPU or a GPU worker chosen by a
scheduler plugin from the task's frontier size and the threshold λ, then a barrier.

Contents
--------
=========================  ===================================================
``Graph``                  CSR graph; ``Graph.from_edges(src, dst, ...)``
``read_graph``             .mtx, SNAP edge lists (.txt/.el/.csv), .npz
``kronecker``              Graph500 Kronecker generator (``kronecker_edges``)
``partition``              T vertex ranges (``Partition``)
``bfs``                    the task-based BFS → ``BFSResult`` (``default_tasks``: its T)
``validate``               Graph500 validation rules (raises ``ValidationError``)
``search_keys``            Graph500 search keys; ``teps_statistics``
``Runtime``                the cluster: address, Client, or embedded default
``trace``                  trace tables, timeline / frontier plots, Paraver and Chrome export
``TaskBFSError``           base of every error taskbfs raises on purpose
=========================  ===================================================

Examples
--------
>>> import taskbfs as tb
>>> g = tb.kronecker(scale=10, seed=1)                      # doctest: +SKIP
>>> r = tb.bfs(g, 0, tasks=8)                               # doctest: +SKIP
>>> tb.validate(g, 0, r.parents)                            # doctest: +SKIP
"""

from taskbfs import trace
from taskbfs.bfs import BFSResult, bfs, default_tasks
from taskbfs.errors import (
    DeviceUnavailableError,
    EmptyGraphError,
    GraphFormatError,
    InvalidParameterError,
    InvalidVertexError,
    TaskBFSError,
    TaskExecutionError,
    ValidationError,
)
from taskbfs.graph import (
    Graph,
    Partition,
    kronecker,
    kronecker_edges,
    partition,
    read_graph,
    save_graph,
)
from taskbfs.graph500 import search_keys, teps_statistics, traversed_edges, validate
from taskbfs.runtime import Runtime

__version__ = "0.1.0"

__all__ = [
    "BFSResult",
    "DeviceUnavailableError",
    "EmptyGraphError",
    "Graph",
    "GraphFormatError",
    "InvalidParameterError",
    "InvalidVertexError",
    "Partition",
    "Runtime",
    "TaskBFSError",
    "TaskExecutionError",
    "ValidationError",
    "bfs",
    "default_tasks",
    "kronecker",
    "kronecker_edges",
    "partition",
    "read_graph",
    "save_graph",
    "search_keys",
    "teps_statistics",
    "trace",
    "traversed_edges",
    "validate",
]
