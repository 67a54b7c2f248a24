"""``BFSResult``: what :func:`taskbfs.search` returns.

Its tables (``trace``, ``levels``) are built when first read, from the records the search
collected: a search pays nothing for tables nobody looks at. A search of a graph kept on
the workers (:class:`~taskbfs.placed.graph.DistributedGraph`) leaves its distances and
parents there too: :meth:`BFSResult.to_dask` reads them as dask arrays,
:meth:`BFSResult.to_dask_dataframe` as a table, and the attributes gather them on first
read; a search asked for ``device_result=True`` leaves them in a GPU's memory
(:meth:`BFSResult.to_cupy`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd


class BFSResult:
    """Result of one breadth-first search.

    Attributes
    ----------
    source : int or ndarray of int64
        The source's id; the sources' ids (sorted, distinct) when several were given.
    sources : ndarray of int64
        The sources' ids, sorted and distinct (one for a single source).
    depth_limit : int or None
        The search's ``depth_limit`` (None: none).
    reverse : bool
        Whether the search followed arcs backwards (``reverse=True``).
    distances : ndarray of int32 (int64 from 2^31 vertices on)
        Hops from the nearest source; -1 for unreached vertices (the dtype: :func:`result_dtype`). Gathered from the workers on
        first read when the search left them there (see :meth:`to_dask`).
    parents : ndarray, the dtype of ``distances``
        BFS tree (Graph500 convention): ``parents[s] == s`` for every source, -1 unreached.
    trace : pandas.DataFrame
        One row per executed task: level, task, lo, hi, direction, size (the size it was
        placed by, :func:`~taskbfs.search.state.step_sizes`), edges_examined, found, device, worker, thread,
        start, stop (seconds since the call started, on the clock of ``elapsed``), attempt (which attempt of the
        search ran it: above 1, the search lost a worker and ran again), resumed_from
        (the level that attempt started from: 0, or the last level an earlier attempt
        completed when it resumed that one, docs/resume.md). Built when first read.
    levels : pandas.DataFrame
        One row per level: level, direction, frontier_size, frontier_edges,
        edges_examined, tasks, tasks_cpu, tasks_gpu, start, stop, barrier_seconds.
        Built when first read.
    elapsed : float
        Seconds from the call's entry to its return with the result in the caller's
        hands, less the time the call took to start or reach its runtime (the embedded
        cluster's start in a process's first call, ``Runtime.start_seconds``: not the
        search's): the user's stopwatch, and what ``teps`` divides by.
    search_seconds : float
        Of ``elapsed``, the span from the first task's submission until every vertex's
        distance and parent existed on the workers.
    assembly_seconds : float
        Of ``search_seconds``, the span of the tasks that wrote distances and parents at
        the end (first start to last stop).
    assembly_d2h_bytes : int
        Bytes those tasks copied from a GPU: the result, when the search kept it in GPU
        memory (the steps' own moves are in ``trace``).
    traversed_edges : int
        Edges of the traversed component, counted as Graph500 does.
    strategy, direction : str
    num_tasks : int
    placements : list of dict
        The scheduler plugin's decision for each task.
    attempts : int
        How many times the search started (1 unless it lost a worker,
        ``taskbfs.search.retries-on-worker-loss``).
    lost_workers : list of str
        The workers the earlier attempts lost.
    resumed_from : list of int
        Per attempt after the first that resumed an earlier one (not from level 0): the
        level it resumed from.
    labels : ndarray or None
        The graph's vertex labels (``Graph.labels``) when it has them: ``labels[v]`` is
        vertex ``v``'s id; :meth:`distance_dict` and :meth:`parent_dict` use them.
    """

    labels: np.ndarray | None = None
    depth_limit: int | None = None
    reverse: bool = False
    attempts: int = 1
    lost_workers: tuple = ()
    resumed_from: tuple = ()

    def __init__(self, source: int, distances: np.ndarray, parents: np.ndarray,
                 trace: pd.DataFrame | Callable[[], pd.DataFrame],
                 levels: pd.DataFrame | Callable[[], pd.DataFrame], elapsed: float,
                 traversed_edges: int, strategy: str, direction: str, num_tasks: int,
                 placements: list | Callable[[], list] | None = None,
                 search_seconds: float | None = None,
                 assembly_seconds: float | Callable[[], float] = 0.0, assembly_d2h_bytes: int = 0, kept=None,
                 bounds: np.ndarray | None = None):
        self.sources = np.atleast_1d(np.asarray(source, dtype=np.int64))
        self.source = int(self.sources[0]) if np.ndim(source) == 0 else self.sources
        self._distances = distances
        self._parents = parents
        self._kept = kept  # KeptResult: distances and parents still on the workers
        self._bounds = bounds
        self._trace = trace
        self._levels = levels
        self.elapsed = elapsed
        self.traversed_edges = traversed_edges
        self.strategy = strategy
        self.direction = direction
        self.num_tasks = num_tasks
        self._placements = placements if placements is not None else []
        self.search_seconds = elapsed if search_seconds is None else search_seconds
        self._assembly_seconds = assembly_seconds
        self.assembly_d2h_bytes = assembly_d2h_bytes

    @property
    def distances(self) -> np.ndarray:
        """Hops from the source (:func:`result_dtype`; -1 unreached); gathered on first
        read if kept (:class:`~taskbfs.errors.WorkerLostError` within seconds when a
        worker that kept a piece of it left the cluster and the piece cannot be made
        again: :meth:`~taskbfs.placed.kept.KeptResult.gather`)."""
        self._bring_home()
        return self._distances

    @distances.setter
    def distances(self, value) -> None:
        self._distances, self._kept = value, None

    @property
    def parents(self) -> np.ndarray:
        """The BFS tree (:func:`result_dtype`; ``parents[source] == source``, -1
        unreached)."""
        self._bring_home()
        return self._parents

    @parents.setter
    def parents(self, value) -> None:
        self._parents, self._kept = value, None

    @property
    def on_workers(self) -> bool:
        """Whether distances and parents are still only on the workers."""
        return self._distances is None and self._kept is not None

    def to_dask(self):
        """``(distances, parents)`` as dask arrays.

        For a search of a :class:`~taskbfs.DistributedGraph` they are backed by futures
        on the workers that hold them (one chunk per task's vertex range when the search
        ran as one task, per assembly slice when its levels were dispatched) and nothing
        is gathered: compute them on the runtime's client (a Client you made is the
        default one; else ``rt.client.compute(x)`` or ``with rt.client.as_current():``).
        For any other search they wrap the arrays in this process, chunked by the
        tasks' vertex ranges.

        Examples
        --------
        >>> import taskbfs as tb
        >>> r = tb.bfs(tb.Graph.from_edges([0, 1, 3], [1, 2, 4]), 0, tasks=2)
        >>> d, p = r.to_dask()
        >>> int((d >= 0).sum().compute())                    # vertices reached
        3
        """
        import dask.array as da

        if self._kept is not None:
            return self._kept.to_dask()
        chunks = (tuple(np.diff(self._bounds).tolist()),) if self._bounds is not None else -1
        return da.from_array(self.distances, chunks=chunks), da.from_array(self.parents,
                                                                           chunks=chunks)

    def to_pandas(self) -> pd.DataFrame:
        """The reached vertices as a table: columns ``vertex``, ``distance``, ``parent``
        (one row per reached vertex, in vertex order; the sources are their own parents),
        vertices and parents as labels when the graph has them.

        Examples
        --------
        >>> import taskbfs as tb
        >>> r = tb.bfs(tb.Graph.from_edges([0, 1, 3], [1, 2, 4]), 0, tasks=2)
        >>> r.to_pandas()
           vertex  distance  parent
        0       0         0       0
        1       1         1       0
        2       2         2       1
        """
        return _reached_frame(self.distances, self.parents, 0, self.labels)

    def to_dask_dataframe(self):
        """:meth:`to_pandas` as a dask DataFrame, one partition per vertex range (the
        search's tasks', or the pieces a result kept on the workers is in: then each
        partition is made on the worker that holds its piece and nothing is gathered;
        compute it on the runtime's client, as :meth:`to_dask`'s arrays).

        Examples
        --------
        >>> import taskbfs as tb
        >>> r = tb.bfs(tb.Graph.from_edges([0, 1, 3], [1, 2, 4]), 0, tasks=2)
        >>> r.to_dask_dataframe().compute()["distance"].tolist()
        [0, 1, 2]
        """
        import dask.dataframe as dd

        if self._kept is not None:
            return self._kept.to_dask_dataframe(_reached_frame)
        frame = self.to_pandas()
        parts = max(1, min(len(frame), len(self._bounds) - 1 if self._bounds is not None else 1))
        return dd.from_pandas(frame, npartitions=parts, sort=False)

    def to_cupy(self):
        """``(distances, parents)`` as CuPy arrays in GPU memory: a search with
        ``device_result=True`` left them on its GPU worker and they are handed over as
        they are (the very arrays when that worker runs in this process); any other
        result is copied to this process's GPU.

        Raises
        ------
        DeviceUnavailableError
            CuPy is not installed here (or the CUDA simulator is on).
        """
        from taskbfs.kernels.gpu import require_cupy

        cupy = require_cupy("to_cupy()")
        if self._distances is None and self._kept is not None and self._kept.on_device:
            return self._kept.gather_device()
        return cupy.asarray(self.distances), cupy.asarray(self.parents)

    def _bring_home(self) -> None:
        if self._distances is None and self._kept is not None:
            self._distances, self._parents = self._kept.gather()

    @property
    def trace(self) -> pd.DataFrame:
        """One row per step task (see the class docstring); built on first read."""
        if callable(self._trace):
            self._trace = self._trace()
        return self._trace

    @property
    def placements(self) -> list:
        """The scheduler plugin's placement decisions for the search's tasks; fetched with
        the trace's records on first read."""
        if callable(self._placements):
            self._placements = self._placements()
        return self._placements

    @property
    def assembly_seconds(self) -> float:
        """Of ``search_seconds``, the span of the tasks that wrote distances and parents
        (from the trace's records: read on first use)."""
        if callable(self._assembly_seconds):
            self._assembly_seconds = self._assembly_seconds()
        return self._assembly_seconds

    @property
    def levels(self) -> pd.DataFrame:
        """One row per level (see the class docstring); built on first read."""
        if callable(self._levels):
            self._levels = self._levels()
        return self._levels

    @property
    def teps(self) -> float:
        """Traversed edges per second of ``elapsed`` (the whole call)."""
        return self.traversed_edges / self.elapsed if self.elapsed > 0 else float("inf")

    @property
    def mteps(self) -> float:
        """Millions of traversed edges per second."""
        return self.teps / 1e6

    @property
    def num_levels(self) -> int:
        """Number of BFS levels (the deepest distance + 1)."""
        return int(self.distances.max()) + 1

    @property
    def reached(self) -> int:
        """Number of vertices reached from the sources (themselves included)."""
        return int(np.count_nonzero(self.distances >= 0))

    def distance_dict(self) -> dict:
        """``{vertex: distance}`` over the reached vertices, keyed by label when the graph
        has labels (as networkx's ``single_source_shortest_path_length``)."""
        reached = np.flatnonzero(self.distances >= 0)
        return dict(zip(self._names(reached), self.distances[reached].tolist(), strict=True))

    def parent_dict(self) -> dict:
        """``{vertex: parent}`` over the reached vertices (a source is its own parent),
        keyed by and naming labels when the graph has them."""
        reached = np.flatnonzero(self.parents >= 0)
        return dict(zip(self._names(reached), self._names(self.parents[reached]), strict=True))

    def _names(self, vertices: np.ndarray) -> list:
        return (vertices if self.labels is None else self.labels[vertices]).tolist()

    def __repr__(self) -> str:
        if self.on_workers:  # printing it gathers nothing
            return (f"BFSResult(source={self.source}, on the workers, elapsed={self.elapsed:.4f}s, "
                    f"MTEPS={self.mteps:.1f}, strategy={self.strategy!r})")
        return (
            f"BFSResult(source={self.source}, reached={self.reached}, levels={self.num_levels}, "
            f"elapsed={self.elapsed:.4f}s, MTEPS={self.mteps:.1f}, strategy={self.strategy!r})"
        )


def _reached_frame(distances, parents, lo: int, labels=None) -> pd.DataFrame:
    """The rows ``vertex, distance, parent`` of the reached vertices among ``distances``
    and ``parents`` (those of vertices ``lo ..``), vertex and parent as ``labels`` when
    given."""
    reached = np.flatnonzero(np.asarray(distances) >= 0)
    vertex, parent = reached + lo, np.asarray(parents)[reached]
    if labels is not None:
        vertex, parent = labels[vertex], labels[parent]
    return pd.DataFrame({"vertex": vertex, "distance": np.asarray(distances)[reached],
                         "parent": parent})
