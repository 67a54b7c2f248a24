"""``BFSResult``: what :func:`taskbfs.bfs` returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class BFSResult:
    """Result of one breadth-first search.

    Attributes
    ----------
    source : int
    distances : ndarray of int64
        Hops from the source; -1 for unreached vertices.
    parents : ndarray of int64
        BFS tree (Graph500 convention): ``parents[source] == source``, -1 unreached.
    trace : pandas.DataFrame
        One row per executed task: level, task, lo, hi, direction, size (frontier or
        unvisited vertices it worked on), edges_examined, found, device, worker, thread,
        start, stop (seconds since the search started).
    levels : pandas.DataFrame
        One row per level: level, direction, frontier_size, frontier_edges,
        edges_examined, tasks, tasks_cpu, tasks_gpu, start, stop, barrier_seconds.
    elapsed : float
        Seconds from the first task submission until every range's distances and parents
        exist on the workers (the last level's barrier, then the result assembly).
    assembly_seconds : float
        Of ``elapsed``, the span of the tasks that wrote distances and parents at the end
        (first start to last stop).
    assembly_d2h_bytes : int
        Bytes those tasks copied from a GPU: the result, when the search kept it in GPU
        memory (``config.RESULT_ON_DEVICE``; the steps' own moves are in ``trace``).
    traversed_edges : int
        Edges of the traversed component, counted as Graph500 does.
    strategy, direction : str
    num_tasks : int
    placements : list of dict
        The scheduler plugin's decision for each task.
    """

    source: int
    distances: np.ndarray
    parents: np.ndarray
    trace: pd.DataFrame
    levels: pd.DataFrame
    elapsed: float
    traversed_edges: int
    strategy: str
    direction: str
    num_tasks: int
    placements: list = field(default_factory=list, repr=False)
    assembly_seconds: float = 0.0
    assembly_d2h_bytes: int = 0

    @property
    def teps(self) -> float:
        """Traversed edges per second."""
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
        """Number of vertices reached from the source (itself included)."""
        return int(np.count_nonzero(self.distances >= 0))

    def __repr__(self) -> str:
        return (
            f"BFSResult(source={self.source}, reached={self.reached}, levels={self.num_levels}, "
            f"elapsed={self.elapsed:.4f}s, MTEPS={self.mteps:.1f}, strategy={self.strategy!r})"
        )
