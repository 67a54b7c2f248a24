"""taskbfs — task-based heterogeneous (CPU + GPU) breadth-first search on Dask.

After Munguía, Bader & Ayguadé, "Task-based Parallel Breadth-First Search in
Heterogeneous Environments" (HiPC 2012): the graph is cut into T vertex-range tasks; every
BFS level runs one task per range with work, each on a CPU or a GPU worker chosen by a
scheduler plugin from the task's frontier size and the threshold λ, then a barrier.

Contents
--------
=========================  ===================================================
``Graph``                  CSR graph; ``Graph.from_edges(src, dst, ...)``, ``from_scipy``,
                           ``from_networkx`` / ``to_networkx``, ``from_pandas``
``relabel``                arbitrary vertex ids (strings, ...) numbered 0..k-1, with labels
``read_graph``             .mtx, SNAP edge lists (.txt/.el/.csv), .npz; files on workers
``kronecker``              Graph500 Kronecker generator (``kronecker_edges``); with
                           ``runtime=``, built on the workers
``DistributedGraph``       a graph kept in vertex ranges on the workers
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
>>> g = tb.kronecker(scale=8, edgefactor=8, seed=1)
>>> hub = int(g.degrees().argmax())
>>> r = tb.bfs(g, hub, tasks=2)             # on the embedded default cluster
>>> levels = tb.validate(g, hub, r.parents)  # raises tb.ValidationError if a rule fails
>>> bool((levels == r.distances).all()), int(r.distances.max())
(True, 3)
"""

import importlib as _importlib

from taskbfs.errors import (
    DeviceUnavailableError,
    EmptyGraphError,
    GraphFormatError,
    InsufficientMemoryError,
    InvalidGraphError,
    InvalidParameterError,
    InvalidVertexError,
    SearchTimeoutError,
    TaskBFSError,
    TaskExecutionError,
    ValidationError,
    WorkerLostError,
)

# The rooms are imported on first use (PEP 562), not here: ``import taskbfs.runtime`` runs
# this file, and must not pull in the BFS, its numba kernels or pandas.
#: Public name -> the module that defines it.
_LAZY = {
    "BFSResult": "taskbfs.search",
    "bfs": "taskbfs.search",
    "default_tasks": "taskbfs.search",
    "DistributedGraph": "taskbfs.placed.graph",
    "Graph": "taskbfs.graph",
    "Partition": "taskbfs.graph",
    "kronecker": "taskbfs._entry",
    "kronecker_edges": "taskbfs.graph",
    "partition": "taskbfs.graph",
    "read_graph": "taskbfs._entry",
    "relabel": "taskbfs.graph",
    "save_graph": "taskbfs.graph",
    "search_keys": "taskbfs.graph500",
    "teps_statistics": "taskbfs.graph500",
    "traversed_edges": "taskbfs.graph500",
    "validate": "taskbfs.graph500",
    "Runtime": "taskbfs.runtime",
}
#: Submodules reachable as attributes (``tb.trace``, ``tb.config``), imported on first use.
_SUBMODULES = ("cli", "config", "dashboard", "errors", "graph", "graph500", "kernels",
               "runtime", "search", "trace")


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(_importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    # Private helpers (the aliased imports among them) stay out of tab completion.
    public = {name for name in globals() if not name.startswith("_")}
    return sorted(public | set(__all__) | set(_SUBMODULES) | {"__version__"})


# The documented defaults of the ``taskbfs.*`` settings, registered with ``dask.config`` as
# soon as the package is imported: ``dask.config`` then answers for them.
_importlib.import_module(f"{__name__}.config")

__version__ = "0.1.0"

__all__ = [
    "BFSResult",
    "DeviceUnavailableError",
    "DistributedGraph",
    "EmptyGraphError",
    "Graph",
    "GraphFormatError",
    "InvalidGraphError",
    "InvalidParameterError",
    "InvalidVertexError",
    "Partition",
    "Runtime",
    "SearchTimeoutError",
    "TaskBFSError",
    "TaskExecutionError",
    "ValidationError",
    "WorkerLostError",
    "InsufficientMemoryError",
    "bfs",
    "default_tasks",
    "kronecker",
    "kronecker_edges",
    "partition",
    "read_graph",
    "relabel",
    "save_graph",
    "search_keys",
    "teps_statistics",
    "trace",
    "traversed_edges",
    "validate",
]
