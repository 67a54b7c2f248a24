"""BFS state and the level barrier, as they live on the workers.

Returns
    :class:`BFSState` (visited bitmap, parents, distances: one object, updated in place by
    the barrier), :class:`Frontier` (what the step tasks of a level read) and
    :class:`LevelSummary` (the few numbers the client needs per level).
Approach
    The level barrier of the paper's Algorithm 2, plus the direction-optimizing switch
    rule of Beamer et al. (TOTEM paper, Sec. 2.2) decided here from counts the kernels
    return: go bottom-up when the frontier's edges m_f exceed m_u / α (m_u: edges of
    unvisited vertices); back to top-down when the frontier falls below n / β vertices.
Encoding
    Frontiers are per-task vertex lists (top-down) or one bitmap (bottom-up), whichever
    the next level's direction reads; see :mod:`taskbfs.kernels.bitmap`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from taskbfs import config
from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.direction import AUTO, BOTTOM_UP, TOP_DOWN, concat, switch_direction
from taskbfs.kernels.merge import accept_owned, frontier_bitmap, merge_discoveries
from taskbfs.runtime import publish

DIRECTIONS = (AUTO, TOP_DOWN, BOTTOM_UP)


@dataclass
class Frontier:
    """The frontier of one level, as the step tasks read it.

    Attributes
    ----------
    level : int
        Distance of the frontier's vertices from the source.
    direction : str
        ``"top-down"`` or ``"bottom-up"``: how the next step runs.
    vertices : ndarray of int64
        Frontier grouped by owning task (top-down levels).
    offsets : ndarray of int64
        T + 1 offsets into ``vertices``.
    bits : ndarray of uint64 or None
        The frontier as a bitmap (bottom-up levels only).
    visited_bits : ndarray of uint64
        Visited set at the start of the level (read-only for the tasks).
    """

    level: int
    direction: str
    vertices: np.ndarray
    offsets: np.ndarray
    bits: np.ndarray | None
    visited_bits: np.ndarray

    def of_task(self, t: int) -> np.ndarray:
        """Task ``t``'s frontier vertices."""
        return self.vertices[self.offsets[t] : self.offsets[t + 1]]


@dataclass
class LevelSummary:
    """What the client needs to launch the next level; small, gathered every level."""

    level: int
    direction: str
    frontier_counts: np.ndarray  # per task: frontier vertices (td) or unvisited vertices (bu)
    frontier_size: int
    frontier_edges: int
    edges_examined: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    found: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    barrier_start: float = 0.0
    barrier_stop: float = 0.0
    #: One row ``(task, h2d_bytes, d2h_bytes, kernel_ns)`` per step task of the level that
    #: reported device work (GPU tasks); all integers, empty on CPU-only levels.
    device_stats: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))

    def to_message(self) -> dict:
        """Plain-data form (lists, numbers) for :func:`taskbfs.runtime.publish`."""
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_message(cls, message: dict) -> LevelSummary:
        """Inverse of :meth:`to_message`."""
        kwargs = {}
        for f in fields(cls):
            value = message[f.name]
            # msgpack may turn lists into tuples on the way (across processes)
            is_array = isinstance(value, (list, tuple))
            kwargs[f.name] = np.asarray(value, dtype=np.int64) if is_array else value
        return cls(**kwargs)


@dataclass
class Discoveries:
    """Output of one step task: (vertex, parent) pairs and what the step read."""

    task: int
    vertices: np.ndarray
    parents: np.ndarray
    edges_examined: int
    #: Device work of a GPU step (0 on the CPU): bytes host→device and device→host this
    #: task moved, and its kernels' device time (CUDA events).
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    kernel_seconds: float = 0.0


@dataclass
class BFSState:
    """The whole traversal state, owned by the barrier."""

    bounds: np.ndarray
    degrees: np.ndarray
    visited_bits: np.ndarray
    parents: np.ndarray
    distances: np.ndarray
    unvisited_per_task: np.ndarray
    unexplored_edges: int
    direction_mode: str
    alpha: float
    beta: float
    num_vertices: int

    @property
    def num_tasks(self) -> int:
        return self.bounds.size - 1


def init_state(degrees, *, bounds, source, direction_mode, alpha=config.DO_ALPHA, beta=config.DO_BETA):
    """Create the state of a BFS from ``source`` (runs on a worker).

    Returns ``(frontier, state)`` (``outs=["frontier", "state"]``) and publishes the
    level-0 :class:`LevelSummary` to the client.
    """
    n = degrees.size
    state = BFSState(
        bounds=bounds,
        degrees=degrees,
        visited_bits=empty_bitmap(n),
        parents=np.full(n, -1, dtype=np.int64),
        distances=np.full(n, -1, dtype=np.int64),
        unvisited_per_task=np.diff(bounds).astype(np.int64),
        unexplored_edges=int(degrees.sum()),
        direction_mode=direction_mode,
        alpha=float(alpha),
        beta=float(beta),
        num_vertices=n,
    )
    start = time.time()
    src = np.array([source], dtype=np.int64)
    disc = Discoveries(-1, src, src.copy(), 0)
    frontier, summary = _advance(state, [disc], level=0, direction=TOP_DOWN, start=start)
    publish(summary.to_message())
    return frontier, state


def barrier(*args, level: int, direction: str):
    """The level barrier: merge the step tasks' discoveries into the state.

    Called as ``barrier(*discoveries, state)`` (the data directory passes ``ins`` then
    the ``inout``); mutates ``state`` in place, returns ``(frontier, state)`` and
    publishes the level's :class:`LevelSummary` to the client.
    """
    *discoveries, state = args
    frontier, summary = _advance(state, discoveries, level=level + 1, direction=direction,
                                 start=time.time())
    publish(summary.to_message())
    return frontier, state


def _advance(state: BFSState, discoveries, level: int, direction: str, start: float):
    num_tasks = state.num_tasks
    edges_examined = np.zeros(num_tasks, dtype=np.int64)
    found = np.zeros(num_tasks, dtype=np.int64)
    for d in discoveries:
        if d.task >= 0:
            edges_examined[d.task] = d.edges_examined
            found[d.task] = d.vertices.size
    device_stats = np.array(
        [(d.task, d.h2d_bytes, d.d2h_bytes, round(d.kernel_seconds * 1e9)) for d in discoveries
         if d.task >= 0 and (d.h2d_bytes or d.d2h_bytes or d.kernel_seconds)],
        dtype=np.int64).reshape(-1, 4)
    if direction == BOTTOM_UP and all(d.task >= 0 for d in discoveries):
        new_frontier, offsets, task_edges = _accept_bottom_up(state, discoveries, level)
    else:
        new_frontier, offsets, task_edges = _merge_top_down(state, discoveries, level)
    n_new = new_frontier.size
    counts = np.diff(offsets)
    state.unvisited_per_task -= counts
    frontier_edges = int(task_edges.sum())
    state.unexplored_edges -= frontier_edges
    next_direction = _next_direction(state, direction, n_new, frontier_edges)
    bits = None
    task_sizes = counts
    if next_direction == BOTTOM_UP and n_new:
        bits = empty_bitmap(state.num_vertices)
        frontier_bitmap(new_frontier, bits)
        task_sizes = state.unvisited_per_task.copy()
        # Bottom-up steps read only the bitmap: ship it alone, not the vertex lists too.
        new_frontier = new_frontier[:0]
        offsets = np.zeros_like(offsets)
    frontier = Frontier(level, next_direction, new_frontier, offsets, bits, state.visited_bits)
    summary = LevelSummary(
        level=level,
        direction=next_direction,
        frontier_counts=task_sizes,
        frontier_size=int(n_new),
        frontier_edges=frontier_edges,
        edges_examined=edges_examined,
        found=found,
        barrier_start=start,
        barrier_stop=time.time(),
        device_stats=device_stats,
    )
    return frontier, summary


def _merge_top_down(state: BFSState, discoveries, level: int):
    """Deduplicate (first seen wins) and bucket by owner: top-down discoveries may name a
    vertex several times and belong to any task."""
    cand_v = concat([d.vertices for d in discoveries])
    cand_p = concat([d.parents for d in discoveries])
    new_frontier = np.empty(cand_v.size, dtype=np.int64)
    offsets = np.empty(state.num_tasks + 1, dtype=np.int64)
    task_edges = np.empty(state.num_tasks, dtype=np.int64)
    n_new = merge_discoveries(cand_v, cand_p, level, state.visited_bits, state.parents,
                              state.distances, state.bounds, state.degrees,
                              new_frontier, offsets, task_edges)
    return new_frontier[:n_new], offsets, task_edges


def _accept_bottom_up(state: BFSState, discoveries, level: int):
    """Bottom-up discoveries are unique and owned by the task that found them: record them
    as they are, task by task (no deduplication, no bucketing)."""
    sizes = np.zeros(state.num_tasks, dtype=np.int64)
    for d in discoveries:
        sizes[d.task] = d.vertices.size
    offsets = np.zeros(state.num_tasks + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    ordered = sorted(discoveries, key=lambda d: d.task)
    new_frontier = concat([d.vertices for d in ordered]).astype(np.int64, copy=False)
    parents_of = concat([d.parents for d in ordered])
    task_edges = np.empty(state.num_tasks, dtype=np.int64)
    accept_owned(new_frontier, parents_of, offsets, level, state.visited_bits, state.parents,
                 state.distances, state.degrees, task_edges)
    return new_frontier, offsets, task_edges


def _next_direction(state: BFSState, current: str, frontier_size: int, frontier_edges: int) -> str:
    """Beamer's switch rule (or the fixed direction the caller asked for)."""
    return switch_direction(state.direction_mode, current, frontier_size, frontier_edges,
                            state.unexplored_edges, state.num_vertices, state.alpha, state.beta)


def final_arrays(state: BFSState):
    """``(distances, parents)`` of a finished traversal (runs on a worker)."""
    return state.distances, state.parents
