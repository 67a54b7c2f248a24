"""Small top-down levels of a search run as one task, many per compiled call.

Returns
    :func:`run_small_levels` (an included task of the search): the frontier after the
    levels it ran, and a :class:`LevelBlock` describing them; :class:`LevelSummaries`,
    the search's summaries with such blocks expanded only when read.
Approach
    A deep graph (a path, a mesh, a road network) has thousands to millions of levels of
    a few frontier vertices each. Inside the search's one task a level still costs host
    work per step and per barrier, which is the whole search time
    of such a graph. While the frontier is top-down, on the CPU and has at most
    :data:`COMPILED_LEVEL_EDGES` edges, the levels run in
    :func:`taskbfs.kernels.levels.small_top_down_levels` instead: the same steps, the
    same barrier, the same counts, with no host work per level. Each level still has its
    summary (built when read) and its steps their rows in the trace (one included task,
    ``bfs_levels``, ran them: its worker, thread, start and stop).
Encoding
    The levels' accepted pairs travel to the result assembly as one
    :class:`~taskbfs.search.state.Discoveries` whose ``depths`` give each pair's distance.
"""

from __future__ import annotations

import bisect
import itertools
import time
from dataclasses import dataclass, replace

import numpy as np

from taskbfs.kernels.bitmap import empty_bitmap
from taskbfs.kernels.levels import BOTTOM_UP_NEXT, FULL, small_top_down_levels, ticks_to_times
from taskbfs.kernels.merge import frontier_bitmap
from taskbfs.search.level_tasks import TaskLists
from taskbfs.search.state import (
    BOTTOM_UP,
    TOP_DOWN,
    Discoveries,
    Frontier,
    LevelSummary,
    SwitchRule,
    Tally,
    step_sizes,
)

#: Trace name of the included task that runs a block of compiled levels.
LEVELS_NAME = "bfs_levels"
_LEVELS_PER_CALL = 1 << 14
#: Most frontier edges of a level the compiled loop runs: beyond it a level's steps pay
#: for their host work (read by the warm-up, which turns the loop off to load the steps).
COMPILED_LEVEL_EDGES = 4096


@dataclass
class LevelBlock:
    """What one call of the compiled level loop ran: levels ``first + 1 .. first +
    len(level_stats)`` were made (the summary of level ``first`` opened it).

    Attributes
    ----------
    first : int
    direction : str
        The direction of the last level made (top-down, or bottom-up when the rule turns).
    level_stats : ndarray of int64, shape (L, 4)
        Per level made: frontier size, frontier edges, unexplored edges, reached.
    step_stats : ndarray of int64, shape (S, 5)
        Per step run: level, task, size, edges examined, found.
    level_times : ndarray of float64, shape (L, 3)
        Per level made (row i: made by the steps of level ``first + i``), ``time.time()``
        when those steps started, when its barrier started and when it ended.
    last_counts : ndarray of int64
        The last level's ``frontier_counts`` (per task).
    last_sizes : ndarray of int64
        The last level's ``step_sizes`` (per task).
    start, stop : float
        Wall-clock span of the call (``time.time()``).
    rule : SwitchRule
        The search's (for the ``step_sizes`` of the levels before the last).
    """

    first: int
    direction: str
    level_stats: np.ndarray
    step_stats: np.ndarray
    level_times: np.ndarray
    last_counts: np.ndarray
    last_sizes: np.ndarray
    start: float
    stop: float
    rule: SwitchRule

    def summary(self, level: int, num_tasks: int) -> LevelSummary:
        """The summary of ``level`` (one the block made), as the barrier would make it."""
        i = level - self.first - 1
        stats = self.level_stats[i]
        last = i == len(self.level_stats) - 1
        before = self._steps_of(level - 1)  # the steps this level's barrier merged
        examined = np.zeros(num_tasks, dtype=np.int64)
        found = np.zeros(num_tasks, dtype=np.int64)
        examined[before[:, 1]] = before[:, 3]
        found[before[:, 1]] = before[:, 4]
        if last:
            counts, sizes = self.last_counts, self.last_sizes
        else:
            counts = np.zeros(num_tasks, dtype=np.int64)
            edges = np.zeros(num_tasks, dtype=np.int64)
            mine = self._steps_of(level)
            counts[mine[:, 1]] = mine[:, 2]
            edges[mine[:, 1]] = mine[:, 3]  # a top-down step reads its frontier's arcs
            sizes = step_sizes(TOP_DOWN, counts, edges, self.rule)
        return LevelSummary(
            level=level, direction=self.direction if last else TOP_DOWN, frontier_counts=counts,
            step_sizes=sizes,
            frontier_size=int(stats[0]), frontier_edges=int(stats[1]), edges_examined=examined,
            unexplored_edges=int(stats[2]), found=found,
            barrier_start=float(self.level_times[i, 1]),
            barrier_stop=float(self.level_times[i, 2]), reached=int(stats[3]))

    def _steps_of(self, level: int) -> np.ndarray:
        """The rows of ``step_stats`` of ``level`` (recorded in level order)."""
        first, stop = np.searchsorted(self.step_stats[:, 0], [level, level + 1])
        return self.step_stats[first:stop]

    @property
    def last_level(self) -> int:
        return self.first + len(self.level_stats)


class LevelSummaries:
    """A search's level summaries, level 0 first (a sequence): those of compiled blocks
    (:class:`LevelBlock`) are built when read."""

    def __init__(self, num_tasks: int):
        self.num_tasks = num_tasks
        self._items: list = []  # LevelSummary, or None: a block's, not built yet
        self.blocks: list[LevelBlock] = []
        self._block_at: list[int] = []  # the position in _items of each block's first level
        #: ``(level, table)`` per level whose steps ran on the CPU worker's threads
        #: (:func:`taskbfs.search.level_tasks.step_table`): the trace's rows of those steps.
        self.step_tables: list[tuple[int, np.ndarray]] = []

    def append(self, summary: LevelSummary) -> None:
        self._items.append(summary)

    def add_steps(self, level: int, table: np.ndarray) -> None:
        """Keep the step table of ``level`` (its rows are made when the trace is read)."""
        self.step_tables.append((level, table))

    def add_block(self, block: LevelBlock) -> None:
        self.blocks.append(block)
        self._block_at.append(len(self._items))
        # no Python object per level: a deep graph's blocks hold a million of them
        self._items.extend(itertools.repeat(None, block.last_level - block.first))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        item = self._items[index]
        if item is None:  # a block's, built once, when first read
            index = range(len(self._items))[index]  # a negative one counts from the end
            which = bisect.bisect_right(self._block_at, index) - 1
            block, at = self.blocks[which], self._block_at[which]
            item = self._items[index] = block.summary(block.first + 1 + index - at,
                                                      self.num_tasks)
        return item

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def outside_blocks(summaries):
    """The summaries that no compiled block made (those of the levels the level loop ran;
    a compiled block's are built only when read one by one)."""
    made = np.zeros(len(summaries), dtype=bool)
    for block in getattr(summaries, "blocks", ()):
        made[block.first + 1 : block.last_level + 1] = True
    return (summaries[level] for level in np.flatnonzero(~made).tolist())


#: Per-level columns of :func:`summary_columns` (int64 unless said).
SUMMARY_COLUMNS = ("frontier_size", "frontier_edges", "unexplored_edges", "edges_examined",
                   "h2d_bytes", "d2h_bytes", "kernel_ns")


def summary_columns(summaries) -> dict[str, np.ndarray]:
    """The summaries as columns, one entry per level (index = level): those of
    :data:`SUMMARY_COLUMNS` (``edges_examined``: the total the level's barrier merged),
    ``direction`` (object), ``barrier_start`` and ``barrier_stop`` (float). A compiled
    block's levels come from its arrays at once, not one summary at a time (a deep graph
    has hundreds of thousands of them)."""
    n = len(summaries)
    cols = {name: np.zeros(n, dtype=np.int64) for name in SUMMARY_COLUMNS}
    cols["direction"] = np.full(n, TOP_DOWN, dtype=object)
    cols["barrier_start"] = np.zeros(n)
    cols["barrier_stop"] = np.zeros(n)
    for block in getattr(summaries, "blocks", ()):
        made = slice(block.first + 1, block.last_level + 1)
        for k, name in enumerate(("frontier_size", "frontier_edges", "unexplored_edges")):
            cols[name][made] = block.level_stats[:, k]
        cols["direction"][block.last_level] = block.direction
        # the barrier of level L merged the steps of level L - 1
        np.add.at(cols["edges_examined"], block.step_stats[:, 0] + 1, block.step_stats[:, 3])
        cols["barrier_start"][made] = block.level_times[:, 1]
        cols["barrier_stop"][made] = block.level_times[:, 2]
    for summary in outside_blocks(summaries):
        level = summary.level
        device = np.asarray(summary.device_stats, dtype=np.int64).reshape(-1, 4).sum(axis=0)
        values = (summary.frontier_size, summary.frontier_edges, summary.unexplored_edges,
                  int(np.sum(summary.edges_examined)), *device[1:].tolist())
        for name, value in zip(SUMMARY_COLUMNS, values, strict=True):
            cols[name][level] = value
        cols["direction"][level] = summary.direction
        cols["barrier_start"][level] = summary.barrier_start
        cols["barrier_stop"][level] = summary.barrier_stop
    return cols


def small_levels_apply(frontier: Frontier, summary: LevelSummary, cpu_max) -> bool:
    """Whether the compiled loop runs the level ``summary`` opens: a top-down level of at
    most :data:`COMPILED_LEVEL_EDGES` frontier edges, all its steps on the CPU (its
    ``gpu_steps`` say none on the GPU), and the placement rule known to the loop as
    numbers (``cpu_max``, :func:`cpu_sizes`, not None)."""
    return (cpu_max is not None and frontier.direction == TOP_DOWN
            and frontier.bounds is not None and not summary.gpu_steps.any()
            and 0 < summary.frontier_edges <= COMPILED_LEVEL_EDGES)


def cpu_sizes(placement, rule: SwitchRule) -> np.ndarray | None:
    """Per task, the most frontier vertices of a step the runtime's placement rule runs on
    the CPU (:meth:`~taskbfs.runtime.policy.Placement.largest_cpu_size`, ∞ on a CPU
    worker, turned from the scaled sizes of :func:`~taskbfs.search.state.step_sizes` into
    the task's own vertices): the numbers the compiled loop places its steps by. None
    when the policy does not give them (a user policy without ``largest_cpu_size``): then
    no level is compiled."""
    sizes = placement.largest_cpu_sizes(len(rule.task_vertices))
    if sizes is None:
        return None
    # ceil(work * n / range) > λ exactly when work > floor(floor(λ) * range / n)
    largest = np.floor(sizes)
    finite = np.isfinite(largest)
    own = np.full(largest.size, np.inf)
    own[finite] = (largest[finite].astype(np.int64) * rule.range_vertices[finite]
                   // rule.num_vertices)
    return own


def run_small_levels(frontier: Frontier, lists: TaskLists, degrees: np.ndarray,
                     cpu_max: np.ndarray):
    """Run the small top-down levels from ``frontier`` (see the module docstring);
    ``cpu_max``: per task, the largest step the policy runs on the CPU (:func:`cpu_sizes`).

    Returns ``(next frontier, block)``: the frontier of the first level that is not
    small (or empty, or bottom-up), holding the block's pairs in ``included``.
    """
    start = time.time()
    bounds = frontier.bounds
    progress, tally = frontier.progress, frontier.tally
    rule = tally.rule
    num_tasks = bounds.size - 1
    current = frontier.vertices
    edges = _edges(degrees, current)
    # no frontier has more edges than are left: the buffers need no more room than that
    max_edges = min(COMPILED_LEVEL_EDGES, tally.unexplored_edges + edges,
                    _edges_within(cpu_max, rule.mean_degree, edges))
    vertices = np.empty(max(max_edges, current.size), dtype=np.int64)
    vertices[: current.size] = current
    offsets = frontier.offsets.astype(np.int64, copy=True)
    unvisited = progress.unvisited_per_task.astype(np.int64, copy=True)
    state = np.array([frontier.level, int(offsets[-1]), edges, tally.unexplored_edges,
                      tally.frontier_size], dtype=np.int64)
    auto = rule.mode == "auto"
    indptrs, indices = lists.get()
    steps_cap = max(_LEVELS_PER_CALL, 2 * min(num_tasks, current.size))
    # the loop stops once its level buffer is full: at the depth limit, if there is one
    rows = _LEVELS_PER_CALL if rule.depth_limit is None else min(
        _LEVELS_PER_CALL, rule.depth_limit - frontier.level)
    while True:
        level_stats = np.empty((rows, 4), dtype=np.int64)
        level_ticks = np.empty((rows, 3), dtype=np.int64)
        step_stats = np.empty((steps_cap, 5), dtype=np.int64)
        pairs = np.empty((_LEVELS_PER_CALL + 4 * max_edges, 3), dtype=np.int64)
        limits = np.zeros(3, dtype=np.int64)
        clock = np.zeros(2, dtype=np.int64)
        called = time.time()
        status = small_top_down_levels(indptrs, indices, bounds, degrees, frontier.visited_bits,
                                       vertices, offsets, unvisited, state, max_edges, cpu_max,
                                       auto, rule.alpha, level_stats, level_ticks, step_stats,
                                       pairs, limits, clock)
        returned = time.time()
        if status != FULL or limits[0] > 0:
            break
        steps_cap *= 2  # one level has more steps than the buffer holds
    if rule.depth_limit is not None and state[0] >= rule.depth_limit:
        _end_at_limit(level_stats[limits[0] - 1], state)
        offsets[:] = 0
    n_new = int(state[1])
    direction = BOTTOM_UP if status == BOTTOM_UP_NEXT and n_new else TOP_DOWN
    if direction == TOP_DOWN:
        next_vertices, bits = vertices[:n_new].copy(), None
        counts = np.diff(offsets)
        arcs = np.concatenate(([0], np.cumsum(degrees[next_vertices])))
        sizes = step_sizes(TOP_DOWN, counts, arcs[offsets[1:]] - arcs[offsets[:-1]], rule)
    else:
        bits = empty_bitmap(degrees.size)
        frontier_bitmap(vertices[:n_new], bits)
        next_vertices, counts = np.empty(0, dtype=np.int64), unvisited.copy()
        sizes = step_sizes(BOTTOM_UP, counts, None, rule)
        offsets = np.zeros(num_tasks + 1, dtype=np.int64)
    found = pairs[: limits[2]]
    frontier.included.append((frontier.level, Discoveries(
        -1, found[:, 0].copy(), found[:, 1].copy(), 0, depths=found[:, 2].copy())))
    nxt = Frontier(int(state[0]), direction, next_vertices, offsets, bits, frontier.visited_bits,
                   bounds, replace(progress, unvisited_per_task=unvisited), frontier.included,
                   tally=Tally(rule, n_new, int(state[3])))
    block = LevelBlock(frontier.level, direction, level_stats[: limits[0]].copy(),
                       step_stats[: limits[1]].copy(),
                       ticks_to_times(level_ticks[: limits[0]], clock, called, returned),
                       counts.astype(np.int64),
                       sizes.astype(np.int64), start, time.time(), rule)
    return nxt, block


def _end_at_limit(last: np.ndarray, state: np.ndarray) -> None:
    """Make the last level the loop ran (its ``level_stats`` row and ``state``) end the
    search, as :meth:`~taskbfs.search.state.SwitchRule.summary` ends it at the depth limit:
    an empty frontier, whose edges stay unexplored."""
    last[2] += last[1]
    last[0] = last[1] = 0
    state[3] += state[2]
    state[1] = state[2] = 0


def _edges_within(cpu_max: np.ndarray, mean_degree: float, first_edges: int) -> int:
    """The most frontier edges a level of the compiled loop may have so that every step the
    loop runs is one the placement rule puts on the CPU by its arcs too: ``cpu_max`` (the
    rule's numbers, :func:`cpu_sizes`) turned from sizes into arcs, as
    :func:`~taskbfs.search.state.step_sizes` counts arcs in vertices of the mean degree (the
    loop itself compares vertex counts with ``cpu_max``); at least the first level's
    (``first_edges``, placed already)."""
    placed = cpu_max[cpu_max >= 0]  # a task whose every step runs on the GPU has none here
    smallest = float(placed.min()) if placed.size else np.inf
    if not np.isfinite(smallest):
        return np.iinfo(np.int64).max
    return max(int(first_edges), int(smallest * mean_degree))


def _edges(degrees: np.ndarray, vertices: np.ndarray) -> int:
    return int(degrees[vertices].sum()) if vertices.size else 0
