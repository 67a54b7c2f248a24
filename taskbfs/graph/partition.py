"""Cutting the vertex space into T tasks: ``partition(graph, tasks) -> Partition``.

Encoding
--------
A :class:`Partition` is ``bounds``, an int64 array of T + 1 strictly increasing vertex ids
from 0 to ``num_vertices``: task ``t`` owns the contiguous range
``[bounds[t], bounds[t + 1])`` (paper 000, Alg. 2: tasks are vertex ranges, and T is a free
parameter independent of the number of devices). Every range is non-empty.

A task's slice of the CSR (``Partition.slice``) is what the kernels take:
``(indptr_local int64[hi - lo + 1] starting at 0, indices_local, lo, hi)``, where
``indices_local`` is a view of the graph's ``indices`` (global neighbour ids).
"""

from __future__ import annotations

import numpy as np

from taskbfs import config
from taskbfs.errors import InvalidParameterError, InvalidVertexError
from taskbfs.graph._graph import Graph

__all__ = ["Partition", "partition", "partition_indptr", "BALANCES"]

#: Accepted values of ``balance``.
BALANCES = ("edges", "vertices")


class Partition:
    """T contiguous, non-empty vertex ranges covering ``0 .. num_vertices - 1``.

    Parameters
    ----------
    bounds : array_like of int
        T + 1 strictly increasing ids, ``bounds[0] == 0`` and ``bounds[-1] == num_vertices``.

    Attributes
    ----------
    bounds : ndarray of int64, shape (T + 1,), read-only
    num_tasks : int
        T.
    num_vertices : int
        ``bounds[-1]``.

    Examples
    --------
    >>> from taskbfs.graph import Partition
    >>> p = Partition([0, 3, 5, 9])
    >>> p.num_tasks, p.range(1), p.owner(4), p.sizes.tolist()
    (3, (3, 5), 1, [3, 2, 4])
    >>> p.owner([0, 8]).tolist()
    [0, 2]
    """

    def __init__(self, bounds):
        b = np.array(bounds, dtype=np.int64, copy=True)
        if b.ndim != 1 or b.size < 2:
            raise InvalidParameterError("bounds must be a 1-D array of at least 2 ids (T + 1)")
        if b[0] != 0:
            raise InvalidParameterError(f"bounds must start at 0, got {int(b[0])}")
        if np.any(np.diff(b) <= 0):
            t = int(np.flatnonzero(np.diff(b) <= 0)[0])
            raise InvalidParameterError(
                f"bounds must be strictly increasing (every range non-empty); task {t} is "
                f"[{int(b[t])}, {int(b[t + 1])})"
            )
        b.setflags(write=False)
        self.bounds = b

    # ------------------------------------------------------------------ shape
    @property
    def num_tasks(self) -> int:
        """Number of tasks T."""
        return int(self.bounds.size - 1)

    @property
    def num_vertices(self) -> int:
        """Number of vertices covered (``bounds[-1]``)."""
        return int(self.bounds[-1])

    @property
    def sizes(self) -> np.ndarray:
        """Vertices per task (int64 array of length T)."""
        return np.diff(self.bounds)

    def __len__(self) -> int:
        return self.num_tasks

    def __iter__(self):
        """Yield ``(lo, hi)`` for each task in order."""
        for t in range(self.num_tasks):
            yield int(self.bounds[t]), int(self.bounds[t + 1])

    def __eq__(self, other) -> bool:
        if not isinstance(other, Partition):
            return NotImplemented
        return np.array_equal(self.bounds, other.bounds)

    __hash__ = None  # mutable-looking container of an array; compare by value only

    def __repr__(self) -> str:
        return f"Partition(num_tasks={self.num_tasks}, num_vertices={self.num_vertices})"

    # ------------------------------------------------------------------ queries
    def range(self, t: int) -> tuple[int, int]:
        """The vertex range ``(lo, hi)`` (``hi`` excluded) of task ``t``."""
        t = self._check_task(t)
        return int(self.bounds[t]), int(self.bounds[t + 1])

    def owner(self, v):
        """The task owning vertex ``v``: an int for an int, an int64 array for an array.

        Raises :class:`InvalidVertexError` if any id is outside ``0 .. num_vertices - 1``.
        """
        arr = np.asarray(v)
        if arr.dtype.kind not in "iu":
            raise InvalidVertexError(f"vertex ids must be integers, got {v!r}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.num_vertices):
            bad = arr[(arr < 0) | (arr >= self.num_vertices)].flat[0]
            raise InvalidVertexError(f"vertex {int(bad)} is outside 0..{self.num_vertices - 1}")
        tasks = np.searchsorted(self.bounds, arr.astype(np.int64, copy=False), side="right") - 1
        return int(tasks) if arr.ndim == 0 else tasks.astype(np.int64, copy=False)

    def arc_counts(self, graph: Graph) -> np.ndarray:
        """Arcs (stored out-edges) per task: the work that ``balance="edges"`` evens out."""
        self._check_graph(graph)
        return np.diff(graph.indptr[self.bounds])

    def slice(self, graph: Graph, t: int):
        """Task ``t``'s piece of the CSR, as the kernels take it.

        Returns
        -------
        indptr_local : ndarray of int64, shape (hi - lo + 1,)
            A new array starting at 0: the out-neighbours of vertex ``lo + i`` are
            ``indices_local[indptr_local[i]:indptr_local[i + 1]]``.
        indices_local : ndarray
            A view of ``graph.indices`` (global neighbour ids).
        lo, hi : int
            The task's vertex range.

        Examples
        --------
        >>> from taskbfs.graph import Graph, Partition
        >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3])
        >>> ip, ix, lo, hi = Partition([0, 2, 4]).slice(g, 1)
        >>> ip.tolist(), ix.tolist(), lo, hi
        ([0, 2, 3], [1, 3, 2], 2, 4)
        """
        self._check_graph(graph)
        lo, hi = self.range(t)
        start, stop = int(graph.indptr[lo]), int(graph.indptr[hi])
        indptr_local = graph.indptr[lo : hi + 1] - start
        return indptr_local, graph.indices[start:stop], lo, hi

    # ------------------------------------------------------------------ checks
    def _check_task(self, t) -> int:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise InvalidParameterError(f"task must be an integer, got {t!r}")
        if not 0 <= t < self.num_tasks:
            raise InvalidParameterError(f"task {t} does not exist (valid: 0..{self.num_tasks - 1})")
        return int(t)

    def _check_graph(self, graph: Graph) -> None:
        if graph.num_vertices != self.num_vertices:
            raise InvalidParameterError(
                f"this partition covers {self.num_vertices} vertices but the graph has "
                f"{graph.num_vertices}"
            )


def partition(graph: Graph, tasks: int, balance: str | None = None) -> Partition:
    """Cut ``graph``'s vertices into ``tasks`` contiguous, non-empty ranges.

    Parameters
    ----------
    graph : Graph
    tasks : int
        T, in ``1 .. graph.num_vertices``.
    balance : {"edges", "vertices"}, default ``taskbfs.balance``
        ``"vertices"``: ranges of (almost) equal vertex counts. ``"edges"``: ranges of
        about equal stored arcs (cut points found by ``searchsorted`` on the cumulative
        degree, ``graph.indptr``), then nudged apart so that no range is empty. A vertex
        of huge degree cannot be split, so its task may exceed ``num_arcs / T``.

    Returns
    -------
    Partition

    Raises
    ------
    InvalidParameterError
        ``tasks`` is not an integer in ``1 .. num_vertices``, or ``balance`` is unknown.

    Examples
    --------
    >>> from taskbfs.graph import Graph, partition
    >>> star = Graph.from_edges([0, 0, 0, 0, 0], [1, 2, 3, 4, 5])
    >>> partition(star, 3, balance="vertices").bounds.tolist()
    [0, 2, 4, 6]
    >>> partition(star, 3, balance="edges").bounds.tolist()
    [0, 1, 3, 6]
    """
    return partition_indptr(graph.indptr, tasks, balance)


def partition_indptr(indptr: np.ndarray, tasks: int, balance: str | None = None) -> Partition:
    """:func:`partition` of the graph whose CSR offsets are ``indptr`` (all that it
    reads of the graph; a graph built in pieces has it from their degrees)."""
    n = indptr.size - 1
    tasks = _check_tasks(tasks, n)
    if balance is None:
        balance = config.get("balance")
    if balance == "vertices":
        bounds = (np.arange(tasks + 1, dtype=np.int64) * n) // tasks
    elif balance == "edges":
        bounds = _edge_balanced_bounds(indptr, tasks)
    else:
        raise InvalidParameterError(
            f"balance must be one of {', '.join(repr(b) for b in BALANCES)}, got {balance!r}"
        )
    return Partition(bounds)


def _edge_balanced_bounds(indptr: np.ndarray, tasks: int) -> np.ndarray:
    """Cut where the cumulative arc count crosses k * arcs / T, then make ranges non-empty."""
    n = indptr.size - 1
    targets = np.arange(tasks + 1, dtype=np.float64) * (float(indptr[-1]) / tasks)
    above = np.minimum(np.searchsorted(indptr, targets, side="left"), n)
    below = np.maximum(above - 1, 0)
    nearer_below = (targets - indptr[below]) < (indptr[above] - targets)
    bounds = np.where(nearer_below, below, above).astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return _spread(bounds, n)


def _spread(bounds: np.ndarray, n: int) -> np.ndarray:
    """Nearest strictly increasing bounds from 0 to n: with ``c = bounds - k`` clipped to
    ``0 .. n - T`` and made non-decreasing, ``c + k`` rises by at least 1 per task."""
    tasks = bounds.size - 1
    k = np.arange(tasks + 1, dtype=np.int64)
    c = np.clip(bounds - k, 0, n - tasks)
    c = np.maximum.accumulate(c)
    return c + k


def _check_tasks(tasks, n: int) -> int:
    if isinstance(tasks, (bool, np.bool_)) or not isinstance(tasks, (int, np.integer)):
        raise InvalidParameterError(f"tasks must be an integer in 1..{n}, got {tasks!r}")
    if not 1 <= tasks <= n:
        raise InvalidParameterError(
            f"tasks must be in 1..{n} (the number of vertices), got {tasks}"
        )
    return int(tasks)
